"""AWX-style jobs through ansible-runner (the library AWX and Automation Platform run every job with), on the
emulator with the real kops, as docs/awx.md sets them up:

- the project directory is this checkout; each job gets its own private data directory;
- the AWS credential is injected as AWX's "Amazon Web Services" credential type injects it
  (awx/main/models/credential/injectors.py ``aws``): ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and the STS
  token as ``AWS_SECURITY_TOKEN``, nothing else; every AWS request of the jobs (amazon.aws modules, the
  collection's modules, kops, the inventory plugin) goes through a counting proxy that records the token each
  request carried, so a request without it fails the test;
- survey answers are extra variables; the create template is launched once per cluster;
- the fleet rollout's inventory source is the collection's inventory plugin (a ``*.kops.yml`` file), and the
  job is sliced over the fleet, one ``--limit`` per slice;
- the job events are read back: every task has its result event (per host), and no secret is in any event or
  in any file of the private data directory (artifacts included).
"""

import json
import os
import sys

import ansible_runner  # noqa: E402  (requirements.txt: a missing one fails the collection, never skips)
import pytest
import yaml

from conftest import ROOT
from harness.execution_environment import RESULT_EVENTS
from harness.faults import faulty
from harness.kops_env import UBUNTU_AMI, artifact_mirror, kops_binary

pytestmark = pytest.mark.kops

BUCKET = "awx-fleet-state"
ACCESS_KEY = "ASIAAWXJOBTEST000001"
SECRET_KEY = "awxSecretKey/NeverInAnyEvent0123456789ab"
SECURITY_TOKEN = "awxStsToken//NeverInAnyEvent+FwoGZXIvYXdzEBYaDHVzZXItdG9rZW4="
CLUSTERS = {"c0.k8s.local": "canary", "c1.k8s.local": "wave1"}


def job(tmp_path, name, playbook, inventory, extravars, limit=None):
    """One job: ansible_runner.run as AWX's task runner calls it; returns ``(runner, private data dir)``."""
    private = tmp_path / name
    private.mkdir()
    envvars = {  # the credential, as AWX injects it, and the EE's PATH (the venv's ansible-playbook)
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SECURITY_TOKEN": SECURITY_TOKEN,
        "AWS_EC2_METADATA_DISABLED": "true",
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    runner = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=ROOT,
        playbook=playbook,
        inventory=inventory,
        extravars=extravars,
        envvars=envvars,
        limit=limit,
        ident=name,
        quiet=True,
        suppress_env_files=True,
    )  # as AWX runs jobs (AWX_RUNNER_OMIT_ENV_FILES): no env/envvars file
    return runner, private


def assert_events(runner, private):
    """Every task start has one result event per host that ran it (with the module's result), and no secret is
    in any event or any file the job left in its private data directory."""
    events = list(runner.events)
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
    for secret in (SECRET_KEY, SECURITY_TOKEN):
        assert secret not in text
        for folder, dummy, files in os.walk(str(private)):
            for name in files:
                with open(os.path.join(folder, name), "rb") as handle:
                    if secret.encode() in handle.read():
                        holding.add(os.path.relpath(os.path.join(folder, name), str(private)))
    # ansible-runner records the environment it started ansible-playbook with in artifacts/IDENT/command (always,
    # AWX's jobs too: runner.py Runner.run), readable by the job's user only; nothing else holds a secret
    command = os.path.join("artifacts", runner.config.ident, "command")
    assert holding == {command}, holding
    assert os.stat(os.path.join(str(private), command)).st_mode & 0o077 == 0
    return results


def task_result(results, task, host):
    """The result of the task named ``task`` (with or without its role's prefix) on ``host``."""
    return next(r["res"] for r in results.values() if task in (r["task"], "%s : %s" % (r.get("role"), r["task"])) and r["host"] == host)


def test_awx_jobs_create_and_sliced_fleet_rollout(emulator, ssh_public_key, tmp_path, monkeypatch):
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    emulator.warm()
    localhost = tmp_path / "localhost.yml"  # the inventory of the templates that run on localhost (docs/awx.md)
    localhost.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    with faulty(emulator) as aws:
        template = {
            "kops_binary": kops_binary(),
            "kops_env": {"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest"},
            "aws_endpoint_url": aws.url,
            "aws_region": "us-east-1",
        }
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
                "cluster_apply": False,
            }
            runner, private = job(tmp_path, "create-%d" % index, "playbooks/create_cluster.yml", str(localhost), dict(template, **survey))
            assert runner.status == "successful", runner.stdout.read()[-3000:]
            results = assert_events(runner, private)
            assert task_result(results, "Cluster %s is present" % cluster, "localhost")["changed"] is True

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
        survey = {
            "fleet_kubernetes_version": "1.35.0",
            "fleet_canary": "rollout_canary",
            "fleet_batch_size": 1,
            "upgrade_cloudonly": True,
            "upgrade_validate": False,
            "upgrade_etcd_backup_max_age": "",  # no control plane runs for these clusters, so no etcd-manager backs them up
            "upgrade_control_plane_interval": "1s",
            "upgrade_node_interval": "1s",
            "upgrade_bastion_interval": "1s",
        }
        for index, cluster in enumerate(sorted(CLUSTERS)):
            runner, private = job(
                tmp_path, "fleet-slice-%d" % index, "playbooks/fleet_upgrade.yml", str(source), dict(template, **survey), limit="%s:localhost" % cluster
            )
            assert runner.status == "successful", runner.stdout.read()[-3000:]
            results = assert_events(runner, private)
            hosts = {host for dummy, host in results}
            assert hosts == {cluster, "localhost"}, hosts  # the slice touched its cluster only
            summary = task_result(results, "Show the rollout", "localhost")["fleet_summary"]
            assert summary[cluster]["status"] == "upgraded" and summary[cluster]["version"] == "1.35.0"
            hop = "Control plane - set the version and apply the control-plane groups alone - hop 1/1, 1.35.0"
            assert task_result(results, hop, cluster)["cluster"]["kubernetes_version"] == "1.35.0"
            # read back: this slice's cluster is upgraded, the next one not yet
            versions = {c: stored_version(emulator, c) for c in sorted(CLUSTERS)}
            assert versions == {c: "1.35.0" if i <= index else "1.34.1" for i, c in enumerate(sorted(CLUSTERS))}
        stats = aws.proxy.stats()
    # every AWS request of every job carried the injected token: amazon.aws and the collection's modules and the
    # inventory plugin (boto3), and kops (AWS SDK for Go v2) for EC2, Auto Scaling, IAM, STS...
    tokens = stats["session_tokens"]
    assert set(tokens) <= {SECURITY_TOKEN, ""}, list(tokens)
    signed = tokens[SECURITY_TOKEN]
    assert {"ec2", "autoscaling", "iam", "sts"} <= set(signed.get("aws-sdk-go-v2", {})), signed
    assert {"s3"} <= set(signed.get("boto3", {})), signed
    # ...except kops' state-store reads and writes: with a custom S3 endpoint (S3_ENDPOINT, here the emulator) kops
    # builds its S3 client from S3_ACCESS_KEY_ID/S3_SECRET_ACCESS_KEY with an empty token (util/pkg/vfs/s3context.go,
    # NewStaticCredentialsProvider(..., "")); against AWS itself (no endpoint) it uses the SDK's default chain,
    # which reads AWS_SESSION_TOKEN from the runner (docs/awx.md)
    assert tokens.get("", {}).keys() <= {"aws-sdk-go-v2"}, tokens.get("")
    assert set(tokens.get("", {}).get("aws-sdk-go-v2", {})) <= {"s3"}, tokens.get("")


def stored_version(emulator, cluster):
    body = emulator.client("s3").get_object(Bucket=BUCKET, Key=cluster + "/config")["Body"].read()
    return yaml.safe_load(body)["spec"]["kubernetesVersion"]
