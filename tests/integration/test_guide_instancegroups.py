"""examples/instancegroup-features (guide 003): one InstanceGroup per feature of the guide, written and applied with
examples/spot-workers/workers.yml on examples/gossip's cluster, each read back from the AWS object the emulator shows
(Auto Scaling group tags, suspended processes, protection, lifetime, load balancers, mixed instances policy, capacity
rebalance, warm pool; launch template metadata options and user data) and from the state store in kops' v1alpha2
names; the guide's rules fail before anything is written. One cluster for the file."""

import base64
import json

import pytest
import yaml
from test_examples import GOSSIP_REGION, example_vars, offline, play

from harness.playbook import run_playbook

pytestmark = pytest.mark.kops


def group_tasks(extra, cluster, bucket, groups):
    """One kops_instancegroup task per group (``ignore_errors``), named after the group."""
    return [
        {
            "name": g["name"],
            "ignore_errors": True,
            "kopsible.kops.kops_instancegroup": dict(
                g, cluster=cluster, state_store="s3://" + bucket, kops_binary=extra["kops_binary"], kops_env=extra["kops_env"], region=GOSSIP_REGION
            ),
        }
        for g in groups
    ]


def test_one_instance_group_per_feature_of_the_guide(emulator, ssh_public_key):
    gossip, features = example_vars("gossip"), example_vars("instancegroup-features")
    cluster, bucket = features["cluster_name"], features["state_store_bucket"]
    assert (cluster, bucket) == (gossip["cluster_name"], gossip["state_store_bucket"])
    emulator.warm(GOSSIP_REGION)
    play(emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key, cluster_zones=[GOSSIP_REGION + "a"], cluster_node_count=1))
    ec2, asg = emulator.client("ec2", GOSSIP_REGION), emulator.client("autoscaling", GOSSIP_REGION)
    vpc = ec2.describe_vpcs(Filters=[{"Name": "tag:KubernetesCluster", "Values": [cluster]}])["Vpcs"][0]["VpcId"]
    # The load balancers the guide makes first: a classic ELB and a target group in the cluster's VPC.
    emulator.client("elb", GOSSIP_REGION).create_load_balancer(
        LoadBalancerName=features["features_classic_elb"],
        AvailabilityZones=[GOSSIP_REGION + "a"],
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 80, "InstanceProtocol": "TCP", "InstancePort": 30080}],
    )
    target_group = emulator.client("elbv2", GOSSIP_REGION).create_target_group(
        Name="features-tg", Protocol="TCP", Port=30080, VpcId=vpc, TargetType="instance"
    )["TargetGroups"][0]["TargetGroupArn"]
    extra = offline(emulator, ssh_public_key, features_target_group_arn=target_group)

    # The guide's rules, before anything is written: lifetime under 24h, 11 classic ELBs, a warm pool on spot.
    common = {k: v for k, v in features["features_common"].items() if k not in ("image",)}
    common.update(image=features["features_image"], subnets=features["features_subnets"])
    bad = [
        dict(common, name="short-lifetime", max_instance_lifetime="12h"),
        dict(common, name="many-lbs", external_load_balancers=[{"load_balancer_name": "lb%d" % i} for i in range(11)]),
        dict(common, name="warm-spot", max_price="0.05", warm_pool={"min_size": 1}),
    ]
    before = emulator.snapshot()
    run = run_playbook(group_tasks(extra, cluster, bucket, bad), emulator=emulator)
    messages = {g["name"]: run.result(g["name"]).get("msg", "") for g in bad}
    assert messages["short-lifetime"].startswith("max_instance_lifetime: 12h is under 24h"), messages
    assert "external_load_balancers: 11 classic load balancers" in messages["many-lbs"], messages
    assert messages["warm-spot"].startswith("warm_pool: cannot be used with spot"), messages
    assert emulator.snapshot() == before

    run = play(emulator, "spot-workers", "workers.yml", dict(features, **extra))
    assert run.result("kopsible.kops.instancegroups : Plan and apply the cluster once")["changed"] is True

    groups = {g["AutoScalingGroupName"].split(".")[0]: g for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]}
    s3 = emulator.client("s3", GOSSIP_REGION)

    def stored(name):
        return yaml.safe_load(s3.get_object(Bucket=bucket, Key="%s/instancegroup/%s" % (cluster, name))["Body"].read())["spec"]

    def template_data(name):
        group = groups[name]
        template = group.get("LaunchTemplate") or group["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
        return ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"])["LaunchTemplateVersions"][0][
            "LaunchTemplateData"
        ]

    tags = {t["Key"]: t["Value"] for t in groups["labels-workers"]["Tags"]}
    assert (tags["team"], tags["cost-center"]) == ("data", "1234")
    assert stored("labels-workers")["cloudLabels"] == {"team": "data", "cost-center": "1234"}

    assert sorted(p["ProcessName"] for p in groups["suspended-workers"]["SuspendedProcesses"]) == ["AZRebalance", "ScheduledActions"]
    assert stored("suspended-workers")["suspendProcesses"] == ["AZRebalance", "ScheduledActions"]

    assert groups["protected-workers"]["NewInstancesProtectedFromScaleIn"] is True
    assert stored("protected-workers")["instanceProtection"] is True

    metadata = template_data("imds-workers")["MetadataOptions"]
    assert (metadata["HttpTokens"], metadata["HttpPutResponseHopLimit"]) == ("required", 2)
    assert stored("imds-workers")["instanceMetadata"] == {"httpTokens": "required", "httpPutResponseHopLimit": 2}

    assert groups["lb-workers"]["LoadBalancerNames"] == [features["features_classic_elb"]]
    assert groups["lb-workers"]["TargetGroupARNs"] == [target_group]
    assert stored("lb-workers")["externalLoadBalancers"] == [{"loadBalancerName": features["features_classic_elb"]}, {"targetGroupArn": target_group}]

    user_data = base64.b64decode(template_data("userdata-workers")["UserData"]).decode()
    assert 'filename="hello.sh"' in user_data and "hello from additionalUserData" in user_data
    assert stored("userdata-workers")["additionalUserData"][0]["name"] == "hello.sh"

    spot = groups["spot-workers"]
    distribution = spot["MixedInstancesPolicy"]["InstancesDistribution"]
    assert (distribution["OnDemandBaseCapacity"], distribution["OnDemandPercentageAboveBaseCapacity"], distribution["SpotAllocationStrategy"]) == (
        0,
        0,
        "capacity-optimized",
    )
    assert sorted(o["InstanceType"] for o in spot["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]) == ["t3.medium", "t3a.medium"]
    assert spot["CapacityRebalance"] is True and stored("spot-workers")["capacityRebalance"] is True

    requirements = stored("requirements-workers")["mixedInstancesPolicy"]["instanceRequirements"]
    assert requirements == {"cpu": {"min": "2", "max": "4"}, "memory": {"min": "4G", "max": "16G"}}
    overrides = groups["requirements-workers"]["MixedInstancesPolicy"]["LaunchTemplate"].get("Overrides") or []
    assert [o["InstanceRequirements"]["VCpuCount"] for o in overrides if "InstanceRequirements" in o] == [{"Min": 2, "Max": 4}], overrides

    pool = asg.describe_warm_pool(AutoScalingGroupName=groups["warm-workers"]["AutoScalingGroupName"])["WarmPoolConfiguration"]
    assert (pool["MinSize"], pool["MaxGroupPreparedCapacity"]) == (1, 2)
    assert stored("warm-workers")["warmPool"] == {"minSize": 1, "maxSize": 2, "enableLifecycleHook": True}

    assert groups["lifetime-workers"]["MaxInstanceLifetime"] == 7 * 24 * 3600
    assert stored("lifetime-workers")["maxInstanceLifetime"] == "168h0m0s"  # Go's Duration String, as kops writes it
    assert json.dumps(stored("lifetime-workers")).count("max_instance_lifetime") == 0  # v1alpha2 names only

    # A re-run of the same vars changes nothing.
    again = play(emulator, "spot-workers", "workers.yml", dict(features, **extra))
    converged = again.result("kopsible.kops.instancegroups : Converge the InstanceGroups")["results"]
    assert [(r["name"], r.get("changes")) for r in converged if r.get("changed")] == []
    assert again.stats["localhost"]["changed"] == 0, again.result("kopsible.kops.instancegroups : Plan and apply the cluster once").get("plan_summary")
