"""Issue 26: the upgrade role in kOps' 1.31+ order on the local world (real kops, real control plane, node agent).

The HA cluster is upgraded 1.34.1 -> 1.35.0 by the role with a kubeconfig and only the play's module_defaults (no
kops_* role variables, issue 33 item 1), while the Auto Scaling group replaces a worker in the middle of the
control-plane roll (a spot interruption): a watcher polling the Nodes every 0.2 s never sees a Ready worker whose
kubelet is newer than the oldest control-plane node, the replacement comes up on the old kubelet, and at the end every
node runs the target. Then the old order (one `kops update cluster --yes` for every group without the kubeconfig, as
the role did before) with the same interruption: the replacement gets the new kubelet under the old control plane, the
node agent refuses it as a real 1.31+ kubelet is refused, and kops' validation fails naming that node."""

import threading
import time

import pytest

from conftest import CLUSTER, live_world
from harness.kops_env import LIVE_UPGRADE
from harness.kubeworld_runner import wait_for

pytestmark = pytest.mark.kops
FAST = LIVE_UPGRADE
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


def minor(version):
    return tuple(int(p) for p in version.lstrip("v").split(".")[:2])


@pytest.fixture(scope="module")
def live(emulator_session, kops_dns, ssh_public_key, kube_world, tmp_path_factory):
    """The guide's HA cluster (3 control-plane nodes, 2 workers) at 1.34.1, applied, with its control plane and an
    exported admin kubeconfig."""
    kubeconfig = str(tmp_path_factory.mktemp("kube") / "config")
    world = live_world(emulator_session, kops_dns, ssh_public_key, kube_world, kubeconfig, nodes=5)
    yield world
    emulator_session.reset()


class SkewWatcher(threading.Thread):
    """Reads the Nodes every 0.2 s; records each Ready worker whose kubelet is newer (by minor version) than the
    oldest control-plane kubelet at that moment, and each Node seen without a kubelet version, and the kubelet each
    node was first seen with."""

    def __init__(self, core):
        super().__init__(daemon=True)
        self.core, self.stop, self.samples = core, threading.Event(), 0
        self.violations, self.first_seen = [], {}

    def run(self):
        while not self.stop.is_set():
            try:
                nodes = self.core.list_node().items
            except Exception:
                nodes = None
            if nodes:
                self.samples += 1
                control_plane = [n.status.node_info.kubelet_version for n in nodes if CONTROL_PLANE_LABEL in (n.metadata.labels or {})]
                oldest = min((minor(v) for v in control_plane if v), default=None)
                for node in nodes:
                    version = node.status.node_info.kubelet_version
                    self.first_seen.setdefault(node.metadata.name, version)
                    if not version:  # a kubelet registers its Node with its version (pkg/kubelet/kubelet_node_status.go)
                        self.violations.append((node.metadata.name, "registered without a kubelet version", control_plane))
                        continue
                    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
                    if oldest and CONTROL_PLANE_LABEL not in (node.metadata.labels or {}) and ready and minor(version) > oldest:
                        self.violations.append((node.metadata.name, version, control_plane))
            self.stop.wait(0.2)


def running(world):
    """``{instance id: (group, launch time)}`` of the cluster's running instances."""
    found = {}
    for reservation in world.emulator.client("ec2").describe_instances(
        Filters=[{"Name": "tag:KubernetesCluster", "Values": [CLUSTER]}, {"Name": "instance-state-name", "Values": ["running", "pending"]}]
    )["Reservations"]:
        for inst in reservation["Instances"]:
            found[inst["InstanceId"]] = ({t["Key"]: t["Value"] for t in inst["Tags"]}["kops.k8s.io/instancegroup"], inst["LaunchTime"])
    return found


def interrupt_a_worker_when(world, condition, timeout=600):
    """A thread that waits for ``condition()`` and then has the Auto Scaling group replace one worker (terminated
    without a decrement, as after a spot interruption or a failed health check). Its ``replaced`` is
    ``(old instance id, new instance id)`` once the replacement is running."""
    result = {}

    def work():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not condition():
            time.sleep(0.5)
        before = running(world)
        worker = sorted(i for i, (group, _t) in before.items() if group.startswith("nodes-"))[0]
        world.emulator.client("autoscaling").terminate_instance_in_auto_scaling_group(InstanceId=worker, ShouldDecrementDesiredCapacity=False)
        group = before[worker][0]
        wait_for(lambda: [i for i, (g, _t) in running(world).items() if g == group and i not in before], timeout=60)
        result["replaced"] = (worker, [i for i, (g, _t) in running(world).items() if g == group and i not in before][0])

    thread = threading.Thread(target=work, daemon=True)
    thread.result = result
    thread.start()
    return thread


def node_of(world, instance_id):
    return next(n for n in world.core.list_node().items if n.spec.provider_id.endswith("/" + instance_id))


def test_role_upgrades_the_control_plane_first_and_a_replaced_worker_keeps_the_old_kubelet(live):
    start = running(live)
    control_plane_started = lambda: any(g.startswith("control-plane-") for i, (g, _t) in running(live).items() if i not in start)  # noqa: E731
    interruption = interrupt_a_worker_when(live, control_plane_started)
    watcher = SkewWatcher(live.core)
    watcher.start()
    try:
        run = live.play(
            [
                {
                    "name": "upgrade",
                    "ansible.builtin.include_role": {"name": "kopsible.kops.upgrade"},
                    "vars": dict(FAST, upgrade_cluster=CLUSTER, upgrade_kubernetes_version="1.35.0", upgrade_kubeconfig=live.kubeconfig),
                }
            ]
        )
    finally:
        watcher.stop.set()
        watcher.join()
        interruption.join(120)
    assert not run.failed, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-3000:]
    assert watcher.samples > 50 and watcher.violations == [], watcher.violations[:5]

    # the replacement came up during the control-plane roll on the old kubelet, and was rolled with the workers
    old, new = interruption.result["replaced"]
    assert watcher.first_seen[node_of_name(watcher, live, new)] == "v1.34.1", watcher.first_seen
    after = live.core.list_node().items
    assert sorted(n.status.node_info.kubelet_version for n in after) == ["v1.35.0"] * 5

    # kOps' order: the control plane alone, then every group, then prune
    applies = [r for n, r in run.results if r.get("kops_invocations") and any("--yes" in c["argv"] and "update" in c["argv"] for c in r["kops_invocations"])]
    updates = [next(c["argv"] for c in r["kops_invocations"] if "--yes" in c["argv"] and "update" in c["argv"]) for r in applies]
    assert updates[0][updates[0].index("--instance-group-roles") + 1] == "control-plane,apiserver", updates
    assert all("--instance-group-roles" not in argv for argv in updates[1:]), updates
    report = next(r for n, r in run.results if n.endswith("Report the upgrade"))["msg"]
    assert report["version"] == "1.34.1 -> 1.35.0" and report["hops"] == ["1.35.0"]
    assert (report["control_plane_rolls"], report["worker_rolls"]) == (1, 1)
    phases = {p["phase"]: p for p in report["phases"]}
    cp_phase = phases["control plane to 1.35.0"]
    assert sorted(cp_phase["groups"]) == ["control-plane-us-east-1a", "control-plane-us-east-1b", "control-plane-us-east-1c"]
    names = {n.metadata.name: CONTROL_PLANE_LABEL in (n.metadata.labels or {}) for n in after}
    assert {v for n, v in cp_phase["kubelets"].items() if names.get(n)} == {"v1.35.0"}
    assert {v for n, v in cp_phase["kubelets"].items() if n in names and not names[n]} <= {"v1.34.1"}
    assert sorted(phases["workers"]["groups"]) == ["nodes-us-east-1a", "nodes-us-east-1b"]
    assert [g["phase"] for g in report["groups"]] == ["control plane to 1.35.0"] * 3 + ["workers"] * 2
    prune = next(r for n, r in run.results if n.endswith("(kops update cluster --prune --yes)"))
    assert any("--prune" in c["argv"] for c in prune["kops_invocations"]), prune["kops_invocations"]
    state = live.kube.state()["clusters"][CLUSTER]
    assert state["agent_untraced"] == [] and state["agent_skew_refusals"] == {}, state
    # dns-controller's kops-controller record followed the roll: the three new control-plane instances' addresses
    cp_ips = sorted(
        inst["PrivateIpAddress"]
        for r in live.emulator.client("ec2").describe_instances(Filters=[{"Name": "instance-id", "Values": list(running(live))}])["Reservations"]
        for inst in r["Instances"]
        if running(live)[inst["InstanceId"]][0].startswith("control-plane-")
    )
    assert len(cp_ips) == 3 and not {i for i, (g, _t) in running(live).items() if g.startswith("control-plane-")} & set(start)

    def kops_controller_record():
        records = live.emulator.client("route53").list_resource_record_sets(HostedZoneId=live.zone_id)["ResourceRecordSets"]
        return [sorted(v["Value"] for v in r["ResourceRecords"]) for r in records if r["Name"] == "kops-controller.internal.%s." % CLUSTER]

    wait_for(lambda: kops_controller_record() == [cp_ips], timeout=10)

    # a second run: nothing to do
    again = live.play(
        [
            {
                "name": "upgrade",
                "ansible.builtin.include_role": {"name": "kopsible.kops.upgrade"},
                "vars": dict(FAST, upgrade_cluster=CLUSTER, upgrade_kubernetes_version="1.35.0", upgrade_kubeconfig=live.kubeconfig),
            }
        ]
    )
    assert not again.failed, [(n, r.get("msg")) for n, r in again.results if r.get("failed")]
    assert [n for n, r in again.results if r.get("changed")] == [], [n for n, r in again.results if r.get("changed")]


def node_of_name(watcher, world, instance_id):
    """The name of the Node of ``instance_id`` (the agent names Nodes by the instance's private DNS name)."""
    for reservation in world.emulator.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]:
        for inst in reservation["Instances"]:
            return inst["PrivateDnsName"]
    raise AssertionError(instance_id)


def test_the_old_order_puts_a_new_kubelet_under_the_old_control_plane_and_validation_names_it(live):
    """Without the fix: one kops update cluster --yes for every group, no kubeconfig (kops cannot read the running
    control plane, so every launch template moves to 1.36.1 at once), then a worker replaced before any roll."""
    applied = live.play([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.36.1", "apply": True}}]).result("u")
    assert not applied.get("failed"), applied.get("msg")
    interruption = interrupt_a_worker_when(live, lambda: True)
    interruption.join(120)
    _old, new = interruption.result["replaced"]
    name = node_of_name(None, live, new)
    wait_for(lambda: any(n.metadata.name == name for n in live.core.list_node().items), timeout=60)
    node = node_of(live, new)
    ready = [c for c in node.status.conditions if c.type == "Ready"][0]
    assert node.status.node_info.kubelet_version == "v1.36.1"
    assert (ready.status, ready.reason) == ("False", "KubeletVersionSkew") and "newer than kube-apiserver v1.35" in ready.message, ready
    validated = live.play(
        [{"name": "v", "kopsible.kops.kops_cluster": {"name": CLUSTER, "validate": True, "validation_timeout": "20s"}, "ignore_errors": True}]
    ).result("v")
    assert validated.get("failed") and name in validated["msg"], validated.get("msg")
    assert any(f.get("name") == name for f in validated["validation"]["failures"]), validated["validation"]["failures"]
    assert live.kube.state()["clusters"][CLUSTER]["agent_skew_refusals"].get(name), live.kube.state()["clusters"][CLUSTER]
