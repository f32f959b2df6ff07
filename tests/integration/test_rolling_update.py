"""rolling_update with the real kops against the emulator: what needs a roll, the roll, the re-run."""
import pytest

from conftest import CLUSTER

pytestmark = pytest.mark.kops
FAST = dict(cloudonly=True, control_plane_interval="1s", node_interval="1s", bastion_interval="1s")


def roll_task(label="roll", **options):
    options.setdefault("cluster", CLUSTER)
    return {"name": label, "kopsible.kops.rolling_update": options, "ignore_errors": True}


def test_roll_after_upgrade_replaces_every_instance_then_is_a_noop(kops_world, kplay):
    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    nothing = kplay([roll_task(**FAST)]).result("roll")
    assert nothing["changed"] is False and nothing["would_roll"] == []

    upgraded = kplay([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.35.0", "apply": True}}]).result("u")
    assert not upgraded.get("failed"), upgraded.get("msg")
    before_state = kops_world.emulator.snapshot()
    preview = kplay([roll_task(**FAST)], check=True).result("roll")
    assert preview["changed"] is True
    assert sorted(preview["would_roll"]) == ["control-plane-us-east-1a", "control-plane-us-east-1b", "control-plane-us-east-1c",
                                             "nodes-us-east-1a", "nodes-us-east-1b"]
    assert all(g["status"] == "NeedsUpdate" for g in preview["groups_before"] if g["name"] in preview["would_roll"])
    assert kops_world.emulator.snapshot() == before_state

    old = {name: [i for i, _ in g["instances"]] for name, g in kops_world.groups().items()}
    rolled = kplay([roll_task(**FAST)]).result("roll")
    assert not rolled.get("failed"), rolled.get("msg")
    assert rolled["changed"] is True
    assert sorted(rolled["replaced"]) == sorted(preview["would_roll"])
    asg = kops_world.emulator.client("autoscaling")
    ec2 = kops_world.emulator.client("ec2")
    for group in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
        ids = [i["InstanceId"] for i in group["Instances"]]
        assert not set(ids) & set(old[group["AutoScalingGroupName"]])  # every instance is new
        template = group["LaunchTemplate"]["LaunchTemplateId"]
        latest = str(ec2.describe_launch_templates(LaunchTemplateIds=[template])["LaunchTemplates"][0]["LatestVersionNumber"])
        assert all(i["LaunchTemplate"]["Version"] == latest for i in group["Instances"])
    assert all(g["status"] == "Ready" and g["need_update"] == 0 for g in rolled["groups_after"])

    again = kplay([roll_task(**FAST)]).result("roll")
    assert again["changed"] is False
    assert [c["argv"][1:3] for c in again["kops_invocations"]] == [["rolling-update", "cluster"]]
