"""AWX jobs on the emulator with the real kops, as docs/awx.md sets them up, run as AWX runs them: through
``ansible-runner run`` of the execution environment's contents (the EE's own ansible-core, collections from the built
tarball and kops; tools/harness/execution_environment.py, shared with test_lifecycle), with the emulator enforcing
IAM and the clusters' real control planes (kube world) answering, so the fleet's roll is a real one: validation,
cordon, drain through the eviction API, the control plane before the workers.

- the project directory is this checkout; each job gets its own private data directory;
- the AWS credential is a temporary one (an STS session of a role holding role kops_iam's least-privilege policy)
  injected as AWX's "Amazon Web Services" credential type injects it (awx/main/models/credential/injectors.py
  ``aws``): ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and the token as ``AWS_SECURITY_TOKEN``; kops'
  state-store client, which signs with a static key and no token when the S3 endpoint is a custom one (kops
  util/pkg/vfs/s3context.go), gets the operator's long-term key as a custom credential type would inject it
  (``S3_ACCESS_KEY_ID``/``S3_SECRET_ACCESS_KEY``). Every request is authorized by the emulator's IAM (none refused),
  and goes through a counting proxy that records the token each request carried;
- survey answers are extra variables; the create template is launched once per cluster;
- the fleet rollout's inventory source is the collection's inventory plugin (a ``*.kops.yml`` file), and the
  job is sliced over the fleet, one ``--limit`` per slice; each cluster's roll uses an admin kubeconfig the upgrade
  role exports for the run and removes after it (``upgrade_export_kubeconfig``, set by playbooks/fleet_upgrade.yml);
- the job events are read back: every task has its result event (per host), and no secret is in any event or
  in any file of the private data directory (artifacts included).
"""

import json
import os

import pytest
import yaml

from harness.execution_environment import RESULT_EVENTS
from harness.faults import faulty
from harness.kops_env import UBUNTU_AMI, kops_operator, module_options

pytestmark = pytest.mark.kops

BUCKET = "awx-fleet-state"
CLUSTERS = {"c0.k8s.local": "canary", "c1.k8s.local": "wave1"}
ROLE = "awx-kops-jobs"


def job_credentials(emulator):
    """The job's credentials, as an AWX administrator sets them up: role kops_iam's user ``kops`` with the
    least-privilege policy for this fleet (its state store, clusters named ``*.k8s.local``), and a role holding the same
    policy whose STS session is the job's AWS credential. Returns ``(AWX's AWS credential injection, the custom
    credential's S3_* injection)``, two dicts of environment variables."""
    operator = kops_operator(emulator, kops_iam_policy_mode="least_privilege", kops_iam_state_store_buckets=[BUCKET], kops_iam_cluster_suffix=".k8s.local")
    iam = emulator.client("iam")
    [policy] = iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"]
    account = emulator.client("sts").get_caller_identity()["Account"]
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::%s:root" % account}, "Action": "sts:AssumeRole"}]}
    role = iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    iam.attach_role_policy(RoleName=ROLE, PolicyArn=policy["PolicyArn"])
    session = emulator.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="awx-job", DurationSeconds=3600)["Credentials"]
    assert session["AccessKeyId"].startswith("ASIA") and session["SessionToken"]
    aws = {
        "AWS_ACCESS_KEY_ID": session["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": session["SecretAccessKey"],
        "AWS_SECURITY_TOKEN": session["SessionToken"],
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    store = {"S3_ACCESS_KEY_ID": operator["AWS_ACCESS_KEY_ID"], "S3_SECRET_ACCESS_KEY": operator["AWS_SECRET_ACCESS_KEY"]}
    return aws, store


def assert_events(run, private, secrets):
    """Every task start has one result event per host that ran it (with the module's result), and none of
    ``secrets`` (strings) is in any event or any file the job left in its private data directory but one.
    Returns ``{(task uuid, host): event data}``."""
    events = run.events
    starts = {e["uuid"]: e["event_data"]["task"] for e in events if e["event"] == "playbook_on_task_start"}
    results = {}
    for event in events:
        if event["event"] in RESULT_EVENTS:
            data = event["event_data"]
            key = (data["task_uuid"], data["host"])
            assert key not in results, "two result events for task %s on %s" % (data["task"], data["host"])
            results[key] = data
            assert data["task_uuid"] in starts, data["task"]
            if event["event"] != "runner_on_skipped":  # ansible-runner's skipped event carries no result
                assert isinstance(data.get("res"), dict), (event["event"], data["task"])
    ran = {uuid for uuid, dummy in results}
    # a task start without a result is a task no host ran (e.g. a play whose hosts the slice's limit left out)
    assert ran and ran <= set(starts)
    text = json.dumps(events)
    holding = set()
    for secret in secrets:
        assert secret not in text
        for folder, dummy, files in os.walk(str(private)):
            for name in files:
                with open(os.path.join(folder, name), "rb") as handle:
                    if secret.encode() in handle.read():
                        holding.add(os.path.relpath(os.path.join(folder, name), str(private)))
    # ansible-runner records the environment it started ansible-playbook with in artifacts/IDENT/command (always,
    # AWX's jobs too: runner.py Runner.run), readable by the job's user only; nothing else holds a secret
    command = os.path.join("artifacts", "job", "command")
    assert holding <= {command}, holding
    if holding:
        assert os.stat(os.path.join(str(private), command)).st_mode & 0o077 == 0
    return results


def task_result(results, task, host):
    """The result of the task named ``task`` (with or without its role's prefix) on ``host``; AssertionError when the
    task did not run there or was skipped (a skipped task's event carries no result)."""
    found = [r for r in results.values() if task in (r["task"], "%s : %s" % (r.get("role"), r["task"])) and r["host"] == host]
    assert found, "task %r has no result on %s" % (task, host)
    assert "res" in found[0], "task %r was skipped on %s" % (task, host)
    return found[0]["res"]


def task_results(results, prefix, host):
    """The results of the tasks whose name (with its role's prefix) starts with ``prefix`` on ``host``, in run order."""
    return [r["res"] for r in results.values() if "%s : %s" % (r.get("role"), r["task"]).startswith(prefix) and r["host"] == host and r.get("res")]


def kubelets(kube_world, cluster):
    """The kubelet version of each Node of ``cluster``, read from its API server (sorted list of str)."""
    return sorted(n.status.node_info.kubelet_version for n in kube_world.core(cluster).list_node().items)


def test_awx_jobs_in_the_ee_create_and_roll_a_sliced_fleet(emulator, kops_dns, kube_world, ssh_public_key, tmp_path, execution_environment, monkeypatch):
    ee = execution_environment
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    emulator.warm()
    credential, store_credential = job_credentials(emulator)
    secrets = (credential["AWS_SECRET_ACCESS_KEY"], credential["AWS_SECURITY_TOKEN"], store_credential["S3_SECRET_ACCESS_KEY"])
    job_env = dict(credential, **store_credential)
    emulator.enforce_iam()
    with faulty(emulator) as aws:
        template = dict(module_options(kops_dns), aws_endpoint_url=aws.url, aws_region="us-east-1")
        # the create template, launched once per cluster with the survey's answers
        for index, (cluster, wave) in enumerate(sorted(CLUSTERS.items())):
            survey = {
                "state_store_bucket": BUCKET,
                "cluster_name": cluster,
                "cluster_zones": ["us-east-1a"],
                "cluster_node_count": 1,
                "cluster_kubernetes_version": "1.34.1",
                "cluster_channel": "none",
                "cluster_image": UBUNTU_AMI,
                "cluster_ssh_public_key": ssh_public_key,
                "cluster_cloud_labels": {"rollout": wave},
                "cluster_apply": True,
            }
            private = tmp_path / ("create-%d" % index)
            run = ee.run_job(private, "playbooks/create_cluster.yml", dict(template, **survey), env=job_env, resolv_conf=kops_dns.resolv_conf)
            assert run.rc == 0 and run.status == "successful", [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-3000:]
            results = assert_events(run, private, secrets)
            assert task_result(results, "Cluster %s is present" % cluster, "localhost")["changed"] is True
        for cluster in CLUSTERS:
            kube_world.wait_cluster(cluster, timeout=120, nodes=2)
            assert kubelets(kube_world, cluster) == ["v1.34.1"] * 2

        # the fleet template: inventory source from the project, sliced in two jobs
        source = tmp_path / "fleet.kops.yml"
        source.write_text(
            yaml.safe_dump(
                {
                    "plugin": "kopsible.kops.kops",
                    "state_stores": ["s3://" + BUCKET],
                    "endpoint_url": aws.url,
                    "region": "us-east-1",
                    "keyed_groups": [{"key": "cloud_labels.rollout", "prefix": "rollout"}],
                }
            )
        )
        survey = {  # the upgrade role's real roll: validation, drains, the control plane first
            "fleet_kubernetes_version": "1.35.0",
            "fleet_canary": "rollout_canary",
            "fleet_batch_size": 1,
            "upgrade_validate_count": "1",
            "upgrade_validation_timeout": "10m",
            "upgrade_drain_timeout": "5m",
            "upgrade_post_drain_delay": "1s",
            "upgrade_control_plane_interval": "2s",
            "upgrade_node_interval": "2s",
            "upgrade_bastion_interval": "2s",
        }
        for index, cluster in enumerate(sorted(CLUSTERS)):
            private = tmp_path / ("fleet-slice-%d" % index)
            run = ee.run_job(
                private,
                "playbooks/fleet_upgrade.yml",
                dict(template, **survey),
                env=job_env,
                resolv_conf=kops_dns.resolv_conf,
                inventory=source,
                limit="%s:localhost" % cluster,
            )
            assert run.rc == 0 and run.status == "successful", [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-3000:]
            results = assert_events(run, private, secrets)
            hosts = {host for dummy, host in results}
            assert hosts == {cluster, "localhost"}, hosts  # the slice touched its cluster only
            summary = task_result(results, "Show the rollout", "localhost")["fleet_summary"]
            assert summary[cluster]["status"] == "upgraded" and summary[cluster]["version"] == "1.35.0"
            # a real roll: each group validated, drained and replaced, the control plane first, with the kubeconfig
            # the role exported for this run, removed after it
            exported = task_result(results, "Pre-flight - export the admin kubeconfig (kops export kubecfg --admin)", cluster)
            assert exported["kubeconfig"]["path"].startswith("/") and not os.path.exists(exported["kubeconfig"]["path"])
            roll = task_result(results, "Rolling update - what the roll did, as one result", cluster)["ansible_facts"]["upgrade_roll"]
            assert [g["name"] for g in roll["rolled"]] == ["control-plane-us-east-1a", "nodes-us-east-1a"], roll["rolled"]
            assert all(g["done"] and g["nodes_drained"] for g in roll["rolled"]), roll["rolled"]
            assert len(roll["replaced"]) == 2 and all(ids["before"] and ids["after"] for ids in roll["replaced"].values())
            assert task_result(results, "Validate the upgraded cluster", cluster)["validation"]["ok"] is True
            # read back: this slice's cluster is upgraded (its nodes' kubelets from its API server), the next one not yet
            for i, other in enumerate(sorted(CLUSTERS)):
                version = "1.35.0" if i <= index else "1.34.1"
                assert stored_version(emulator, other) == version
                assert kubelets(kube_world, other) == ["v" + version] * 2
        stats = aws.proxy.stats()
    # The emulator's IAM authorized every request of every job, and refused none: the role's session (its token
    # checked) for the modules, amazon.aws, the inventory plugin and kops' EC2, Auto Scaling, IAM... calls, and the
    # operator's long-term key for kops' state-store client only.
    refusals = emulator.iam_refusals()
    assert refusals == [], sorted({(r["action"], r["resource"], r["client"]) for r in refusals})
    authorized = emulator.iam_authorized()
    assert set(authorized) == {credential["AWS_ACCESS_KEY_ID"], store_credential["S3_ACCESS_KEY_ID"]}, authorized
    assert set(authorized[store_credential["S3_ACCESS_KEY_ID"]]) == {"aws-sdk-go-v2"}, authorized
    account = emulator.client("sts").get_caller_identity()["Account"]
    principals = {r["principal"] for r in emulator.iam_authorized_requests()}
    assert principals == {"arn:aws:sts::%s:assumed-role/%s/awx-job" % (account, ROLE), "arn:aws:iam::%s:user/kops" % account}, principals
    # the proxy saw the injected token on every request but kops' state-store ones (custom S3 endpoint: a static key,
    # no token, kops util/pkg/vfs/s3context.go NewStaticCredentialsProvider(..., "")); against AWS itself (no
    # endpoint) kops' S3 client uses the SDK's default chain, which reads the AWS_SESSION_TOKEN the collection passes
    tokens = stats["session_tokens"]
    assert set(tokens) <= {credential["AWS_SECURITY_TOKEN"], ""}, list(tokens)
    signed = tokens[credential["AWS_SECURITY_TOKEN"]]
    assert {"ec2", "autoscaling", "iam", "sts"} <= set(signed.get("aws-sdk-go-v2", {})), signed
    assert {"s3"} <= set(signed.get("boto3", {})), signed
    assert set(tokens.get("", {})) <= {"aws-sdk-go-v2"} and set(tokens.get("", {}).get("aws-sdk-go-v2", {})) <= {"s3"}, tokens.get("")


def stored_version(emulator, cluster):
    body = emulator.client("s3").get_object(Bucket=BUCKET, Key=cluster + "/config")["Body"].read()
    return yaml.safe_load(body)["spec"]["kubernetesVersion"]
