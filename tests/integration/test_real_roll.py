"""Rolling updates that drain for real: kops' own rolling update (not --cloudonly) against the emulated
cluster's real control plane, with a Deployment under a PodDisruptionBudget so that evictions and PDB waits
are real. One HA cluster (3 control-plane nodes, 2 workers) and its workload are shared by the tests of
this file, in order: the upgrade 1.34.1 -> 1.35.0, a PDB that allows no disruption, a validation failure
mid-roll, Ctrl-C mid-drain, a scale-down without a kubeconfig (not drained) and one with it (drained)."""

import json
import os
import re
import signal
import threading
import time

import pytest
from test_kube_world import running_instances

from conftest import BUCKET, CLUSTER, KopsWorld
from harness.kubeworld_runner import wait_for

pytestmark = pytest.mark.kops
FAST = dict(
    control_plane_interval="2s", node_interval="2s", bastion_interval="2s", validate_count=1, validation_timeout="5m", drain_timeout="5m", post_drain_delay="1s"
)
MIN_AVAILABLE = 4


@pytest.fixture(scope="module")
def live(emulator_session, kops_dns, ssh_public_key, kube_world, tmp_path_factory):
    """The guide's HA cluster, applied, with its control plane, an exported admin kubeconfig and a Deployment
    of 6 pods under a PodDisruptionBudget minAvailable 4."""
    import kubernetes

    from harness.playbook import run_playbook

    emulator_session.reset()
    world = KopsWorld(emulator_session, kops_dns, ssh_public_key)
    world.kube = kube_world
    world.kubeconfig = str(tmp_path_factory.mktemp("kube") / "config")
    world.play = lambda tasks, **kw: run_playbook(tasks, emulator=world.emulator, kops=world.kops, resolv_conf=world.dns.resolv_conf, **kw)
    created = world.play([{"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    kube_world.wait_cluster(CLUSTER, timeout=120, nodes=5)
    api = kube_world.api_client(CLUSTER)
    world.core, world.apps, world.policy = (kubernetes.client.CoreV1Api(api), kubernetes.client.AppsV1Api(api), kubernetes.client.PolicyV1Api(api))
    workload = world.play(
        [
            {"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": world.kubeconfig}},
            {
                "name": "w",
                "kubernetes.core.k8s": {
                    "kubeconfig": world.kubeconfig,
                    "wait": True,
                    "wait_condition": {"type": "Available", "status": "True"},
                    "definition": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": "web", "namespace": "default"},
                        "spec": {
                            "replicas": 6,
                            "selector": {"matchLabels": {"app": "web"}},
                            "template": {
                                "metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]},
                            },
                        },
                    },
                },
            },
            {
                "name": "p",
                "kubernetes.core.k8s": {
                    "kubeconfig": world.kubeconfig,
                    "definition": {
                        "apiVersion": "policy/v1",
                        "kind": "PodDisruptionBudget",
                        "metadata": {"name": "web", "namespace": "default"},
                        "spec": {"minAvailable": MIN_AVAILABLE, "selector": {"matchLabels": {"app": "web"}}},
                    },
                },
            },
        ]
    )
    assert not workload.failed, workload.stdout[-3000:]
    wait_for(lambda: world.policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 6)
    yield world
    emulator_session.reset()


def roll(world, label="roll", **options):
    options.setdefault("cluster", CLUSTER)
    options.setdefault("kubeconfig", world.kubeconfig)
    for key, value in FAST.items():
        options.setdefault(key, value)
    return world.play([{"name": label, "kopsible.kops.rolling_update": options, "ignore_errors": True}]).result(label)


class ReadyWatcher(threading.Thread):
    """Counts the workload's Ready pods every 0.2 s while a roll runs; ``minimum`` is the lowest count seen."""

    def __init__(self, core):
        super().__init__(daemon=True)
        self.core, self.minimum, self.samples, self.stop = core, None, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                pods = self.core.list_namespaced_pod("default", label_selector="app=web").items
                ready = sum(
                    1
                    for p in pods
                    if p.metadata.deletion_timestamp is None and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                )
                self.minimum = ready if self.minimum is None else min(self.minimum, ready)
                self.samples += 1
            except Exception:
                pass
            self.stop.wait(0.2)


def owned_by_daemonset(pod):
    return any(r.kind == "DaemonSet" and r.controller for r in pod.metadata.owner_references or [])


def instances(world):
    """``{group: [instance ids]}`` of running instances, read from the emulator."""
    found = {}
    ec2 = world.emulator.client("ec2")
    for reservation in ec2.describe_instances(
        Filters=[{"Name": "tag:KubernetesCluster", "Values": [CLUSTER]}, {"Name": "instance-state-name", "Values": ["running"]}]
    )["Reservations"]:
        for inst in reservation["Instances"]:
            group = {t["Key"]: t["Value"] for t in inst["Tags"]}["kops.k8s.io/instancegroup"]
            found.setdefault(group, []).append(inst["InstanceId"])
    return {g: sorted(ids) for g, ids in found.items()}


def test_upgrade_drains_every_node_in_order_and_keeps_the_budget(live):
    upgraded = live.play([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.35.0", "apply": True}}]).result("u")
    assert not upgraded.get("failed"), upgraded.get("msg")
    before = instances(live)
    # kops' system DaemonSets run on the nodes about to roll (cilium on all, kops-controller on the control plane)
    daemon_pods = {p.metadata.namespace + "/" + p.metadata.name for p in live.core.list_namespaced_pod("kube-system").items if owned_by_daemonset(p)}
    assert len([p for p in daemon_pods if p.startswith("kube-system/cilium-")]) == 5 and len(daemon_pods) == 8, daemon_pods
    watcher = ReadyWatcher(live.core)
    watcher.start()
    try:
        rolled = roll(live)
    finally:
        watcher.stop.set()
        watcher.join()
    assert not rolled.get("failed"), rolled.get("msg")
    order = [g["name"] for g in rolled["rolled"]]
    # kops' order: the control plane one group at a time, then the nodes (pkg/instancegroups/rollingupdate.go)
    assert order == ["control-plane-us-east-1a", "control-plane-us-east-1b", "control-plane-us-east-1c", "nodes-us-east-1a", "nodes-us-east-1b"]
    after = instances(live)
    for group in rolled["rolled"]:
        assert group["done"] and [i["old"] for i in group["instances"]] == before[group["name"]]
        assert [i["new"] for i in group["instances"]] == after[group["name"]]
        assert not set(after[group["name"]]) & set(before[group["name"]])
        assert group["nodes_drained"] == [i["node"] for i in group["instances"]]
        for _node, pods in group["evicted"].items():
            assert len(pods) == len(set(pods))  # each pod evicted at most once per node it lived on
            assert not set(pods) & daemon_pods  # kops' drain leaves DaemonSet pods (IgnoreAllDaemonSets)
    workers = [g for g in rolled["rolled"] if g["name"].startswith("nodes-")]
    assert sum(g["pods_evicted"] for g in workers) >= 6  # every pod lived on a worker that was drained
    assert all(g["pods_evicted"] == 0 for g in rolled["rolled"] if g["name"].startswith("control-plane"))
    assert rolled["remaining"] == []
    assert watcher.samples > 20 and watcher.minimum >= MIN_AVAILABLE, (watcher.samples, watcher.minimum)
    nodes = live.core.list_node().items
    assert sorted(n.status.node_info.kubelet_version for n in nodes) == ["v1.35.0"] * 5
    assert not any(n.spec.unschedulable for n in nodes)
    again = roll(live)
    assert not again.get("failed") and again["changed"] is False and again["would_roll"] == []


def test_budget_allowing_no_disruption(live):
    """The pre-flight gate stops before anything rolls; with ignore_pdb kops' drain waits and fails at
    drain_timeout naming the blocked pod (fail_on_drain_error, kops' default); relaxed, the re-run rolls
    only what remains."""
    live.policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"minAvailable": 6}})
    wait_for(lambda: live.policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed == 0)
    before = instances(live)
    target = dict(force=True, instance_groups=["nodes-us-east-1a"])
    gated = roll(live, **target)
    assert gated.get("failed") and "default/web" in gated["msg"] and "nothing was rolled" in gated["msg"]
    assert instances(live) == before
    blocked = roll(live, ignore_pdb=True, drain_timeout="20s", **{k: v for k, v in target.items()})
    assert blocked.get("failed")
    assert "drain" in blocked["msg"].lower(), blocked["msg"]
    group = blocked["rolled"][0]
    assert group["name"] == "nodes-us-east-1a" and not group["done"]
    assert group["evictions_refused"] >= 2
    assert {r["reason"] for r in group["refusals"]} == {"Cannot evict pod as it would violate the pod's disruption budget."}
    assert blocked["remaining"] == ["nodes-us-east-1a"]
    # stopped part-way: the old node is left cordoned (its instance detached) until the re-run
    assert any(n.spec.unschedulable for n in live.core.list_node().items)
    live.policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"minAvailable": MIN_AVAILABLE}})
    wait_for(lambda: live.policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed > 0)
    finished = roll(live, cloudonly=False, instance_groups=["nodes-us-east-1a"], force=True)
    assert not finished.get("failed"), finished.get("msg")
    assert [g["name"] for g in finished["rolled"]] == ["nodes-us-east-1a"]
    # converged: no node left cordoned, one Ready node per running instance, all 6 pods Running
    wait_for(lambda: not any(n.spec.unschedulable for n in live.core.list_node().items))
    running = {i for ids in instances(live).values() for i in ids}
    assert {n.spec.provider_id.rsplit("/", 1)[-1] for n in live.core.list_node().items} == running
    wait_for(lambda: sum(1 for p in live.core.list_namespaced_pod("default", label_selector="app=web").items if p.status.phase == "Running") == 6)


LOCK_KEY = ".kopsible-locks/%s.json" % CLUSTER
NOTE_KEY = ".kopsible-locks/%s.interrupted.json" % CLUSTER


def kops_processes(emulator):
    """The pids of kops processes still running a rolling update of the cluster against ``emulator`` (read from /proc:
    another worker's test, or another run on the machine, may roll a cluster of the same name against its own)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
            if not (argv and os.path.basename(argv[0]) == b"kops" and b"rolling-update" in argv and CLUSTER.encode() in argv):
                continue
            with open("/proc/%s/environ" % pid, "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if ("S3_ENDPOINT=" + emulator.url).encode() in environ:
            found.append(int(pid))
    return found


def store_object(world, key):
    """The state store object ``key`` (parsed JSON), or None when it does not exist."""
    s3 = world.emulator.client("s3")
    try:
        return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    except s3.exceptions.NoSuchKey:
        return None


def detached(world):
    """``{instance id: Auto Scaling group}`` of the cluster's running instances kops tagged as detached, read from the
    emulator (upup/pkg/fi/cloudup/awsup/aws_cloud.go tagNameDetachedInstance)."""
    tagged = running_instances(world, tag="kops.k8s.io/detached-from-asg")
    return {i: asg for i, asg in tagged.items() if asg is not None}


def test_ctrl_c_mid_drain_says_what_it_left_and_the_rerun_converges(live):
    """Issue 33 item 8, issue 29 item 6. Ctrl-C while kops' drain waits on a budget that allows no disruption: the
    terminal's SIGINT reaches ansible-playbook, whose worker passes it to the module's process group (ansible-core
    executor/process/worker.py ``_term``) and exits without waiting for the task's result. The module stops kops (in
    its own session, Ctrl-C does not reach it), stores the interruption note naming the detached instance and releases
    the lock; nothing is evicted while the budget allows no disruption. The re-run of the same task warns with the
    note, drains under the relaxed budget, terminates the detached instance and deletes the note; the Ready pods
    never drop below minAvailable."""
    live.policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"minAvailable": 6}})
    wait_for(lambda: live.policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed == 0)
    task = dict(force=True, instance_groups=["nodes-us-east-1a"], ignore_pdb=True)
    pods = lambda: sorted(p.metadata.uid for p in live.core.list_namespaced_pod("default", label_selector="app=web").items)  # noqa: E731
    uids = pods()
    started, outcome = [], {}
    progress = os.path.join(os.path.dirname(live.kubeconfig), "roll-progress.log")
    options = dict(FAST, cluster=CLUSTER, kubeconfig=live.kubeconfig, progress_file=progress, **task)
    play = threading.Thread(target=lambda: outcome.update(run=live.play([{"name": "roll", "kopsible.kops.rolling_update": options}], on_start=started.append)))
    watcher = ReadyWatcher(live.core)
    watcher.start()
    play.start()
    try:
        # kops is draining: the group's old node cordoned (its instance detached, a replacement launched), evictions refused
        wait_for(lambda: any(n.spec.unschedulable for n in live.core.list_node().items) and detached(live), timeout=180)
        time.sleep(6)  # kops retries a refused eviction every 5 s (pkg/drain)
        # issue 33 item 11: the steps are in the progress file while the task still runs, one line each, kops' order
        with open(progress) as handle:
            steps = handle.read().splitlines()
        keys = ("Detaching instance", "Draining the node", "evicting pod", "error when evicting")
        kinds = [k for line in steps for k in keys if k in line]
        assert kinds[:3] == ["Detaching instance", "Draining the node", "evicting pod"] and "error when evicting" in kinds, steps
        os.kill(started[0].pid, signal.SIGINT)  # what a terminal sends ansible-playbook on Ctrl-C
        play.join(120)
        assert not play.is_alive()
        run = outcome["run"]
        assert run.rc == 99 and "User interrupted execution" in run.stderr, (run.rc, run.stderr[-2000:])
        # the module's clean-up goes on after the controller left: wait for it to release the lock
        wait_for(lambda: store_object(live, LOCK_KEY) is None, timeout=60)
        assert kops_processes(live.emulator) == []
        note = store_object(live, NOTE_KEY)
        left = detached(live)
        # the module records the first stop signal it got. ansible-core's controller passes SIGINT to the worker and, as
        # it exits, terminates any worker still alive (task_queue_manager.py _cleanup_processes: SIGTERM, which the
        # worker passes on too, WORKER_SHUTDOWN_POLL_COUNT 0); CI once saw SIGTERM first (stop 49), 45 tries under load
        # here saw SIGINT. Either is the user's Ctrl-C; the note names the one that came.
        assert note and note["signal"] in ("SIGINT", "SIGTERM") and note["module"].endswith("rolling_update"), note
        assert "interrupted by %s: kops rolling-update cluster --yes was stopped" % note["signal"] in note["msg"], note["msg"]
        assert len(left) == 1 and all(i in note["msg"] and i in " ".join(note["left"]) for i in left), (left, note)
        assert "kops rolling-update cluster --yes was stopped" in note["msg"], note["msg"]
        # what the run wrote before the note: its lock and the kops roll it stopped (SIGTERM: exit -15)
        assert any(w.startswith("lock s3://%s/%s" % (BUCKET, LOCK_KEY)) for w in note["written"]), note["written"]
        assert "kops rolling-update cluster --yes (exit -15)" in note["written"], note["written"]
        # the budget allowed no disruption: nothing was evicted, the same 6 pods Ready throughout (the kill-mid-drain
        # case once "evicted what the budget refused": the report counted each refused attempt as an eviction, 47841e4)
        assert watcher.minimum == 6 and pods() == uids, (watcher.minimum, pods(), uids)
    finally:
        live.policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"minAvailable": MIN_AVAILABLE}})
    wait_for(lambda: live.policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed > 0)
    try:
        rerun = live.play([{"name": "roll", "kopsible.kops.rolling_update": dict(FAST, cluster=CLUSTER, kubeconfig=live.kubeconfig, **task)}])
    finally:
        watcher.stop.set()
        watcher.join()
    again = rerun.result("roll")
    assert not again.get("failed"), again.get("msg")
    # the action plugin showed each step in the play's output as it happened (no progress_file given by the task)
    shown = [line.split(" | ", 1)[1] for line in rerun.stdout.splitlines() if line.startswith(CLUSTER + " | ")]
    assert any("Draining the node" in s for s in shown) and any("Stopping instance" in s for s in shown), rerun.stdout[-3000:]
    assert any(s.endswith("Validating the cluster.") for s in shown), shown
    assert again["invocation"]["module_args"]["progress_file"] is None
    earlier = again["state_store_safety"]["interrupted_run"]
    assert earlier == note

    assert any("an earlier run was interrupted" in w and list(left)[0] in w for w in again.get("warnings", [])), again.get("warnings")
    assert again["detached"] == [] and detached(live) == {}
    assert list(left)[0] in [i["old"] for g in again["rolled"] for i in g["instances"]] or list(left)[0] not in {
        i for ids in instances(live).values() for i in ids
    }
    assert store_object(live, NOTE_KEY) is None
    assert watcher.minimum >= MIN_AVAILABLE, watcher.minimum
    wait_for(lambda: not any(n.spec.unschedulable for n in live.core.list_node().items))
    running = {i for ids in instances(live).values() for i in ids}
    wait_for(lambda: {n.spec.provider_id.rsplit("/", 1)[-1] for n in live.core.list_node().items} == running)
    quiet = roll(live, cluster=CLUSTER, instance_groups=["nodes-us-east-1a"])
    assert not quiet.get("failed") and quiet["changed"] is False and quiet["state_store_safety"]["interrupted_run"] is None


def test_validation_failure_mid_roll_stops_the_roll(live):
    """The replacement node of nodes-us-east-1a stays NotReady: the roll stops at that group (fail closed),
    naming the node; nodes-us-east-1b is untouched; once the node is Ready the re-run finishes."""
    before = instances(live)
    live.kube.knobs(CLUSTER, not_ready_new={"nodes-us-east-1a": time.time()})
    try:
        stopped = roll(live, force=True, instance_group_roles=["node"], validation_timeout="30s")
        assert stopped.get("failed")
        assert "validat" in stopped["msg"].lower(), stopped["msg"]
        first = stopped["rolled"][0]
        assert first["name"] == "nodes-us-east-1a"
        new = [i for i in instances(live)["nodes-us-east-1a"] if i not in before["nodes-us-east-1a"]]
        assert new and any("not ready" in m or new[0] in m for m in first["validation_failures"]), first["validation_failures"]
        assert instances(live)["nodes-us-east-1b"] == before["nodes-us-east-1b"]
        assert "nodes-us-east-1b" in stopped["remaining"]
    finally:
        live.kube.knobs(CLUSTER)
    finished = roll(live, force=False, instance_group_roles=["node"])
    assert not finished.get("failed"), finished.get("msg")
    wait_for(lambda: all(n.spec.unschedulable is not True for n in live.core.list_node().items))


def test_scale_down_is_not_drained_by_kops(live):
    """kops does not drain on a scale-down: the Auto Scaling group terminates the instance; the pods that lived
    on it go with its Node and the Deployment recreates them elsewhere (documented in docs/rolling-updates.md)."""
    doomed = instances(live)["nodes-us-east-1b"]
    scaled = live.play(
        [{"name": "s", "kopsible.kops.kops_instancegroup": {"cluster": CLUSTER, "name": "nodes-us-east-1b", "min_size": 0, "max_size": 0, "apply": True}}]
    ).result("s")
    assert not scaled.get("failed"), scaled.get("msg")
    # without a kubeconfig the run names what AWS is about to remove, and says it will not be drained
    assert scaled["scale_down"]["instances"] == doomed and scaled["scale_down"]["drained"] is False
    assert [w for w in scaled.get("warnings", []) if "without a drain" in w and doomed[0] in w]
    wait_for(lambda: "nodes-us-east-1b" not in instances(live))
    wait_for(lambda: not [n for n in live.core.list_node().items if n.metadata.labels.get("kops.k8s.io/instancegroup") == "nodes-us-east-1b"])

    def settled():
        # The pods of the gone Node stay listed (phase Running) until the pod garbage collector deletes them;
        # the Deployment is settled when its 6 Running pods all sit on Nodes that still exist.
        existing = {n.metadata.name for n in live.core.list_node().items}
        pods = live.core.list_namespaced_pod("default", label_selector="app=web").items
        return len(pods) == 6 and all(p.status.phase == "Running" and p.spec.node_name in existing for p in pods)

    wait_for(settled)
    nodes = {p.spec.node_name for p in live.core.list_namespaced_pod("default", label_selector="app=web").items}
    groups = {n.metadata.name: n.metadata.labels["kops.k8s.io/instancegroup"] for n in live.core.list_node().items}
    assert {groups[n] for n in nodes} == {"nodes-us-east-1a"}


def web_pods_on(world, node):
    pods = world.core.list_namespaced_pod("default", label_selector="app=web").items
    return sorted("%s/%s" % (p.metadata.namespace, p.metadata.name) for p in pods if p.spec.node_name == node)


def evictable_pods_on(world, node):
    """The pods a drain of ``node`` evicts: all but DaemonSet and mirror pods (kops' drain helper), e.g. the web pods
    and CoreDNS when it runs there."""
    pods = world.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=" + node).items
    return sorted(
        "%s/%s" % (p.metadata.namespace, p.metadata.name)
        for p in pods
        if not owned_by_daemonset(p) and "kubernetes.io/config.mirror" not in (p.metadata.annotations or {})
    )


def test_scale_down_with_a_kubeconfig_drains_the_instance_aws_would_remove(live):
    """Issue 34: kops_instancegroup given a kubeconfig chooses the instance the Auto Scaling group's termination policy
    removes (OldestInstance here, set as a user would), drains its Node under the PodDisruptionBudget and terminates only
    it, with the desired capacity decremented; check mode names it and touches nothing; a rerun changes nothing. The
    previous test left the whole workload on the one node of nodes-us-east-1a, so the drain must wait for the budget."""
    group, asg_name = "nodes-us-east-1a", "nodes-us-east-1a." + CLUSTER
    up = live.play([{"name": "u", "kopsible.kops.kops_instancegroup": {"cluster": CLUSTER, "name": group, "min_size": 3, "max_size": 3, "apply": True}}])
    assert not up.result("u").get("failed"), up.result("u").get("msg")
    wait_for(lambda: len(instances(live).get(group, [])) == 3)
    ec2, autoscaling = live.emulator.client("ec2"), live.emulator.client("autoscaling")
    launched = {i["InstanceId"]: i["LaunchTime"] for r in ec2.describe_instances(InstanceIds=instances(live)[group])["Reservations"] for i in r["Instances"]}
    oldest = min(launched, key=launched.get)
    wait_for(lambda: len([n for n in live.core.list_node().items if n.metadata.labels.get("kops.k8s.io/instancegroup") == group]) == 3)
    node_of = {n.spec.provider_id.rsplit("/", 1)[-1]: n.metadata.name for n in live.core.list_node().items}
    assert len(web_pods_on(live, node_of[oldest])) == 6  # the test's premise: the budget (minAvailable 4) lets 2 go at a time
    on_oldest = evictable_pods_on(live, node_of[oldest])
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg_name, TerminationPolicies=["OldestInstance"])
    options = {"cluster": CLUSTER, "name": group, "min_size": 2, "max_size": 2, "apply": True, "kubeconfig": live.kubeconfig, "drain_timeout": "5m"}

    # the preview through the instancegroups role (scale_cluster.yml's): its kubeconfig reaches the module, so no
    # "without a drain" warning
    role_vars = dict(
        instancegroups_cluster=CLUSTER,
        instancegroups_list=[{"name": group, "min_size": 2, "max_size": 2}],
        instancegroups_kubeconfig=live.kubeconfig,
        instancegroups_drain_timeout="5m",
        kops_state_store="s3://" + BUCKET,
        kops_binary=live.kops["kops_binary"],
        kops_env=live.kops["kops_env"],
    )
    run = live.play([{"name": "r", "ansible.builtin.include_role": {"name": "kopsible.kops.instancegroups"}, "vars": role_vars}], check=True)
    assert run.rc == 0, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-2000:]
    preview = [r for n, r in run.results if n.endswith("Converge the InstanceGroups")][0]["results"][0]
    assert not preview.get("failed") and preview["changed"] is True, preview.get("msg")
    assert not [w for w in preview.get("warnings", []) if "without a drain" in w], preview["warnings"]
    assert preview["scale_down"]["instances"] == [oldest] and preview["scale_down"]["termination_policies"] == ["OldestInstance"]
    assert preview["scale_down"]["drained"] is False and preview["scale_down"]["instances_terminated"] == []
    asg = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name])["AutoScalingGroups"][0]
    assert (asg["DesiredCapacity"], asg["MinSize"], asg["MaxSize"]) == (3, 3, 3)
    assert live.core.read_node(node_of[oldest]).spec.unschedulable is not True

    watcher = ReadyWatcher(live.core)
    watcher.start()
    try:
        done = live.play([{"name": "d", "kopsible.kops.kops_instancegroup": options}]).result("d")
    finally:
        watcher.stop.set()
        watcher.join()
    assert not done.get("failed"), done.get("msg")
    report = done["scale_down"]
    assert report["instances"] == report["instances_terminated"] == [oldest]
    assert report["drained"] is True and report["nodes_drained"] == [node_of[oldest]]
    assert report["pods_evicted"] == on_oldest
    assert report["budget_refusals"] >= 1  # the API server refused evictions past the budget, and they were retried
    assert watcher.samples and watcher.minimum >= MIN_AVAILABLE, (watcher.minimum, watcher.samples)
    asg = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name])["AutoScalingGroups"][0]
    assert (asg["DesiredCapacity"], asg["MinSize"], asg["MaxSize"]) == (2, 2, 2)
    assert instances(live)[group] == sorted(i for i in launched if i != oldest)
    assert ec2.describe_instances(InstanceIds=[oldest])["Reservations"][0]["Instances"][0]["State"]["Name"] in ("shutting-down", "terminated")
    wait_for(lambda: node_of[oldest] not in {n.metadata.name for n in live.core.list_node().items})
    wait_for(lambda: len([p for p in live.core.list_namespaced_pod("default", label_selector="app=web").items if p.status.phase == "Running"]) == 6)

    again = live.play([{"name": "a", "kopsible.kops.kops_instancegroup": options}]).result("a")
    assert not again.get("failed") and again["changed"] is False and "scale_down" not in again, again.get("msg")


def slow_pod(name, node):
    """A bare pod on ``node`` whose preStop hook sleeps 60 s within a 60 s grace period (the kubelet's sleep action):
    its graceful deletion takes 60 s."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "slow"}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "lifecycle": {"preStop": {"sleep": {"seconds": 60}}}}],
        },
    }


class DeletionWatcher(threading.Thread):
    """Records, every 0.2 s, when pod ``name`` (default namespace) began terminating and when it was gone, and when
    Node ``node`` was gone (monotonic seconds)."""

    def __init__(self, core, name, node):
        super().__init__(daemon=True)
        self.core, self.name, self.node, self.stop = core, name, node, threading.Event()
        self.terminating = self.pod_gone = self.node_gone = None

    def run(self):
        while not self.stop.is_set():
            now = time.monotonic()
            try:
                pods = self.core.list_namespaced_pod("default", field_selector="metadata.name=" + self.name).items
                if pods and pods[0].metadata.deletion_timestamp and self.terminating is None:
                    self.terminating = now
                if not pods and self.pod_gone is None:
                    self.pod_gone = now
                if self.node_gone is None and self.node not in {n.metadata.name for n in self.core.list_node().items}:
                    self.node_gone = now
            except Exception:
                pass
            self.stop.wait(0.2)


def test_a_drain_waits_for_the_termination_grace_period_and_drain_timeout_cuts_it(live):
    """Issue 30: the node agent stops a pod as a kubelet does (preStop, SIGTERM, grace period), so kops' drain of a
    node running a pod with a 60 s preStop sleep waits those 60 s before the instance is terminated; a drain_timeout
    shorter than that fails the roll, naming the pod, and replaces nothing more.

    The first roll's replacements join 20 s after their launch (knob ``join_delay``), ten times the roll's 2 s
    node interval, about the ratio on AWS (a node joins in 1-3 minutes, kops' default interval is 15 s): kops'
    validation names each replacement that has not joined yet and the roll waits for it."""
    group = "nodes-us-east-1a"
    nodes = sorted(n.metadata.name for n in live.core.list_node().items if n.metadata.labels.get("kops.k8s.io/instancegroup") == group)
    assert len(nodes) == 2, nodes
    before = set(instances(live)[group])
    live.core.create_namespaced_pod("default", slow_pod("slow-1", nodes[0]))
    wait_for(lambda: live.core.read_namespaced_pod("slow-1", "default").status.phase == "Running")
    watcher = DeletionWatcher(live.core, "slow-1", nodes[0])
    watcher.start()
    live.kube.knobs(CLUSTER, join_delay={group: 20})
    started = time.monotonic()
    try:
        rolled = roll(live, instance_groups=[group], force=True)
    finally:
        live.kube.knobs(CLUSTER)
        watcher.stop.set()
        watcher.join()
    seconds = time.monotonic() - started
    assert not rolled.get("failed"), rolled.get("msg")
    [report] = rolled["rolled"]
    assert report["done"] and "default/slow-1" in report["evicted"][nodes[0]]
    replacements = set(instances(live)[group]) - before
    assert len(replacements) == 2, instances(live)
    not_joined = {i for m in report["validation_failures"] for i in re.findall(r'machine "([^"]+)" has not yet joined cluster', m)}
    assert not_joined == replacements, report["validation_failures"]  # kops waited for each replacement to join
    ec2 = live.emulator.client("ec2")
    for reservation in ec2.describe_instances(InstanceIds=sorted(replacements))["Reservations"]:
        for inst in reservation["Instances"]:
            node = next(n for n in live.core.list_node().items if n.spec.provider_id.endswith("/" + inst["InstanceId"]))
            assert (node.metadata.creation_timestamp - inst["LaunchTime"]).total_seconds() >= 19  # the join delay held
    assert watcher.terminating and watcher.pod_gone and watcher.node_gone, vars(watcher)
    assert watcher.pod_gone - watcher.terminating >= 58, watcher.pod_gone - watcher.terminating  # 60 s; timestamps are whole seconds
    assert watcher.node_gone >= watcher.pod_gone  # the instance went only after the drain's wait
    assert seconds >= 60

    new_nodes = sorted(n.metadata.name for n in live.core.list_node().items if n.metadata.labels.get("kops.k8s.io/instancegroup") == group)
    assert not set(new_nodes) & set(nodes)
    live.core.create_namespaced_pod("default", slow_pod("slow-2", new_nodes[0]))
    wait_for(lambda: live.core.read_namespaced_pod("slow-2", "default").status.phase == "Running")
    slow_instance = live.core.read_node(new_nodes[0]).spec.provider_id.rsplit("/", 1)[-1]
    started = time.monotonic()
    cut = roll(live, instance_groups=[group], force=True, drain_timeout="10s")
    seconds = time.monotonic() - started
    try:
        assert cut.get("failed") and "slow-2" in cut["msg"], cut.get("msg")
        assert seconds < 60, seconds  # the drain gave up at its timeout, not when the pod had stopped
        assert slow_instance in instances(live)[group]  # its instance was not replaced
        assert live.core.read_node(new_nodes[0]).spec.unschedulable is True  # what the failed roll left: the node cordoned
    finally:
        live.core.delete_namespaced_pod("slow-2", "default", grace_period_seconds=0)
        for name in new_nodes:
            live.core.patch_node(name, {"spec": {"unschedulable": False}})
