"""playbooks/lifecycle.yml, the whole kOps guide, as a test: the values each step reads back. As in
`make demo`, the cluster's real control plane (kube world) answers: the create step validates for real,
the kubeconfig lists the nodes, and the upgrade drains every node of a PodDisruptionBudget-protected
workload.

It runs as AWX runs a job: through ``ansible-runner`` from the execution environment's contents (issue 18 item 6;
tools/harness/execution_environment.py): a fresh virtualenv on the EE's Python with exactly the Python packages,
collections (kopsible.kops from its built tarball, offline) and kops version that execution-environment.yml puts
in the image; the results are read from the job's events."""

import json
import os
import subprocess

import pytest
import yaml

from conftest import ROOT
from harness.execution_environment import ExecutionEnvironment
from harness.kops_env import lifecycle_overrides

pytestmark = pytest.mark.kops


def first(run, suffix):
    return next(r for n, r in run.results if n.endswith(suffix))


@pytest.fixture(scope="module")
def execution_environment(tmp_path_factory):
    """The EE's contents in a fresh virtualenv (built once for this file)."""
    return ExecutionEnvironment(tmp_path_factory.mktemp("ee")).build()


def test_lifecycle_end_to_end(emulator, kops_dns, ssh_public_key, kube_world, tmp_path, execution_environment):
    ee = execution_environment
    # what the job ran with: the EE's own ansible-core, its collections (kopsible.kops from the tarball) and kops
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    assert ee.installed == {"amazon.aws": "10.1.2", "kubernetes.core": "6.2.0", "kopsible.kops": version}
    with open(os.path.join(ROOT, "examples", "vars", "us-east-1-ha.yml")) as handle:
        example = yaml.safe_load(handle)
    emulator.client("route53").create_hosted_zone(Name="example.org.", CallerReference="parent")
    kubeconfig = str(tmp_path / "kubeconfig")
    run = ee.run_job(
        tmp_path / "job",
        "playbooks/lifecycle.yml",
        extra_vars=dict(example, **lifecycle_overrides(kops_dns, ssh_public_key, kubeconfig=kubeconfig)),
        env=emulator.aws_env(),
        resolv_conf=kops_dns.resolv_conf,
    )
    assert run.rc == 0 and run.status == "successful", [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or (run.stdout + run.stderr)[-3000:]
    # a job in the project directory (its ansible.cfg read, as ansible-runner reads it) finds the collection in
    # the EE's collection path, not in this checkout's .cache/collections link
    doc = subprocess.run([ee.bin("ansible-doc"), "--json", "kopsible.kops.kops_cluster"], env=ee.env(), cwd=ROOT, capture_output=True, text=True, check=False)
    assert doc.returncode == 0, doc.stderr
    assert json.loads(doc.stdout)["kopsible.kops.kops_cluster"]["doc"]["filename"].startswith(ee.collections + os.sep)

    delegation = first(run, "from its parent zone - " + example["subdomain"])
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
    roll = first(run, "Rolling update in kops' order (bastions, control plane, nodes)")
    assert len(roll["replaced"]) == 6 and all(ids["before"] and ids["after"] for ids in roll["replaced"].values())
    assert "--cloudonly" not in roll["kops_invocations"][-2]["argv"]
    assert [g["name"] for g in roll["rolled"]] == [
        "control-plane-us-east-1a",
        "control-plane-us-east-1b",
        "control-plane-us-east-1c",
        "nodes-us-east-1a",
        "nodes-us-east-1b",
        "nodes-us-east-1c",
    ]
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
    assert first(run, "Set the version and apply")["cluster"]["kubernetes_version"] == "1.35.0"
    deleted = next(r for n, r in run.results if n.endswith("Delete the cluster (kops delete cluster --yes)") and "kops_invocations" in r)
    assert deleted["dns_records_left"] == [] and len(deleted["deleted_resources"]) > 40

    # Read back from the emulator: the subdomain is ready for the next cluster, nothing is left running.
    r53 = emulator.client("route53")
    zone = [z for z in r53.list_hosted_zones()["HostedZones"] if z["Name"] == example["subdomain"] + "."][0]
    assert sorted(r["Type"] for r in r53.list_resource_record_sets(HostedZoneId=zone["Id"])["ResourceRecordSets"]) == ["NS", "SOA"]
    assert emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []
