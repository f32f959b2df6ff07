"""playbooks/lifecycle.yml, the whole kOps guide, as a test: the values each step reads back. As in
`make demo`, the cluster's real control plane (kube world) answers: the create step validates for real,
the kubeconfig lists the nodes, and the upgrade drains every node of a PodDisruptionBudget-protected
workload.

It runs as AWX runs a job: through ``ansible-runner`` from the execution environment's contents (issue 18 item 6;
tools/harness/execution_environment.py): a fresh virtualenv on the EE's Python with exactly the Python packages,
collections (kopsible.kops from its built tarball, offline) and kops version that execution-environment.yml puts
in the image; the results are read from the job's events.

The lifecycle runs as the kops operator of role kops_iam with the guide's least-privilege policy, the emulator
enforcing IAM (``Emulator.enforce_iam``): the policy is proven sufficient for every call of the whole lifecycle
(delegation, state store, create, scale, upgrade with a rolling update, delete), and a policy one action short
is proven to fail at its first call of that action, naming it."""

import json
import os
import re
import subprocess

import pytest
import yaml

from conftest import ROOT
from harness.kops_env import kops_operator, lifecycle_overrides
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops


def first(run, suffix):
    return next(r for n, r in run.results if n.endswith(suffix))


def example_vars():
    with open(os.path.join(ROOT, "examples", "vars", "us-east-1-ha.yml")) as handle:
        return yaml.safe_load(handle)


def least_privilege_operator(emulator, example):
    """Role kops_iam run by the administrator (the harness' own key): the group, the user ``kops`` and its access key,
    with the guide's least-privilege policy for this lifecycle (its state store, clusters under its subdomain, zone
    management for the delegation step). Returns ``(environment with the user's credentials, policy ARN)``."""
    operator = kops_operator(
        emulator,
        kops_iam_policy_mode="least_privilege",
        kops_iam_state_store_buckets=[example["state_store_bucket"]],
        kops_iam_cluster_suffix="." + example["subdomain"],
        kops_iam_manage_hosted_zones=True,
    )
    policy_arn = emulator.client("iam").list_attached_group_policies(GroupName="kops")["AttachedPolicies"][0]["PolicyArn"]
    return operator, policy_arn


# Statements of the least-privilege policy that no call of this lifecycle needs, with the path that does (issue 29
# item 8). The test fails if one of them becomes needed here (then it is proven and leaves this list), and if any
# other statement is not needed by at least one call.
NOT_NEEDED_BY_THE_LIFECYCLE = {
    "ServiceAccountIssuer": "IAM roles for service accounts (spec.iam.useServiceAccountExternalPermissions, "
    "serviceAccountIssuerDiscovery): kops' IAMOIDCProvider task; the lifecycle's cluster has none",
    "ServiceLinkedRoles": "AWS creates the Auto Scaling, ELB and Spot service-linked roles on first use, checking "
    "iam:CreateServiceLinkedRole implicitly, which the emulator does not (docs/emulator.md 'IAM enforcement')",
}


def policy_statements_needed(document, requests):
    """For each statement of the IAM policy ``document`` (dict), the authorized ``requests`` (dicts with "action" and
    "resource", as :meth:`Emulator.iam_authorized_requests` lists them) that the policy without that statement would
    no longer allow, by moto's own evaluation (moto.iam.access_control.IAMPolicy, the one the emulator enforced):
    ``{Sid: [(action, resource), ...]}``. A statement with an empty list is not needed by these requests."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    def allowed(statements, action, resource):
        policy = IAMPolicy(json.dumps(dict(document, Statement=statements)))
        return policy.is_action_permitted(action, resource) == PermissionResult.PERMITTED

    statements = document["Statement"]
    needed = {}
    for index, statement in enumerate(statements):
        rest = statements[:index] + statements[index + 1 :]
        calls = {(r["action"], r["resource"]) for r in requests}
        needed[statement["Sid"]] = sorted(call for call in calls if allowed(statements, *call) and not allowed(rest, *call))
    return needed


def run_lifecycle(emulator, example, overrides, kops_dns, operator_env):
    return run_playbook(
        playbook=os.path.join(ROOT, "playbooks", "lifecycle.yml"),
        emulator=emulator,
        extra_vars=dict(example, **overrides),
        resolv_conf=kops_dns.resolv_conf,
        env=operator_env,
    )


def test_lifecycle_end_to_end(emulator, kops_dns, ssh_public_key, kube_world, tmp_path, execution_environment):
    ee = execution_environment
    # what the job runs with: the EE's own ansible-core, its collections (kopsible.kops from the tarball) and kops
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    assert ee.installed == {"amazon.aws": "10.1.2", "community.aws": "10.0.0", "kubernetes.core": "6.2.0", "kopsible.kops": version}
    # a job in the project directory (its ansible.cfg read, as ansible-runner reads it) finds the collection in
    # the EE's collection path, not in this checkout's .cache/collections link
    doc = subprocess.run([ee.bin("ansible-doc"), "--json", "kopsible.kops.kops_cluster"], env=ee.env(), cwd=ROOT, capture_output=True, text=True, check=False)
    assert doc.returncode == 0, doc.stderr
    assert json.loads(doc.stdout)["kopsible.kops.kops_cluster"]["doc"]["filename"].startswith(ee.collections + os.sep)

    example = example_vars()
    emulator.client("route53").create_hosted_zone(Name="example.org.", CallerReference="parent")  # the parent's owner
    operator_env, policy_arn = least_privilege_operator(emulator, example)
    emulator.enforce_iam()
    kubeconfig = str(tmp_path / "kubeconfig")
    run = ee.run_job(
        tmp_path / "job",
        "playbooks/lifecycle.yml",
        extra_vars=dict(example, **lifecycle_overrides(kops_dns, ssh_public_key, kubeconfig=kubeconfig)),
        env=dict(emulator.aws_env(), **operator_env),
        resolv_conf=kops_dns.resolv_conf,
    )
    # Every call of the lifecycle was the operator's, and the guide's policy allowed each one (a refusal that kops
    # retried past or a module tolerated is listed here too, naming the action the policy lacks).
    refusals = emulator.iam_refusals()
    assert refusals == [], sorted({(r["action"], r["resource"]) for r in refusals})
    # and the operator's key did the work: kops' own calls (Go SDK, about 2,400) and the modules' (amazon.aws' boto3
    # clients, User-Agent "APN/1.0 Ansible/...", about 100)
    authorized = emulator.iam_authorized()
    assert list(authorized) == [operator_env["AWS_ACCESS_KEY_ID"]], authorized
    assert authorized[operator_env["AWS_ACCESS_KEY_ID"]].get("aws-sdk-go-v2", 0) > 1000, authorized
    assert authorized[operator_env["AWS_ACCESS_KEY_ID"]].get("APN", 0) > 50, authorized
    assert run.rc == 0 and run.status == "successful", [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or (run.stdout + run.stderr)[-3000:]
    # Each statement of the policy is needed (issue 29 item 8): the lifecycle made a call that the policy without it
    # would refuse, by the evaluation the emulator enforced (the operator has this policy only, through its group).
    iam = emulator.client("iam")
    assert iam.list_attached_user_policies(UserName="kops")["AttachedPolicies"] == [] and iam.list_user_policies(UserName="kops")["PolicyNames"] == []
    assert [p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"]] == [policy_arn]
    assert iam.list_group_policies(GroupName="kops")["PolicyNames"] == []
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]["Document"]
    document = json.loads(document) if isinstance(document, str) else document
    operator_arn = iam.get_user(UserName="kops")["User"]["Arn"]
    requests = [r for r in emulator.iam_authorized_requests() if r["principal"] == operator_arn]
    assert len(requests) > 100, len(requests)
    needed = policy_statements_needed(document, requests)
    unneeded = sorted(sid for sid, calls in needed.items() if not calls)
    assert unneeded == sorted(NOT_NEEDED_BY_THE_LIFECYCLE), {sid: calls[:3] for sid, calls in needed.items()}

    delegation = first(run, "for DNS to answer SOA and NS) - " + example["subdomain"])
    assert delegation["verified"] is True and len(delegation["name_servers"]) == 4
    bucket = first(run, "State store bucket kopsclustertest-state")
    assert bucket["versioning"]["Versioning"] == "Enabled"
    created = next(r for n, r in run.results if n.endswith("is present") and "kops_invocations" in r)
    assert created["changed"] and created["cluster"]["kubernetes_version"] == "1.34.1"
    assert created["validation"]["ok"] is True and len(created["validation"]["nodes"]) == 5
    nodes = first(run, "List the nodes through the exported kubeconfig")["resources"]
    assert sorted(n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes) == ["v1.34.1"] * 5
    groups = first(run, "Read the Auto Scaling groups")["results"]
    assert sorted(g["auto_scaling_group_name"].split(".")[0] for g in groups if g["desired_capacity"]) == [
        "control-plane-us-east-1a",
        "control-plane-us-east-1b",
        "control-plane-us-east-1c",
        "nodes-us-east-1a",
        "nodes-us-east-1b",
    ]
    scale = first(run, "Plan and apply the cluster once")
    assert "modify AutoscalingGroup/nodes-us-east-1c.%s: MaxSize 0 -> 1, MinSize 0 -> 1" % example["cluster_name"] in scale["plan_summary"]
    # issue 18 item 4: one task result per group, in kops' order, each with what that group's roll did; issue 26: the
    # control plane first (its own phase, applied alone), then the workers
    order = [
        ("ControlPlane", "control-plane-us-east-1a"),
        ("ControlPlane", "control-plane-us-east-1b"),
        ("ControlPlane", "control-plane-us-east-1c"),
        ("Node", "nodes-us-east-1a"),
        ("Node", "nodes-us-east-1b"),
        ("Node", "nodes-us-east-1c"),
    ]
    per_group = [(n, r) for n, r in run.results if re.search(r" : Rolling update - [^:]+ - (Bastion|ControlPlane|APIServer|Node) \S+$", n)]
    assert [tuple(n.rsplit(" - ", 1)[1].split(" ")) for n, _r in per_group] == order, [n for n, _r in per_group]
    assert [n.split(" - ")[1] for n, _r in per_group] == ["control plane to 1.35.0"] * 3 + ["workers"] * 3
    for name, group in per_group:
        group_name = name.rsplit(" ", 1)[1]
        assert [g["name"] for g in group["rolled"]] == [group_name] and group["rolled"][0]["seconds"] > 0, group.get("rolled")
        assert list(group["replaced"]) == [group_name], group["replaced"]
        roll_call = group["kops_invocations"][-2]["argv"]
        assert "--yes" in roll_call and "--cloudonly" not in roll_call and roll_call[roll_call.index("--instance-group") + 1] == group_name
    hop = first(run, "Control plane - set the version and apply the control-plane groups alone - hop 1/1, 1.35.0")
    hop_update = next(c["argv"] for c in hop["kops_invocations"] if "--yes" in c["argv"])
    assert hop_update[hop_update.index("--instance-group-roles") + 1] == "control-plane,apiserver", hop_update
    report = first(run, "Report the upgrade")["msg"]
    phase = next(p for p in report["phases"] if p["phase"] == "control plane to 1.35.0")
    # after the control-plane phase, read through the kubeconfig: the control plane on the new kubelet, the workers not
    assert sorted(set(phase["kubelets"].values())) == ["v1.34.1", "v1.35.0"], phase["kubelets"]
    roll = first(run, "Rolling update - what the roll did, as one result")["ansible_facts"]["upgrade_roll"]
    assert len(roll["replaced"]) == 6 and all(ids["before"] and ids["after"] for ids in roll["replaced"].values())
    assert [g["name"] for g in roll["rolled"]] == [name for _role, name in order]
    assert all(g["done"] and g["nodes_drained"] for g in roll["rolled"])
    assert sum(g["pods_evicted"] for g in roll["rolled"]) >= 6
    after = first(run, "List the nodes after the upgrade")["resources"]
    assert sorted(n["status"]["nodeInfo"]["kubeletVersion"] for n in after) == ["v1.35.0"] * 6
    assert first(run, "Validate the upgraded cluster")["validation"]["ok"] is True
    # the upgrade role's own check through kubernetes.core.k8s_info: every node runs the new kubelet
    verified = first(run, "Verify - list the nodes through the Kubernetes API")["resources"]
    assert sorted(n["metadata"]["name"] for n in verified) == sorted(n["metadata"]["name"] for n in after)
    assert sorted(n["status"]["nodeInfo"]["kubeletVersion"] for n in verified) == ["v1.35.0"] * 6
    assert first(run, "Verify - every node runs the kubelet of the new version").get("failed") is not True
    assert hop["cluster"]["kubernetes_version"] == "1.35.0"
    deleted = next(r for n, r in run.results if n.endswith("Delete the cluster (kops delete cluster --yes)") and "kops_invocations" in r)
    assert deleted["dns_records_left"] == [] and len(deleted["deleted_resources"]) > 40

    # Read back from the emulator: the subdomain is ready for the next cluster, nothing is left running.
    r53 = emulator.client("route53")
    zone = [z for z in r53.list_hosted_zones()["HostedZones"] if z["Name"] == example["subdomain"] + "."][0]
    assert sorted(r["Type"] for r in r53.list_resource_record_sets(HostedZoneId=zone["Id"])["ResourceRecordSets"]) == ["NS", "SOA"]
    assert emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []


# The action the policy lacks in the failing run: the create step's first write to the state store (kops_cluster's lock
# object, just before `kops create cluster` writes the cluster spec), so the run stops at its first call of it, seconds
# in. (An action only kops' update calls would be retried by kops' task executor for 10 minutes before it fails.)
REMOVED_ACTION = "s3:PutObject"


def test_lifecycle_without_one_action_stops_naming_it(emulator, kops_dns, ssh_public_key, tmp_path):
    example = example_vars()
    emulator.client("route53").create_hosted_zone(Name="example.org.", CallerReference="parent")
    operator_env, policy_arn = least_privilege_operator(emulator, example)
    iam = emulator.client("iam")
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]["Document"]
    document = json.loads(document) if isinstance(document, str) else document
    for statement in document["Statement"]:
        if isinstance(statement["Action"], list) and REMOVED_ACTION in statement["Action"]:
            statement["Action"].remove(REMOVED_ACTION)
    assert json.dumps(REMOVED_ACTION) not in json.dumps(document)
    iam.create_policy_version(PolicyArn=policy_arn, PolicyDocument=json.dumps(document), SetAsDefault=True)
    emulator.enforce_iam()

    run = run_lifecycle(emulator, example, lifecycle_overrides(kops_dns, ssh_public_key), kops_dns, operator_env)
    assert run.rc != 0
    failed = [(n, r) for n, r in run.results if r.get("failed")]
    # the module's failure, then the cluster role's re-raise of it after its diagnostics rescue: no dump, since the
    # create stopped before kops wrote the cluster's spec (kops ran only its read of the state store)
    assert [n for n, _r in failed] == [failed[0][0], "kopsible.kops.cluster : The failure of " + failed[0][0].split(" : ", 1)[1]], failed
    name, result = failed[0]
    assert failed[1][1]["msg"] == "%s (no diagnostics: name: cluster %s is not in the state store s3://%s; nothing was written)" % (
        result["msg"],
        example["cluster_name"],
        example["state_store_bucket"],
    ), failed[1][1]["msg"]
    assert name.endswith("is present") and "kops_invocations" in result, name  # kops_cluster: kops create cluster
    assert "is not authorized to perform: %s on resource: arn:aws:s3:::%s/" % (REMOVED_ACTION, example["state_store_bucket"]) in result["msg"], result["msg"]
    # The only refusals: that action, by the operator, on the state store; the steps before it ran.
    refusals = emulator.iam_refusals()
    assert refusals and {(r["action"], r["principal"]) for r in refusals} == {(REMOVED_ACTION, "arn:aws:iam::123456789012:user/kops")}, refusals
    assert all(r["resource"].startswith("arn:aws:s3:::%s/" % example["state_store_bucket"]) for r in refusals), refusals
    assert {r["client"].split("/")[0] for r in refusals} == {"APN"}, refusals  # the module's boto3 call, before kops ran
    assert first(run, "State store bucket " + example["state_store_bucket"])["versioning"]["Versioning"] == "Enabled"
    assert emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []
