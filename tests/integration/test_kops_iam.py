"""Role kops_iam through real ansible-playbook runs against the emulator's IAM, read back with boto3."""

import json
import os

import pytest
from botocore.exceptions import ClientError

from harness.emulator import ROOT
from harness.playbook import run_playbook

GUIDE_POLICIES = [
    "AmazonEC2FullAccess",
    "AmazonRoute53FullAccess",
    "AmazonS3FullAccess",
    "IAMFullAccess",
    "AmazonVPCFullAccess",
    "AmazonSQSFullAccess",
    "AmazonEventBridgeFullAccess",
]
GUIDE_ARNS = sorted("arn:aws:iam::aws:policy/" + name for name in GUIDE_POLICIES)
ACCOUNT = "123456789012"
LEAST = {
    "kops_iam_policy_mode": "least_privilege",
    "kops_iam_state_store_buckets": ["s3://kopsible-state"],
    "kops_iam_cluster_suffix": ".kopsclustertest.example.org",
}


def role(**role_vars):
    """Tasks: the role with ``role_vars``, then its result under the task name ``result``."""
    return [
        {"name": "iam", "ansible.builtin.include_role": {"name": "kopsible.kops.kops_iam"}, "vars": role_vars},
        {"name": "result", "ansible.builtin.debug": {"var": "kops_iam_result"}},
    ]


def changed(run):
    return run.stats["localhost"]["changed"]


def iam_state(emulator, group="kops", user="kops"):
    """What IAM holds for the operator: group policies and members, the user's groups and key ids."""
    iam = emulator.client("iam")
    state = {}
    try:
        members = iam.get_group(GroupName=group)["Users"]
        state["group_users"] = sorted(u["UserName"] for u in members)
        state["group_policies"] = sorted(p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName=group)["AttachedPolicies"])
    except ClientError as err:
        assert err.response["Error"]["Code"] == "NoSuchEntity"
    try:
        iam.get_user(UserName=user)
        state["user_groups"] = sorted(g["GroupName"] for g in iam.list_groups_for_user(UserName=user)["Groups"])
        state["user_keys"] = sorted(k["AccessKeyId"] for k in iam.list_access_keys(UserName=user)["AccessKeyMetadata"])
    except ClientError as err:
        assert err.response["Error"]["Code"] == "NoSuchEntity"
    state["local_policies"] = sorted(p["Arn"] for p in iam.list_policies(Scope="Local")["Policies"])
    return state


def policy_document(emulator, arn):
    iam = emulator.client("iam")
    version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    return json.loads(document) if isinstance(document, str) else document


def test_guide_policies_then_rerun_is_unchanged(emulator):
    # First through playbooks/kops_iam.yml (endpoint from aws_endpoint_url, as a user passes it).
    names = {"kops_iam_group_name": "kops-operators", "kops_iam_user_name": "kops-ci"}
    run = run_playbook(
        playbook=os.path.join(ROOT, "playbooks", "kops_iam.yml"),
        emulator=emulator,
        extra_vars=dict(names, aws_endpoint_url=emulator.url, aws_region="us-east-1"),
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert iam_state(emulator, "kops-operators", "kops-ci") == {
        "group_users": ["kops-ci"],
        "group_policies": GUIDE_ARNS,
        "user_groups": ["kops-operators"],
        "user_keys": [],
        "local_policies": [],
    }
    result = run.result("Show the result (never the secret)")["kops_iam_result"]
    assert sorted(result["policy_arns"]) == GUIDE_ARNS and result["access_key_ids"] == []

    before = emulator.snapshot()
    again = run_playbook(role(**names), emulator=emulator)
    assert again.rc == 0 and changed(again) == 0
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)


def test_check_mode_writes_nothing(emulator, play):
    emulator.warm()
    before = emulator.snapshot()
    run = play(role(kops_iam_access_key=True, **LEAST), check=True)
    assert run.rc == 0, run.stdout[-3000:]
    assert changed(run) >= 4  # policy, user, group, key
    assert emulator.snapshot() == before, emulator.snapshot_diff(before, emulator.snapshot())


def test_least_privilege_policy_replaces_the_managed_ones(emulator, play):
    assert play(role()).rc == 0
    # Check mode of the switch reports it and writes nothing.
    before = emulator.snapshot()
    switch = play(role(**LEAST), check=True)
    assert switch.rc == 0 and changed(switch) >= 2
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)

    run = play(role(**LEAST))
    assert run.rc == 0, run.stdout[-3000:]
    arn = "arn:aws:iam::%s:policy/kops-operator" % ACCOUNT
    state = iam_state(emulator)
    assert state["group_policies"] == [arn] and state["local_policies"] == [arn]
    assert run.result("result")["kops_iam_result"]["policy_arns"] == [arn]

    document = policy_document(emulator, arn)
    assert len(json.dumps(document, separators=(",", ":"))) <= 6144  # AWS' managed-policy size limit
    statements = {s["Sid"]: s for s in document["Statement"]}
    assert statements["StateStoreBuckets"]["Resource"] == ["arn:aws:s3:::kopsible-state"]
    assert statements["StateStoreObjects"]["Resource"] == ["arn:aws:s3:::kopsible-state/*"]
    assert statements["ClusterRoles"]["Resource"] == [
        "arn:aws:iam::*:role/*.kopsclustertest.example.org",
        "arn:aws:iam::*:instance-profile/*.kopsclustertest.example.org",
    ]
    assert statements["Records"]["Resource"] == ["arn:aws:route53:::hostedzone/*"]
    assert "NewZones" not in statements
    actions = {a for s in document["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    # A few writes of each phase kops goes through (docs: kops-aws-calls; update, rolling-update, delete).
    for action in (
        "ec2:CreateLaunchTemplateVersion",
        "autoscaling:CreateAutoScalingGroup",
        "iam:PassRole",
        "elasticloadbalancing:CreateListener",
        "route53:ChangeResourceRecordSets",
        "sqs:CreateQueue",
        "events:PutRule",
        "s3:PutObject",
        "ec2:TerminateInstances",
        "autoscaling:DeleteAutoScalingGroup",
    ):
        assert action in actions, action
    assert not any(a.endswith(":*") or a == "*" for a in actions)

    before = emulator.snapshot()
    assert changed(play(role(**LEAST))) == 0
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)

    # Narrower zones and zone management: a new policy version, still one policy.
    zoned = play(role(kops_iam_hosted_zone_ids=["/hostedzone/Z0001"], kops_iam_manage_hosted_zones=True, **LEAST))
    assert zoned.rc == 0 and changed(zoned) >= 1
    statements = {s["Sid"]: s for s in policy_document(emulator, arn)["Statement"]}
    assert statements["Records"]["Resource"] == ["arn:aws:route53:::hostedzone/Z0001"]
    assert "route53:DeleteHostedZone" in statements["Records"]["Action"]
    assert statements["NewZones"]["Action"] == "route53:CreateHostedZone"
    assert iam_state(emulator)["group_policies"] == [arn]


def test_access_key_secret_only_in_the_no_log_fact(emulator, play, tmp_path):
    creds = tmp_path / "creds.json"
    save = {"name": "save", "ansible.builtin.copy": {"content": "{{ kops_iam_credentials | to_json }}", "dest": str(creds), "mode": "0600"}, "no_log": True}
    run = play(role(kops_iam_access_key=True) + [save], verbosity=2)
    assert run.rc == 0, run.stdout[-3000:]
    saved = json.loads(creds.read_text())
    keys = iam_state(emulator)["user_keys"]
    assert keys == [saved["access_key_id"]]
    assert len(saved["secret_access_key"]) == 40
    assert saved["secret_access_key"] not in run.stdout + run.stderr
    assert run.result("result")["kops_iam_result"]["access_key_ids"] == keys

    # The user has a key now: no second key, nothing changed, and no credentials this time.
    os.unlink(creds)
    again = play(role(kops_iam_access_key=True) + [{"name": "creds", "ansible.builtin.debug": {"msg": "{{ kops_iam_credentials is defined }}"}}])
    assert again.rc == 0 and changed(again) == 0
    assert iam_state(emulator)["user_keys"] == keys
    assert again.result("creds")["msg"] is False
    assert again.result("result")["kops_iam_result"]["access_key_ids"] == keys


def boto3_client_without_retries(emulator):
    import boto3
    from botocore.config import Config

    from harness.emulator import ACCESS_KEY, SECRET_KEY

    return boto3.session.Session().client(
        "iam",
        endpoint_url=emulator.url,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"max_attempts": 1}),
    )


def test_absent_removes_user_keys_group_and_policy(emulator, play):
    assert play(role(kops_iam_access_key=True, **LEAST)).rc == 0
    assert iam_state(emulator)["user_keys"]
    run = play(role(kops_iam_state="absent"))
    assert run.rc == 0, run.stdout[-3000:]
    assert iam_state(emulator) == {"local_policies": []}
    before = emulator.snapshot()
    again = play(role(kops_iam_state="absent"))
    assert again.rc == 0 and changed(again) == 0
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)


@pytest.mark.parametrize(
    "role_vars, message",
    [
        ({"kops_iam_user_name": "kops operator"}, "kops_iam_user_name: 'kops operator' must be 1-64 characters"),
        ({"kops_iam_user_name": "u" * 65}, "kops_iam_user_name: '%s' must be 1-64 characters" % ("u" * 65)),
        ({"kops_iam_group_name": "g/roup"}, "kops_iam_group_name: 'g/roup' must be"),
        ({"kops_iam_policy_mode": "least_privilege"}, "kops_iam_state_store_buckets: required with kops_iam_policy_mode=least_privilege"),
        ({"kops_iam_policy_mode": "admin"}, "value of kops_iam_policy_mode must be one of: managed, least_privilege, got: admin"),
        ({"kops_iam_partition": "aws-eu"}, "value of kops_iam_partition must be one of: "),
    ],
)
def test_bad_input_fails_naming_the_field_and_writes_nothing(emulator, play, role_vars, message):
    emulator.warm()
    before = emulator.snapshot()
    run = play(role(**role_vars))
    assert run.rc != 0
    failed = [r for _, r in run.results if r.get("failed")]
    assert failed and message in json.dumps(failed), failed
    assert "Traceback" not in run.stdout
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)


def role_in(region, **role_vars):
    """The role's tasks with the AWS modules pointed at ``region`` (module_defaults of a block)."""
    return [{"name": "in " + region, "module_defaults": {"group/aws": {"region": region}}, "block": role(**role_vars)}]


def iam_in(emulator, region):
    return emulator.client("iam", region)


@pytest.mark.parametrize("region, partition", [("cn-northwest-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov"), ("cn-north-1", "aws-cn")])
def test_arns_follow_the_partition_of_the_caller(emulator, play, region, partition):
    """Issue 16 item 6: with no kops_iam_partition, the managed policy ARNs and every ARN of the least-privilege
    policy are of the caller's partition, read back from the emulator's IAM of that partition."""
    run = play(role_in(region))
    assert run.rc == 0, run.stdout[-3000:]
    iam = iam_in(emulator, region)
    attached = sorted(p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"])
    assert attached == sorted("arn:%s:iam::aws:policy/%s" % (partition, name) for name in GUIDE_POLICIES)
    assert [u["UserName"] for u in iam.get_group(GroupName="kops")["Users"]] == ["kops"]
    result = run.result("result")["kops_iam_result"]
    assert result["partition"] == partition and sorted(result["policy_arns"]) == attached
    # Nothing landed in the aws partition (IAM of us-east-1 is another store).
    assert iam_state(emulator) == {"local_policies": []}

    least = play(role_in(region, kops_iam_hosted_zone_ids=["Z0001"], **LEAST))
    assert least.rc == 0, least.stdout[-3000:]
    arn = "arn:%s:iam::%s:policy/kops-operator" % (partition, ACCOUNT)
    assert [p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"]] == [arn]
    version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    document = json.loads(document) if isinstance(document, str) else document
    resources = [r for s in document["Statement"] for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])]
    arns = [r for r in resources if r != "*"]
    assert arns and all(r.startswith("arn:%s:" % partition) for r in arns), arns
    statements = {s["Sid"]: s for s in document["Statement"]}
    assert statements["StateStoreBuckets"]["Resource"] == ["arn:%s:s3:::kopsible-state" % partition]
    assert statements["Records"]["Resource"] == ["arn:%s:route53:::hostedzone/Z0001" % partition]
    assert changed(play(role_in(region, kops_iam_hosted_zone_ids=["Z0001"], **LEAST))) == 0


@pytest.mark.parametrize(
    "role_vars, message",
    [
        ({"kops_iam_partition": "aws"}, "kops_iam_partition: 'aws' but the credentials are of partition aws-cn (arn:aws-cn:sts::123456789012:"),
        (
            {"kops_iam_managed_policies": ["AmazonEC2FullAccess", "arn:aws:iam::aws:policy/IAMFullAccess"]},
            "kops_iam_managed_policies: arn:aws:iam::aws:policy/IAMFullAccess not of partition aws-cn",
        ),
    ],
)
def test_arn_of_another_partition_fails_before_writing(emulator, play, role_vars, message):
    emulator.warm("cn-northwest-1")
    before = emulator.snapshot()
    run = play(role_in("cn-northwest-1", **role_vars))
    assert run.rc != 0
    failed = [r for _, r in run.results if r.get("failed")]
    assert failed and message in json.dumps(failed), failed
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)


def test_managed_failure_leaves_no_half_made_user_or_group(emulator, play):
    """A managed policy IAM does not have fails the group's attach: the user and the group the run made are
    removed again, and the failure names the task and what it removed; a user that was there before stays."""
    missing = {"kops_iam_managed_policies": ["AmazonEC2FullAccess", "AmazonEKSNoSuchPolicy"]}
    emulator.warm("cn-north-1")
    before = emulator.snapshot()
    run = play(role_in("cn-north-1", **missing))
    assert run.rc != 0
    message = json.dumps([r for _, r in run.results if r.get("failed")])
    assert "Group with its policies and the user - kops failed" in message, message
    assert "arn:aws-cn:iam::aws:policy/AmazonEKSNoSuchPolicy" in message
    assert "Removed what this run had made: group kops, user kops" in message
    iam = iam_in(emulator, "cn-north-1")
    assert iam.list_users()["Users"] == [] and iam.list_groups()["Groups"] == []
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)

    # Variant: the user existed before the run (e.g. made by hand): it stays, the group the run made goes.
    iam.create_user(UserName="kops")
    again = play(role_in("cn-north-1", **missing))
    assert again.rc != 0
    assert "Removed what this run had made: group kops (" in json.dumps([r for _, r in again.results if r.get("failed")])
    assert [u["UserName"] for u in iam.list_users()["Users"]] == ["kops"] and iam.list_groups()["Groups"] == []
