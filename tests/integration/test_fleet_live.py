"""playbooks/fleet_update_run.yml on live clusters (issue 31): two gossip clusters of one state store, applied with the
real kops, each with its real control plane and node agent in the kube world, upgraded 1.34.1 -> 1.35.0 by the upgrade
role with validation (a canary stage, then wave1).

The canary's worker is kept NotReady (the node agent's knob, as a kubelet that lost its container runtime): the
canary's pre-flight validation fails naming that node, the run halts before wave1 starts, and nothing of either cluster
is changed (spec versions and instances read back). After the fix (the node Ready again) the same run resumes from the
canary stage: the canary (second attempt), then wave1; both clusters end at the target, every Node's kubelet at 1.35
(read from each cluster's API), each original instance replaced exactly once (read from EC2)."""

import json

import pytest

from harness import fleet
from harness.kops_env import LIVE_UPGRADE
from harness.kubeworld_runner import wait_for
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops
BUCKET = "fleet-live-state"
RUN = "upgrade-live-1.35"
CANARY, WAVE = "l0.k8s.local", "l1.k8s.local"
PLAN = {"change": {"kubernetes_version": "1.35.0"}, "stages": [{"name": "canary", "clusters": [CANARY]}, {"name": "wave1", "clusters": [WAVE]}]}
# the upgrade role on a live cluster, quickly (harness.kops_env), validating
LIVE = dict(LIVE_UPGRADE, upgrade_cloudonly=False, upgrade_validate=True)


def node_ready(core, name):
    return any(c.type == "Ready" and c.status == "True" for c in core.read_node(name).status.conditions or [])


def instances(emulator, cluster):
    """``{instance id: state}`` of ``cluster``'s instances, read from EC2."""
    found = {}
    ec2 = emulator.client("ec2")
    for reservation in ec2.describe_instances(Filters=[{"Name": "tag:KubernetesCluster", "Values": [cluster]}])["Reservations"]:
        for inst in reservation["Instances"]:
            found[inst["InstanceId"]] = inst["State"]["Name"]
    return found


def record(emulator):
    return json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/%s.json" % RUN)["Body"].read())


def test_a_canary_kept_not_ready_halts_the_run_before_the_wave_and_the_rerun_after_the_fix_continues(emulator, kops_dns, ssh_public_key, kube_world, tmp_path):
    fleet.make_fleet(emulator, BUCKET, {CANARY: ("1.34.1", None), WAVE: ("1.34.1", None)}, ssh_public_key)
    applied = run_playbook(
        [{"name": n, "kopsible.kops.kops_cluster": {"name": n, "apply": True}} for n in (CANARY, WAVE)], emulator=emulator, kops=fleet.kops_settings(BUCKET)
    )
    assert applied.rc == 0, applied.stdout[-3000:]
    for name in (CANARY, WAVE):
        kube_world.wait_cluster(name, timeout=180, nodes=2)
    core = kube_world.core(CANARY)
    worker = next(n.metadata.name for n in core.list_node().items if "node-role.kubernetes.io/node" in (n.metadata.labels or {}))
    original = {name: instances(emulator, name) for name in (CANARY, WAVE)}
    assert all(set(states.values()) == {"running"} and len(states) == 2 for states in original.values()), original

    def run(holder, **more):
        more = dict(LIVE, upgrade_diagnostics_dir=str(tmp_path / "diagnostics"), **more)
        return fleet.run_update(emulator, tmp_path, BUCKET, RUN, PLAN, holder, resolv_conf=kops_dns.resolv_conf, **more)

    kube_world.knobs(CANARY, not_ready_nodes=[worker])
    try:
        wait_for(lambda: not node_ready(core, worker))
        first = run("job-1", upgrade_validation_timeout="10s")  # kops validates for 10 s, then fails
    finally:
        kube_world.knobs(CANARY)
    assert first.rc != 0, first.stdout[-3000:]
    state = record(emulator)
    assert state["clusters"][CANARY]["state"] == "failed", state["clusters"]
    reason = state["clusters"][CANARY]["reason"]
    validation = "The failure of Pre-flight - the cluster validates before anything changes: kops validate cluster %s did not pass: " % CANARY
    assert reason.startswith(validation + "Node %s of InstanceGroup nodes-us-east-1a: " % worker), reason
    [dump] = (tmp_path / "diagnostics").iterdir()  # the role's diagnostics of the failed canary
    assert dump.name.startswith(CANARY + "-") and worker in dump.read_text()
    assert state["clusters"][WAVE]["state"] == "pending", state["clusters"]
    where = first.result("Fleet update run - where each cluster stands")["msg"]
    assert "%s: not started: the run halted: 1 cluster(s) failed (%s), more than max_failures 0" % (WAVE, CANARY) in where, where
    # nothing changed on either cluster: the spec versions and the instances are as they were
    assert [fleet.stored_version(emulator, BUCKET, n) for n in (CANARY, WAVE)] == ["1.34.1", "1.34.1"]
    assert {name: instances(emulator, name) for name in (CANARY, WAVE)} == original

    # the fix: the worker is Ready again (knob cleared above); the same run resumes from the canary stage
    wait_for(lambda: node_ready(core, worker))
    second = run("job-2")
    assert second.rc == 0, [(n, r.get("msg")) for n, r in second.results if r.get("failed")] or second.stdout[-3000:]
    state = record(emulator)
    assert {c: (e["state"], e["attempts"]) for c, e in state["clusters"].items()} == {CANARY: ("done", 2), WAVE: ("done", 1)}
    starts = [e["cluster"] for e in state["events"] if e["event"] == "start"]
    assert starts == [CANARY, CANARY, WAVE], starts
    assert [fleet.stored_version(emulator, BUCKET, n) for n in (CANARY, WAVE)] == ["1.35.0", "1.35.0"]
    for name in (CANARY, WAVE):
        after = instances(emulator, name)
        # each original instance replaced exactly once: terminated, and as many new ones running
        assert {i: after[i] for i in original[name]} == dict.fromkeys(original[name], "terminated"), (name, after)
        assert sorted(s for i, s in after.items() if i not in original[name]) == ["running", "running"], (name, after)
        kubelets = sorted(n.status.node_info.kubelet_version for n in kube_world.core(name).list_node().items)
        assert kubelets == ["v1.35.0", "v1.35.0"], (name, kubelets)
