"""kops_instancegroup with the real kops against the emulator: state store and Auto Scaling groups read back."""

import pytest
import yaml

from conftest import BUCKET, CLUSTER, UBUNTU_AMI
from harness import in_process

pytestmark = pytest.mark.kops
NODES = "nodes-us-east-1a"


def ig_task(label="ig", **options):
    options.setdefault("cluster", CLUSTER)
    return {"name": label, "kopsible.kops.kops_instancegroup": options, "ignore_errors": True}


@pytest.fixture
def cluster(applied_cluster):
    """The guide's HA cluster, applied (once per worker, restored for each test: tests/conftest.py)."""
    return applied_cluster


@pytest.fixture
def kplay(cluster_play):
    return cluster_play


def stored_ig(world, name):
    body = world.emulator.client("s3").get_object(Bucket=BUCKET, Key="%s/instancegroup/%s" % (CLUSTER, name))["Body"].read()
    return yaml.safe_load(body)


def group(world, ig):
    asg = world.emulator.client("autoscaling")
    return asg.describe_auto_scaling_groups(AutoScalingGroupNames=["%s.%s" % (ig, CLUSTER)])["AutoScalingGroups"][0]


def test_scale_up_preview_apply_and_noop(cluster, kplay):
    before, store = cluster.emulator.snapshot(), cluster.store()
    preview = kplay([ig_task(name=NODES, min_size=3, max_size=3, apply=True)], check=True, diff=True).result("ig")
    assert not preview.get("failed"), preview.get("msg")
    assert preview["changed"] is True
    assert "modify AutoscalingGroup/%s.%s: MaxSize 1 -> 3, MinSize 1 -> 3" % (NODES, CLUSTER) in preview["plan_summary"]
    assert {c["path"] for c in preview["changes"]} == {"spec.minSize", "spec.maxSize"}
    after = cluster.emulator.snapshot()
    assert after == before, cluster.emulator.snapshot_diff(before, after)
    assert cluster.store() == store

    done = kplay([ig_task(name=NODES, min_size=3, max_size=3, apply=True)]).result("ig")
    assert not done.get("failed"), done.get("msg")
    asg = group(cluster, NODES)
    assert (asg["MinSize"], asg["MaxSize"], len(asg["Instances"])) == (3, 3, 3)
    assert stored_ig(cluster, NODES)["spec"]["minSize"] == 3

    versions = cluster.store_versions()
    again = kplay([ig_task(name=NODES, min_size=3, max_size=3)]).result("ig")
    assert again["changed"] is False
    assert [c["argv"][1:3] for c in again["kops_invocations"]] == [["get", "all"]]
    assert cluster.store_versions() == versions


def test_check_mode_reports_what_kops_stored_in_a_scratch_copy(cluster, kplay):
    """Check mode runs kops' own ``kops create -f`` / ``kops replace -f`` on a scratch copy of the specs (issue 20 item
    2), and reports the group kops stored there, read back: a nested field kops does not know (``kubelet.maxPod``,
    for ``maxPods``) is dropped by kops without a word, so it is missing from the check-mode spec and named in
    ``dropped_fields`` and a warning, in check mode and for real alike. Check mode writes nothing (state store and
    cloud); the real run stores what kops kept."""
    spec = {"kubelet": {"maxPods": 50, "maxPod": 50}}
    options = dict(name="extra", role="Node", subnets=["us-east-1a"], min_size=1, max_size=1, machine_type="t3.medium", image=UBUNTU_AMI, spec=spec, apply=True)
    before, store = cluster.emulator.snapshot(), cluster.store()
    preview = kplay([ig_task(**options)], check=True, diff=True).result("ig")
    after = cluster.emulator.snapshot()
    assert after == before, cluster.emulator.snapshot_diff(before, after)
    assert cluster.store() == store
    assert not preview.get("failed") and preview["changed"] is True, preview.get("msg")
    assert preview["spec"]["kubelet"] == {"maxPods": 50}, preview["spec"]
    assert preview["dropped_fields"] == ["spec.kubelet.maxPod"]
    assert any("kops did not keep spec.kubelet.maxPod" in w for w in preview.get("warnings") or []), preview.get("warnings")
    assert preview["instance_group"]["min_size"] == 1 and preview["instance_group"]["zones"] == ["us-east-1a"]
    scratch = [c["argv"][1:3] for c in preview["kops_invocations"] if c.get("store") == "scratch"]
    assert scratch == [["create", "-f"], ["get", "all"], ["update", "cluster"]], preview["kops_invocations"]
    assert "create AutoscalingGroup/extra.%s" % CLUSTER in " ".join(preview["plan_summary"]), preview["plan_summary"]

    done = kplay([ig_task(**dict(options, apply=False))]).result("ig")
    assert not done.get("failed"), done.get("msg")
    assert done["dropped_fields"] == ["spec.kubelet.maxPod"] and done["spec"] == preview["spec"]
    assert stored_ig(cluster, "extra")["spec"]["kubelet"] == {"maxPods": 50}


def test_apply_without_the_dry_run_when_the_run_wrote_the_spec(cluster, kplay):
    """plan_before_apply=false: the write already makes the run changed, so it goes straight to --yes
    (one kops update less) and the Auto Scaling group follows; a run that writes nothing still plans."""
    done = kplay([ig_task(name=NODES, min_size=2, max_size=2, apply=True, plan_before_apply=False)]).result("ig")
    assert not done.get("failed"), done.get("msg")
    assert done["changed"] is True and done["plan"] is None and "plan_before_apply=false" in done["plan_note"]
    updates = [c["argv"][1:] for c in done["kops_invocations"] if c["argv"][1:3] == ["update", "cluster"]]
    assert len(updates) == 1 and "--yes" in updates[0], done["kops_invocations"]
    asg = group(cluster, NODES)
    assert (asg["MinSize"], asg["MaxSize"], len(asg["Instances"])) == (2, 2, 2)

    again = kplay([ig_task(name=NODES, min_size=2, max_size=2, apply=True, plan_before_apply=False)]).result("ig")
    assert again["changed"] is False and again["plan"]["changed"] is False, again.get("plan_summary")
    assert [c["argv"][1:3] for c in again["kops_invocations"]] == [["get", "all"], ["update", "cluster"]]
    assert all("--yes" not in c["argv"] for c in again["kops_invocations"])

    # Drift (the group changed outside kops) with nothing to write: planned, shown, repaired.
    cluster.emulator.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName="%s.%s" % (NODES, CLUSTER), MinSize=1, MaxSize=1, DesiredCapacity=1)
    fixed = kplay([ig_task(name=NODES, min_size=2, max_size=2, apply=True, plan_before_apply=False)]).result("ig")
    assert fixed["changed"] is True and "MaxSize 1 -> 2" in " ".join(fixed["plan_summary"]), fixed.get("plan_summary")
    assert (group(cluster, NODES)["MinSize"], group(cluster, NODES)["MaxSize"]) == (2, 2)


def test_fields_round_trip_to_state_store_and_cloud(cluster, kplay):
    spot = dict(
        name="spot-nodes",
        role="Node",
        image=UBUNTU_AMI,
        subnets=["us-east-1a", "us-east-1b"],
        machine_type="m5.large",
        min_size=1,
        max_size=4,
        node_labels={"lifecycle": "spot"},
        taints=["spot=true:PreferNoSchedule"],
        instance_metadata={"http_tokens": "required", "http_put_response_hop_limit": 1},
        mixed_instances_policy={
            "instances": ["m5.large", "m5a.large"],
            "on_demand_base": 0,
            "on_demand_above_base": 0,
            "spot_allocation_strategy": "price-capacity-optimized",
        },
        capacity_rebalance=True,
        max_price="0.10",
        rolling_update={"max_surge": 1, "max_unavailable": 0},
        additional_user_data=[{"name": "hello.sh", "type": "text/x-shellscript", "content": "#!/bin/sh\necho hi\n"}],
        sysctl_parameters=["net.ipv4.tcp_keepalive_time=200"],
        packages=["nfs-common"],
    )
    warm = dict(
        name="warm-nodes",
        role="Node",
        image=UBUNTU_AMI,
        subnets=["us-east-1c"],
        machine_type="t3.medium",
        min_size=1,
        max_size=3,
        warm_pool={"min_size": 1, "max_size": 2, "enable_lifecycle_hook": True},
        suspend_processes=["AZRebalance"],
        instance_protection=True,
        max_instance_lifetime="48h",
        cloud_labels={"team": "platform"},
        detailed_instance_monitoring=True,
        root_volume={"size": 50, "type": "gp3", "iops": 3000, "throughput": 125, "encryption": True},
    )
    run = kplay([ig_task("spot", apply=False, **spot), ig_task("warm", apply=True, **warm)])
    for label in ("spot", "warm"):
        assert not run.result(label).get("failed"), run.result(label).get("msg")

    s = stored_ig(cluster, "spot-nodes")["spec"]
    assert s["role"] == "Node" and s["subnets"] == ["us-east-1a", "us-east-1b"] and s["maxSize"] == 4
    assert s["taints"] == ["spot=true:PreferNoSchedule"] and s["nodeLabels"] == {"lifecycle": "spot"}
    assert s["instanceMetadata"] == {"httpTokens": "required", "httpPutResponseHopLimit": 1}
    assert s["mixedInstancesPolicy"]["spotAllocationStrategy"] == "price-capacity-optimized"
    assert s["capacityRebalance"] is True and s["maxPrice"] == "0.10"
    assert s["additionalUserData"][0]["name"] == "hello.sh" and s["packages"] == ["nfs-common"]
    assert s["mixedInstancesPolicy"] == {
        "instances": ["m5.large", "m5a.large"],
        "onDemandBase": 0,
        "onDemandAboveBase": 0,
        "spotAllocationStrategy": "price-capacity-optimized",
    }, s["mixedInstancesPolicy"]
    assert s["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}, s.get("rollingUpdate")
    assert s["sysctlParameters"] == ["net.ipv4.tcp_keepalive_time=200"], s.get("sysctlParameters")
    w = stored_ig(cluster, "warm-nodes")["spec"]
    assert w["warmPool"] == {"minSize": 1, "maxSize": 2, "enableLifecycleHook": True}
    assert (w["rootVolumeSize"], w["rootVolumeType"], w["rootVolumeIops"], w["rootVolumeEncryption"]) == (50, "gp3", 3000, True)
    assert w["rootVolumeThroughput"] == 125 and w["detailedInstanceMonitoring"] is True, w
    assert w["maxInstanceLifetime"] in ("48h0m0s", "48h")
    # the sysctl reaches the nodes through the group's nodeup config, the file nodeup applies at boot
    nodeup = yaml.safe_load(
        cluster.emulator.client("s3").get_object(Bucket=BUCKET, Key="%s/igconfig/node/spot-nodes/nodeupconfig.yaml" % CLUSTER)["Body"].read()
    )
    assert "net.ipv4.tcp_keepalive_time=200" in (nodeup.get("SysctlParameters") or []), sorted(nodeup)

    asg = cluster.emulator.client("autoscaling")
    spot_group = group(cluster, "spot-nodes")
    policy = spot_group["MixedInstancesPolicy"]
    assert policy["InstancesDistribution"]["SpotAllocationStrategy"] == "price-capacity-optimized"
    assert spot_group["CapacityRebalance"] is True
    ec2 = cluster.emulator.client("ec2")
    lt = policy["LaunchTemplate"]["LaunchTemplateSpecification"]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=lt["LaunchTemplateId"], Versions=["$Latest"])
    assert data["LaunchTemplateVersions"][0]["LaunchTemplateData"]["MetadataOptions"]["HttpTokens"] == "required"
    # the overrides and the on-demand split as AWS holds them
    assert [o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]] == ["m5.large", "m5a.large"], policy
    distribution = policy["InstancesDistribution"]
    assert (distribution["OnDemandBaseCapacity"], distribution["OnDemandPercentageAboveBaseCapacity"], distribution["SpotMaxPrice"]) == (0, 0, "0.10")
    warm_group = group(cluster, "warm-nodes")
    warm_lt = warm_group["LaunchTemplate"]
    warm_data = ec2.describe_launch_template_versions(LaunchTemplateId=warm_lt["LaunchTemplateId"], Versions=[warm_lt["Version"]])
    warm_data = warm_data["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert warm_data["Monitoring"] == {"Enabled": True}, warm_data.get("Monitoring")
    root = [m["Ebs"] for m in warm_data["BlockDeviceMappings"] if "Ebs" in m][0]
    assert (root["VolumeSize"], root["VolumeType"], root["Iops"], root["Throughput"], root["Encrypted"]) == (50, "gp3", 3000, 125, True), root
    assert warm_group["NewInstancesProtectedFromScaleIn"] is True
    assert [p["ProcessName"] for p in warm_group["SuspendedProcesses"]] == ["AZRebalance"]
    assert warm_group["MaxInstanceLifetime"] == 172800
    assert {"Key": "team", "Value": "platform"} in [{"Key": t["Key"], "Value": t["Value"]} for t in warm_group["Tags"]]
    pool = asg.describe_warm_pool(AutoScalingGroupName=warm_group["AutoScalingGroupName"])["WarmPoolConfiguration"]
    assert pool["MinSize"] == 1 and pool["MaxGroupPreparedCapacity"] == 2


BAD_INPUTS = [
    ({"name": NODES, "min_size": 3, "max_size": 2}, "max_size: 2 is less than min_size 3"),
    ({"name": NODES, "min_size": -1}, "min_size: must be 0 or more"),
    ({"name": "x", "role": "Worker"}, "role: 'Worker' is not one of"),
    ({"name": "Bad_Name", "role": "Node"}, "name: 'Bad_Name'"),
    ({"name": "cp", "role": "Master", "min_size": 2, "max_size": 2}, "min_size: 2; a ControlPlane InstanceGroup has at most 1"),
    ({"name": NODES, "max_instance_lifetime": "12h"}, "max_instance_lifetime: 12h is under 24h"),
    ({"name": NODES, "max_instance_lifetime": "1 day"}, "max_instance_lifetime: '1 day' is not a duration"),
    ({"name": NODES, "instance_metadata": {"http_tokens": "always"}}, "instance_metadata.http_tokens: 'always' must be required or optional"),
    ({"name": NODES, "instance_metadata": {"http_put_response_hop_limit": 0}}, "instance_metadata.http_put_response_hop_limit: 0 must be 1 or more"),
    (
        {"name": NODES, "instance_metadata": {"tokens": "required"}},
        "Unsupported parameters for (kopsible.kops.kops_instancegroup) module: instance_metadata.tokens",
    ),
    ({"name": NODES, "mixed_instances_policy": {"on_demand_above_base": 101}}, "on_demand_above_base: 101 must be between 0 and 100"),
    ({"name": NODES, "mixed_instances_policy": {"spot_allocation_strategy": "cheapest"}}, "spot_allocation_strategy: 'cheapest'"),
    ({"name": NODES, "warm_pool": {"min_size": 2, "max_size": 1}}, "warm_pool.max_size: 1 cannot be lower than min_size 2"),
    ({"name": NODES, "warm_pool": {"min_size": 1}, "max_price": "0.1"}, "warm_pool: cannot be used with spot"),
    ({"name": "control-plane-us-east-1a", "warm_pool": {"min_size": 1}}, "warm_pool: only allowed on instance groups with role Node"),
    (
        {"name": NODES, "external_load_balancers": [{"load_balancer_name": "lb%d" % i} for i in range(11)]},
        "external_load_balancers: 11 classic load balancers (load_balancer_name) given; kops attaches them in one "
        "AttachLoadBalancers call, which takes at most 10",
    ),
    ({"name": NODES, "external_load_balancers": [{"target_group_arn": "not-an-arn"}]}, "is not a target group ARN"),
    # issue 16 item 6: a target group of another partition or region is one AWS cannot attach
    (
        {"name": NODES, "external_load_balancers": [{"target_group_arn": "arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/t/1"}]},
        "external_load_balancers[0].target_group_arn: 'arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/t/1'"
        " is not an ARN of partition aws, the partition of us-east-1",
    ),
    (
        {"name": NODES, "external_load_balancers": [{"target_group_arn": "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/t/1"}]},
        "is in region us-west-2; the cluster is in us-east-1",
    ),
    (
        {"name": NODES, "spec": {"iam": {"profile": "arn:aws-us-gov:iam::123456789012:instance-profile/nodes"}}},
        "spec.iam.profile: 'arn:aws-us-gov:iam::123456789012:instance-profile/nodes' is not an ARN of partition aws",
    ),
    ({"name": NODES, "taints": ["dedicated=gpu:Sometimes"]}, "taints[0]: 'dedicated=gpu:Sometimes'"),
    ({"name": NODES, "suspend_processes": ["Nap"]}, "suspend_processes: 'Nap'"),
    ({"name": NODES, "subnets": ["us-east-1z"]}, "subnets: us-east-1z not in the cluster spec"),
    ({"name": NODES, "sysctl_parameters": ["vm.swappiness"]}, "must contain a '=' character"),
    ({"name": NODES, "root_volume": {"size": -1}}, "root_volume.size: must be 0 (kops' default) or more"),
    ({"name": NODES, "root_volume": {"type": "st1"}}, "root_volume.type: 'st1' is not one of"),
    # issue 16 item 2: kops stores these, kubelet could not register the node
    ({"name": NODES, "node_labels": {"team": "v" * 64}}, "node_labels: 'team'="),
    ({"name": NODES, "node_labels": {"a.example.com/b/c": "x"}}, "at most one '/'"),
    ({"name": NODES, "taints": ["a=b:NoSchedule", "a=b:NoSchedule"]}, "taints[1]: 'a=b:NoSchedule' is listed twice"),
    # issue 30: Kubernetes' Node validation (validateNodeTaints, its own test case): kops stores these, no node registers
    (
        {"name": NODES, "taints": ["dedicated=special-user-1:NoSchedule", "dedicated=special-user-2:NoSchedule"]},
        "taints[1]: 'dedicated=special-user-2:NoSchedule' has the key 'dedicated' and effect NoSchedule of taints[0]",
    ),
    ({"name": NODES, "additional_user_data": [{"name": "a.sh", "content": "x"}]}, "missing required arguments: type found in additional_user_data"),
    ({"name": NODES, "cloud_labels": {"Name": "x"}}, "cloud_labels: 'Name' is a label kops reserves"),
    ({"name": "new-group", "min_size": 1}, "role: required to create InstanceGroup new-group"),
    ({"name": NODES, "role": "Bastion"}, "the role of an existing group cannot change"),
    # found by a breaker session: wrong types inside dict options used to crash with a TypeError; the suboptions of
    # the argument spec refuse them now (an int for a str converts, as for every str option, and meets the ARN rule)
    ({"name": NODES, "warm_pool": {"min_size": "x"}}, "argument 'min_size' is of type str found in 'warm_pool'"),
    ({"name": NODES, "root_volume": {"size": "x"}}, "argument 'size' is of type str found in 'root_volume'"),
    ({"name": NODES, "instance_metadata": {"http_put_response_hop_limit": True}}, "http_put_response_hop_limit: True must be a whole number"),
    ({"name": NODES, "external_load_balancers": [{"target_group_arn": 123}]}, "external_load_balancers[0].target_group_arn: '123' is not a target group ARN"),
    (
        {
            "name": NODES,
            "external_load_balancers": [{"load_balancer_name": "a", "target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/1"}],
        },
        "parameters are mutually exclusive: load_balancer_name|target_group_arn found in external_load_balancers",
    ),
    ({"name": NODES, "mixed_instances_policy": {"instances": {"m5": "large"}}}, "argument 'instances' is of type dict found in 'mixed_instances_policy'"),
    ({"name": NODES, "cluster": "single"}, "cluster: a cluster name must be a fully qualified"),
    ({"name": NODES, "state_store": "s3://"}, "state_store: 's3://' must be an s3://BUCKET"),
]


def test_input_rules_fail_and_write_nothing(cluster):
    """Every bad input fails naming its field, before anything is written (a sample of the cases in one playbook,
    the others through the module's main() in process: harness.in_process.run_sampled)."""
    before, store = cluster.emulator.snapshot(), cluster.store()
    tasks = [ig_task("case%d" % i, apply=True, **options) for i, (options, _) in enumerate(BAD_INPUTS)]
    results, run = in_process.run_sampled(tasks, cluster.emulator, kops=cluster.kops)
    assert "Traceback" not in run.stdout + run.stderr
    for i, (options, message) in enumerate(BAD_INPUTS):
        result = results["case%d" % i]
        assert result.get("failed") is True, (options, result)
        assert message in result["msg"], (options, result["msg"])
        assert "Traceback" not in str(result)
    after = cluster.emulator.snapshot()
    assert after == before, cluster.emulator.snapshot_diff(before, after)
    assert cluster.store() == store


def test_drift_is_shown_and_repaired(cluster, kplay):
    asg = cluster.emulator.client("autoscaling")
    name = "%s.%s" % (NODES, CLUSTER)
    asg.update_auto_scaling_group(AutoScalingGroupName=name, MinSize=2, MaxSize=4, DesiredCapacity=2)
    preview = kplay([ig_task(name=NODES, apply=True)], check=True).result("ig")
    assert preview["changed"] is True and preview["changes"] == []
    assert any("AutoscalingGroup/%s: " % name in line and "MaxSize 4 -> 1" in line for line in preview["plan_summary"]), preview["plan_summary"]
    fixed = kplay([ig_task(name=NODES, apply=True)]).result("ig")
    assert fixed["changed"] is True
    group_now = group(cluster, NODES)
    assert (group_now["MinSize"], group_now["MaxSize"]) == (1, 1)
    assert kplay([ig_task(name=NODES, apply=True)]).result("ig")["changed"] is False


def test_delete_group_and_refuse_last_control_plane(cluster, kplay):
    # nodes first: once a control-plane group is gone, the etcd members of the cluster spec still name it and
    # kops refuses to plan ("InstanceGroup not found (for etcd b/main)") until they are removed
    run = kplay(
        [
            ig_task("nodes", name="nodes-us-east-1b", state="absent", apply=True, plan_before_apply=False),
            ig_task("cp", name="control-plane-us-east-1b", state="absent"),
            ig_task("again", name="nodes-us-east-1b", state="absent"),
        ]
    )
    assert not run.result("cp").get("failed")  # three control-plane groups: one may go
    assert run.result("nodes")["changed"] is True
    # kops deletes the group's cloud resources itself: nothing pending, so even plan_before_apply=false plans
    assert run.result("nodes")["plan"] is not None, run.result("nodes").get("plan_note")
    assert ["update", "cluster"] in [c["argv"][1:3] for c in run.result("nodes")["kops_invocations"] if "--yes" not in c["argv"]]
    assert run.result("again")["changed"] is False
    names = asgs(cluster)
    assert "nodes-us-east-1b.%s" % CLUSTER not in names
    # the control-plane group's spec is gone from the state store, and kops deleted its Auto Scaling group with it
    assert "%s/instancegroup/control-plane-us-east-1b" % CLUSTER not in cluster.store()
    assert "control-plane-us-east-1b.masters.%s" % CLUSTER not in names
    last = kplay([ig_task("a", name="control-plane-us-east-1c", state="absent"), ig_task("b", name="control-plane-us-east-1a", state="absent")])
    assert not last.result("a").get("failed") and last.result("a")["changed"] is True
    refused = last.result("b")
    expected = "name: control-plane-us-east-1a is the last control-plane InstanceGroup of %s; it cannot be deleted" % CLUSTER
    assert refused.get("failed") and refused["msg"] == expected, refused.get("msg")
    # the refusal wrote nothing: the last control-plane group is in the store and its Auto Scaling group still runs
    store = cluster.store()
    assert "%s/instancegroup/control-plane-us-east-1a" % CLUSTER in store and "%s/instancegroup/control-plane-us-east-1c" % CLUSTER not in store
    remaining = asgs(cluster)
    kept = remaining["control-plane-us-east-1a.masters.%s" % CLUSTER]
    assert kept["DesiredCapacity"] == 1 and len(kept["Instances"]) == 1
    assert "control-plane-us-east-1c.masters.%s" % CLUSTER not in remaining


def asgs(world):
    """The emulator's Auto Scaling groups by name (dict)."""
    return {g["AutoScalingGroupName"]: g for g in world.emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]}


def test_scale_playbook_guide_layout_nodes_2_to_3(cluster, kplay):
    """The kOps guide's layout: one `nodes` group across three zones, scaled 2 -> 3 through
    playbooks/scale_cluster.yml, previewed in check mode first."""
    import os

    from conftest import ROOT
    from harness.playbook import run_playbook

    nodes = dict(
        name="nodes",
        role="Node",
        image=UBUNTU_AMI,
        machine_type="t3.medium",
        subnets=["us-east-1a", "us-east-1b", "us-east-1c"],
        min_size=2,
        max_size=2,
        apply=True,
    )
    assert not kplay([ig_task(**nodes)]).result("ig").get("failed")
    assert (group(cluster, "nodes")["MinSize"], len(group(cluster, "nodes")["Instances"])) == (2, 2)

    extra = dict(cluster.kops, cluster_name=CLUSTER, state_store_bucket=BUCKET, scale_instance_groups=[{"name": "nodes", "min_size": 3, "max_size": 3}])
    extra.pop("state_store")
    playbook = os.path.join(ROOT, "playbooks", "scale_cluster.yml")
    before = cluster.emulator.snapshot()
    preview = run_playbook(playbook=playbook, emulator=cluster.emulator, extra_vars=extra, check=True, diff=True)
    assert preview.rc == 0, preview.stderr[-2000:]
    per_group = preview.result("kopsible.kops.instancegroups : Converge the InstanceGroups")
    lines = per_group["results"][0]["plan_summary"]
    assert "modify AutoscalingGroup/nodes.%s: MaxSize 2 -> 3, MinSize 2 -> 3" % CLUSTER in lines
    after_snapshot = cluster.emulator.snapshot()
    assert after_snapshot == before, cluster.emulator.snapshot_diff(before, after_snapshot)

    applied = run_playbook(playbook=playbook, emulator=cluster.emulator, extra_vars=extra)
    assert applied.rc == 0, applied.stderr[-2000:]
    asg = group(cluster, "nodes")
    assert (asg["MinSize"], asg["MaxSize"], len(asg["Instances"])) == (3, 3, 3)
    assert len({i["AvailabilityZone"] for i in asg["Instances"]}) == 3
    again = run_playbook(playbook=playbook, emulator=cluster.emulator, extra_vars=extra)
    assert again.stats["localhost"]["changed"] == 0, [n for n, r in again.results if r.get("changed")]


WARM_ON_DEMAND = dict(
    name="warm-od",
    role="Node",
    image=UBUNTU_AMI,
    subnets=["us-east-1a"],
    machine_type="c5.large",
    min_size=1,
    max_size=2,
    warm_pool={"min_size": 1, "max_size": 2},
    mixed_instances_policy={"instances": ["c5.large", "c5a.large"], "on_demand_above_base": 100, "spot_allocation_strategy": "capacity-optimized"},
)


def test_warm_pool_on_an_all_on_demand_mixed_group_is_stored_as_kops_accepts_it(cluster, kplay):
    """Issue 16 item 1: kops v1.36.2 refuses a warm pool only with maxPrice (instancegroup.go:289-296); its own
    validation at kops create -f accepts this group, and so does the module; the max_price variant is refused."""
    run = kplay([ig_task("od", **WARM_ON_DEMAND), ig_task("spot", **dict(WARM_ON_DEMAND, name="warm-spot", max_price="0.10"))])
    assert not run.result("od").get("failed"), run.result("od").get("msg")
    spec = stored_ig(cluster, "warm-od")["spec"]
    assert spec["warmPool"] == {"minSize": 1, "maxSize": 2}
    assert spec["mixedInstancesPolicy"] == {"instances": ["c5.large", "c5a.large"], "onDemandAboveBase": 100, "spotAllocationStrategy": "capacity-optimized"}
    assert run.result("spot")["failed"] is True and run.result("spot")["msg"].startswith("warm_pool: cannot be used with spot")
    assert "%s/instancegroup/warm-spot" % CLUSTER not in cluster.store()


def test_dict_options_merge_and_diff_shows_the_merged_result(cluster, kplay):
    """Issue 16 item 7: root_volume {size: 64, type: gp3} then {size: 64} keeps type; null removes one field;
    node_labels merge; check mode's diff is exactly the merged spec."""
    first = kplay([ig_task(name=NODES, root_volume={"size": 64, "type": "gp3"}, node_labels={"team": "a", "tier": "web"})]).result("ig")
    assert not first.get("failed"), first.get("msg")
    again = kplay([ig_task(name=NODES, root_volume={"size": 64}, node_labels={"team": "a"})]).result("ig")
    assert again["changed"] is False, again["changes"]
    spec = stored_ig(cluster, NODES)["spec"]
    assert (spec["rootVolumeSize"], spec["rootVolumeType"]) == (64, "gp3")
    assert spec["nodeLabels"]["tier"] == "web"

    store = cluster.store()
    preview = kplay([ig_task(name=NODES, root_volume={"type": None}, node_labels={"tier": None, "zone": "b"})], check=True, diff=True).result("ig")
    assert preview["changed"] is True and cluster.store() == store
    assert {c["path"]: c["after"] for c in preview["changes"]} == {"spec.rootVolumeType": None, "spec.nodeLabels.tier": None, "spec.nodeLabels.zone": "b"}
    assert preview["diff"]["after"]["rootVolumeSize"] == 64 and "rootVolumeType" not in preview["diff"]["after"]
    assert preview["diff"]["after"]["nodeLabels"] == {k: v for k, v in dict(spec["nodeLabels"], zone="b").items() if k != "tier"}
    done = kplay([ig_task(name=NODES, root_volume={"type": None}, node_labels={"tier": None, "zone": "b"})]).result("ig")
    assert done["diff"]["after"] == preview["diff"]["after"]
    assert stored_ig(cluster, NODES)["spec"] == dict(preview["diff"]["after"])


def test_user_data_is_measured_as_kops_renders_it_and_16k_is_refused(cluster, kplay):
    """Issue 16 item 2: the size the module computes equals the launch template kops writes, byte for byte;
    a part that takes it over EC2's 16,384 bytes fails naming additional_user_data, in check mode and a real
    run, before anything is written; compress_user_data is not offered as the remedy."""
    import base64

    from ansible_collections.kopsible.kops.plugins.module_utils._kops import user_data

    parts = [{"name": "hello.sh", "type": "text/x-shellscript", "content": "#!/bin/sh\necho hi\n"}]
    done = kplay([ig_task(name=NODES, additional_user_data=parts, apply=True)]).result("ig")
    assert not done.get("failed"), done.get("msg")
    ec2 = cluster.emulator.client("ec2")
    data = base64.b64decode(
        ec2.describe_launch_template_versions(LaunchTemplateName="%s.%s" % (NODES, CLUSTER), Versions=["$Latest"])["LaunchTemplateVersions"][0][
            "LaunchTemplateData"
        ]["UserData"]
    )
    assert user_data.aws_multipart_mime(user_data.nodeup_script_of(data.decode()), parts) == data
    assert done["user_data_bytes"] == len(data)

    big = [dict(parts[0], content="#!/bin/sh\n" + "# padding\n" * (16384 // 10))]
    store, before = cluster.store(), cluster.emulator.snapshot()
    for check in (True, False):
        result = kplay([ig_task(name=NODES, additional_user_data=big, apply=True)], check=check).result("ig")
        assert result["failed"] is True
        assert result["msg"].startswith("additional_user_data: the launch template user data would be "), result["msg"]
        assert "over EC2's limit of 16384" in result["msg"] and "compress_user_data compresses only" in result["msg"]
    assert cluster.store() == store and cluster.emulator.snapshot() == before


def test_a_change_the_plan_decides_shows_the_plan_in_diff(cluster, kplay):
    """Issue 16 item 13: the group's Auto Scaling group drifted (MaxSize 1 -> 4 outside kops); the spec is unchanged,
    so only the cloud plan decides the change, and --diff shows it (check mode: to apply). Variant: kops_cluster with
    the real run shows it as applied, and the drift is gone."""
    asg = cluster.emulator.client("autoscaling")
    asg.update_auto_scaling_group(AutoScalingGroupName="%s.%s" % (NODES, CLUSTER), MaxSize=4)
    line = "modify AutoscalingGroup/%s.%s: MaxSize 4 -> 1" % (NODES, CLUSTER)
    run = kplay([ig_task(name=NODES, apply=True)], check=True, diff=True)
    preview = run.result("ig")
    assert not preview.get("failed"), preview.get("msg")
    assert preview["changed"] is True and preview["changes"] == []
    assert preview["plan_summary"] == [line]
    assert preview["diff"][-1] == {"prepared": "cloud plan of kops update cluster (to apply):\n  %s\n" % line}
    assert "cloud plan of kops update cluster (to apply):\n  %s" % line in printed_diff(preview)

    run = kplay([{"name": "c", "kopsible.kops.kops_cluster": {"name": CLUSTER, "apply": True}}], diff=True)
    applied = run.result("c")
    assert not applied.get("failed"), applied.get("msg")
    assert applied["changed"] is True and applied["changes"] == [] and applied["plan_summary"] == [line]
    assert "cloud plan of kops update cluster (applied):\n  %s" % line in printed_diff(applied)
    assert group(cluster, NODES)["MaxSize"] == 1
    again = kplay([ig_task(name=NODES, apply=True)], check=True, diff=True).result("ig")
    assert again["changed"] is False and "cloud plan" not in printed_diff(again)


def printed_diff(result):
    """What ansible's callbacks print for the result's diff (CallbackBase._get_diff, used by the default callback;
    the harness itself runs the json callback)."""
    from ansible.plugins.callback import CallbackBase

    return CallbackBase()._get_diff(result.get("diff") or [])
