"""rolling_update with the real kops against the emulator: what needs a roll, the PodDisruptionBudget
gate, an interrupted roll and the re-run that finishes it, the no-op."""

import time

import pytest

from conftest import CLUSTER

pytestmark = pytest.mark.kops
FAST = dict(cloudonly=True, control_plane_interval="1s", node_interval="1s", bastion_interval="1s")


def roll_task(label="roll", **options):
    options.setdefault("cluster", CLUSTER)
    return {"name": label, "kopsible.kops.rolling_update": options, "ignore_errors": True}


def test_roll_after_upgrade_gate_interruption_rerun_noop(kops_world, kplay, kube_world, tmp_path):
    kops_world.kube = kube_world
    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    nothing = kplay([roll_task(**FAST)]).result("roll")
    assert nothing["changed"] is False and nothing["would_roll"] == []

    upgraded = kplay([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.35.0", "apply": True}}]).result("u")
    assert not upgraded.get("failed"), upgraded.get("msg")
    before_state = kops_world.emulator.snapshot()
    preview = kplay([roll_task(**FAST)], check=True).result("roll")
    assert preview["changed"] is True
    assert sorted(preview["would_roll"]) == [
        "control-plane-us-east-1a",
        "control-plane-us-east-1b",
        "control-plane-us-east-1c",
        "nodes-us-east-1a",
        "nodes-us-east-1b",
    ]
    assert all(g["status"] == "NeedsUpdate" for g in preview["groups_before"] if g["name"] in preview["would_roll"])
    # kops' order (pkg/instancegroups/rollingupdate.go): the control plane by name, then the nodes by name
    assert [(g["role"], g["name"]) for g in preview["roll_order"]] == [("ControlPlane", "control-plane-us-east-1%s" % z) for z in "abc"] + [
        ("Node", "nodes-us-east-1%s" % z) for z in "ab"
    ]
    after_snapshot = kops_world.emulator.snapshot()
    assert after_snapshot == before_state, kops_world.emulator.snapshot_diff(before_state, after_snapshot)

    old = {name: [i for i, _ in g["instances"]] for name, g in kops_world.groups().items()}
    assert_pdb_gate(kops_world, kplay, preview["would_roll"], old, tmp_path)

    # interrupted: kops is killed (kops_timeout) while it sleeps after the first control-plane instance
    cut = kplay([roll_task(**dict(FAST, control_plane_interval="90s", kops_timeout=12))]).result("roll")
    assert cut.get("failed") and "did not finish within 12s" in cut["msg"], cut.get("msg")
    assert cut["replaced"], "the interrupted roll replaced nothing before it was stopped"
    done_first = sorted(cut["replaced"])
    assert set(done_first) < set(preview["would_roll"])

    rolled = kplay([roll_task(**FAST)]).result("roll")
    assert not rolled.get("failed"), rolled.get("msg")
    assert rolled["changed"] is True
    # the re-run rolls only the remainder
    assert sorted(rolled["would_roll"]) == sorted(set(preview["would_roll"]) - set(done_first))
    assert sorted(rolled["replaced"]) == sorted(rolled["would_roll"])
    asg = kops_world.emulator.client("autoscaling")
    ec2 = kops_world.emulator.client("ec2")
    for group in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
        ids = [i["InstanceId"] for i in group["Instances"]]
        assert not set(ids) & set(old[group["AutoScalingGroupName"]])  # every instance is new
        template = group["LaunchTemplate"]["LaunchTemplateId"]
        latest = str(ec2.describe_launch_templates(LaunchTemplateIds=[template])["LaunchTemplates"][0]["LatestVersionNumber"])
        assert all(i["LaunchTemplate"]["Version"] == latest for i in group["Instances"])
    assert all(g["status"] == "Ready" and g["need_update"] == 0 for g in rolled["groups_after"])
    assert "no kubeconfig" in rolled["pdb_check"]["skipped_reason"]

    again = kplay([roll_task(**FAST)]).result("roll")
    assert again["changed"] is False
    assert [c["argv"][1:3] for c in again["kops_invocations"]] == [["rolling-update", "cluster"]]


def assert_pdb_gate(kops_world, kplay, would_roll, old, tmp_path):
    """A budget allowing no disruption over a pod on a node about to roll stops the roll before it starts:
    a real pod and PodDisruptionBudget on the cluster's real control plane (kube world), the budget's
    status filled by the real disruption controller, read through the kubeconfig kops exports."""
    import base64

    import kubernetes
    import yaml

    world = kops_world.kube
    world.wait_cluster(CLUSTER, timeout=120, nodes=5)
    core = world.core(CLUSTER)
    policy = kubernetes.client.PolicyV1Api(world.api_client(CLUSTER))
    victim = next(n.metadata.name for n in core.list_node().items if n.metadata.labels["kops.k8s.io/instancegroup"] == "nodes-us-east-1b")
    core.create_namespace({"metadata": {"name": "shop"}})
    core.create_namespaced_pod(
        "shop",
        {
            "metadata": {"name": "web-0", "labels": {"app": "web"}},
            "spec": {"nodeName": victim, "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]},
        },
    )
    policy.create_namespaced_pod_disruption_budget(
        "shop", {"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (policy.read_namespaced_pod_disruption_budget("web", "shop").status.current_healthy or 0) < 1:
        time.sleep(0.5)
    assert policy.read_namespaced_pod_disruption_budget("web", "shop").status.disruptions_allowed == 0
    kubeconfig = str(tmp_path / "kubeconfig")
    dns = dict(resolv_conf=kops_world.dns.resolv_conf)
    exported = kplay([{"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": kubeconfig}}], **dns)
    assert not exported.failed, exported.stdout[-2000:]
    blocked = kplay([roll_task(kubeconfig=kubeconfig, **FAST)], **dns).result("roll")
    assert blocked.get("failed") and "shop/web" in blocked["msg"] and "nothing was rolled" in blocked["msg"], blocked.get("msg")
    assert blocked["pdb_check"]["blocking"][0]["pods"] == ["shop/web-0 on %s" % victim]
    assert sorted(blocked["pdb_check"]["nodes"]) == sorted(
        n.metadata.name for n in core.list_node().items if n.metadata.labels["kops.k8s.io/instancegroup"] in would_roll
    )
    assert {name: [i for i, _ in g["instances"]] for name, g in kops_world.groups().items()} == old
    assert not [c for c in blocked["kops_invocations"] if "--yes" in c["argv"]]
    allowed = kplay([roll_task(kubeconfig=kubeconfig, ignore_pdb=True, **FAST)], check=True, **dns).result("roll")
    assert not allowed.get("failed") and allowed["changed"] is True
    assert any("ignore_pdb" in w for w in allowed.get("warnings", []))
    with open(kubeconfig) as handle:
        key = yaml.safe_load(handle)["users"][0]["user"]["client-key-data"]
    assert key not in str(blocked) + str(allowed) and base64.b64decode(key).decode()[40:80] not in str(blocked) + str(allowed)
    policy.delete_namespaced_pod_disruption_budget("web", "shop")


def test_drain_and_terminate_false_is_skipped_and_left_out(applied_cluster, cluster_play):
    """Issue 16 item 11: a group with rollingUpdate.drainAndTerminate: false that needs an update is reported as
    skipped with the reason; with nothing else to roll the run makes no --yes call and takes no lock; another group
    that needs an update rolls alone (--instance-group), the skipped group's instances untouched (kops would detach
    a surge instance of it before reading the setting, pkg/instancegroups/instancegroups.go:146-240). Variant: the
    setting in the cluster spec, a group that sets true itself rolls."""
    kops_world, kplay = applied_cluster, cluster_play  # the guide's HA cluster, applied (tests/conftest.py)

    def group(name, **options):
        task = {"name": "g", "kopsible.kops.kops_instancegroup": dict(cluster=CLUSTER, name=name, apply=True, **options)}
        result = kplay([task]).result("g")
        assert not result.get("failed"), result.get("msg")

    group("nodes-us-east-1a", machine_type="t3.large", rolling_update={"drain_and_terminate": False})
    instances = kops_world.groups()
    skipped = kplay([roll_task(**FAST)]).result("roll")
    assert not skipped.get("failed"), skipped.get("msg")
    assert skipped["changed"] is False
    assert skipped["skipped_groups"] == [{"name": "nodes-us-east-1a", "reason": "rollingUpdate.drainAndTerminate: false on the InstanceGroup"}]
    assert skipped["would_roll"] == [] and skipped["roll_order"] == []
    assert [g["status"] for g in skipped["groups_before"] if g["name"] == "nodes-us-east-1a"] == ["NeedsUpdate"]
    assert [c["argv"][1:3] for c in skipped["kops_invocations"]] == [["rolling-update", "cluster"], ["get", "all"]]
    assert skipped["state_store_safety"]["lock"] is None
    assert kops_world.groups() == instances

    # variant: the cluster spec disables it for groups that set nothing; nodes-us-east-1b sets true and rolls alone
    cluster = kplay([{"name": "c", "kopsible.kops.kops_cluster": {"name": CLUSTER, "spec": {"rollingUpdate": {"drainAndTerminate": False}}}}]).result("c")
    assert not cluster.get("failed"), cluster.get("msg")
    group("nodes-us-east-1a", rolling_update={"drain_and_terminate": None})
    group("nodes-us-east-1b", machine_type="t3.large", rolling_update={"drain_and_terminate": True})
    before = kops_world.groups()
    rolled = kplay([roll_task(**FAST)]).result("roll")
    assert not rolled.get("failed"), rolled.get("msg")
    assert rolled["skipped_groups"] == [
        {"name": "nodes-us-east-1a", "reason": "rollingUpdate.drainAndTerminate: false in the cluster spec (the InstanceGroup sets none)"}
    ]
    assert rolled["would_roll"] == ["nodes-us-east-1b"] and rolled["changed"] is True
    assert rolled["roll_order"] == [{"name": "nodes-us-east-1b", "role": "Node"}]
    yes = [c["argv"] for c in rolled["kops_invocations"] if "--yes" in c["argv"]]
    assert len(yes) == 1 and yes[0][yes[0].index("--instance-group") + 1] == "nodes-us-east-1b"
    assert sorted(rolled["replaced"]) == ["nodes-us-east-1b"]
    after = kops_world.groups()
    assert after["nodes-us-east-1a." + CLUSTER] == before["nodes-us-east-1a." + CLUSTER]
    assert not set(after["nodes-us-east-1b." + CLUSTER]["instances"]) & set(before["nodes-us-east-1b." + CLUSTER]["instances"])
    assert rolled["remaining"] == []
