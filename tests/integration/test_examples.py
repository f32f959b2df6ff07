"""The examples of examples/ run as a user runs them (ansible-playbook with the example's vars file), in
check mode, against the emulator with the real kops: what check mode reports is asserted, and the
emulator's whole state and every object version of the state-store bucket are identical before and after.

Creating and applying these examples makes no DNS lookup (gossip names need none; private DNS uses only the
Route53 API), so kops runs directly, without the local DNS server: the kops options are built here like
tools/harness/kops_env.py ``module_options`` but with the real binary. Only the AWS China example's roll and
validate steps reach the cluster's API (through its load balancer's DNS name): they run through
tools/kops-with-local-dns with the kube world. The emulator run overrides only
what an offline run needs: the endpoint, ``kops_binary``/``kops_env`` (KOPS_BASE_URL at the placeholder
artifact tree, no image-digest lookups), the SSH key, channel ``none`` (the default channel is on GitHub),
and the ids of resources that only exist once the test made them (the China VPC, subnets and image).
"""

import json
import os
import re

import pytest
import yaml

from conftest import ROOT, UBUNTU_AMI
from harness.kops_env import artifact_mirror, kops_binary, user_warnings
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops

GOSSIP_REGION = "eu-west-1"
CHINA = "cn-north-1"
OFFLINE_FLAGS = {"KOPS_FEATURE_FLAGS": "-ImageDigest"}  # no registry lookups (docs/emulator.md)


def example_vars(name):
    """The example's vars file (dict), as ``-e @examples/<name>/vars.yml`` gives it."""
    with open(os.path.join(ROOT, "examples", name, "vars.yml")) as handle:
        return yaml.safe_load(handle)


def offline(emulator, ssh_public_key, kops_env=None, **overrides):
    """Extra vars that run an example on the emulator (see the module docstring)."""
    env = dict(OFFLINE_FLAGS, KOPS_BASE_URL=artifact_mirror()) if kops_env is None else dict(OFFLINE_FLAGS, **kops_env)
    return dict(
        kops_binary=kops_binary(), kops_env=env, aws_endpoint_url=emulator.url, cluster_ssh_public_key=ssh_public_key, cluster_channel="none", **overrides
    )


def play(emulator, name, playbook, extra, check=False):
    """``ansible-playbook examples/<name>/<playbook> -e @vars.yml -e @overrides [--check --diff]``."""
    run = run_playbook(
        playbook=os.path.join(ROOT, "examples", name, playbook), emulator=emulator, extra_vars=dict(example_vars(name), **extra), check=check, diff=check
    )
    assert run.rc == 0, [
        (n, r.get("msg"), [i.get("msg") for i in r.get("results") or [] if i.get("failed")]) for n, r in run.results if r.get("failed")
    ] or run.stderr[-2000:]
    return run


def bucket_state(emulator, bucket, region):
    """Every object version of ``bucket``: ``{(key, version id): etag}`` (a write adds a version)."""
    s3 = emulator.client("s3", region)
    state = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
            state[(version["Key"], version["VersionId"])] = version.get("ETag", "delete marker")
    return state


def make_bucket(emulator, bucket, region):
    """A versioned state-store bucket in ``region`` (the check-mode preview reads it; kops docs/aws-china.md)."""
    s3 = emulator.client("s3", region)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})


class NothingWritten:
    """``with NothingWritten(emulator, bucket, region):`` asserts the emulator's snapshot and the bucket's
    object versions are the same after the block as before it."""

    def __init__(self, emulator, bucket, region):
        self.emulator, self.bucket, self.region = emulator, bucket, region

    def __enter__(self):
        self.before, self.store = self.emulator.snapshot(), bucket_state(self.emulator, self.bucket, self.region)
        return self

    def __exit__(self, kind, *exc):
        if kind is None:
            after = self.emulator.snapshot()
            assert after == self.before, self.emulator.snapshot_diff(self.before, after)
            assert bucket_state(self.emulator, self.bucket, self.region) == self.store


def cloud_state(emulator):
    """The emulator's snapshot without S3 objects (dict): what a terraform target must leave as it is while kops still
    writes its state store."""
    return {key: value for key, value in json.loads(emulator.snapshot()).items() if not key.endswith("s3.objects")}


def subnets(spec):
    """``{(name, type, zone)}`` of a Cluster spec's subnets."""
    return {(s["name"], s["type"], s["zone"]) for s in spec["subnets"]}


def kops_verbs(result):
    """The kops commands a result ran, as ``'create cluster --dry-run'``-like strings; ``' [scratch]'`` after those
    check mode ran on its scratch copy of the specs (kops_preview.ScratchStore)."""
    return [
        " ".join(a for a in c["argv"][1:] if a in ("get", "create", "cluster", "update", "replace", "--dry-run", "--yes"))
        + (" [scratch]" if c.get("store") == "scratch" else "")
        for c in result["kops_invocations"]
    ]


def created(plan, resource):
    """The fields of the plan's ``create`` item ``resource`` (dict). KeyError when it is not planned."""
    for item in plan["create"]:
        if item["resource"] == resource:
            return item["fields"]
    raise KeyError("%s not in the plan's creates: %s" % (resource, [i["resource"] for i in plan["create"]]))


def test_gossip_example_check_mode(emulator, ssh_public_key):
    """examples/gossip: the spec and instance groups kops would create for demo.k8s.local, no DNS zone."""
    example = example_vars("gossip")
    bucket, name = example["state_store_bucket"], example["cluster_name"]
    emulator.warm(GOSSIP_REGION)
    make_bucket(emulator, bucket, GOSSIP_REGION)
    with NothingWritten(emulator, bucket, GOSSIP_REGION):
        run = play(emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key), check=True)
    result = run.result("kopsible.kops.cluster : Cluster %s is present" % name)
    spec = result["spec"]
    assert result["changed"] is True and kops_verbs(result) == ["get", "create cluster --dry-run"]
    assert spec["cloudProvider"] == "aws" and spec["kubernetesVersion"] == "1.34.1"
    assert "dnsZone" not in spec  # gossip: no hosted zone
    assert spec["configBase"] == "s3://%s/%s" % (bucket, name)
    assert subnets(spec) == {(z, "Private", z) for z in example["cluster_zones"]} | {("utility-" + z, "Utility", z) for z in example["cluster_zones"]}
    assert spec["cloudLabels"] == {"environment": "demo"}
    assert [m["instanceGroup"] for m in spec["etcdClusters"][0]["etcdMembers"]] == ["control-plane-eu-west-1a"]
    groups = {g["name"]: (g["role"], g["min_size"], g["zones"]) for g in result["instance_groups"]}
    assert groups == {
        "control-plane-eu-west-1a": ("ControlPlane", 1, ["eu-west-1a"]),
        "nodes-eu-west-1a": ("Node", 1, ["eu-west-1a"]),
        "nodes-eu-west-1b": ("Node", 1, ["eu-west-1b"]),
        "nodes-eu-west-1c": ("Node", 0, ["eu-west-1c"]),
        "bastions": ("Bastion", 1, ["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    }
    # The bastion's type is kops' choice from the region's offerings; the others are the example's.
    assert {g["machine_type"] for g in result["instance_groups"] if g["role"] != "Bastion"} == {"t3.medium"}
    assert result["plan_note"].startswith("a new cluster's cloud plan")
    assert emulator.client("s3", GOSSIP_REGION).list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def test_spot_workers_example_check_mode(emulator, ssh_public_key):
    """examples/spot-workers on the gossip example's cluster (written for real, not applied): each group's
    spec and the exact cloud plan of adding it, and nothing written."""
    gossip, example = example_vars("gossip"), example_vars("spot-workers")
    bucket, name = example["state_store_bucket"], example["cluster_name"]
    assert (bucket, name) == (gossip["state_store_bucket"], gossip["cluster_name"])
    emulator.warm(GOSSIP_REGION)
    play(emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key, cluster_apply=False))
    extra = offline(emulator, ssh_public_key)
    with NothingWritten(emulator, bucket, GOSSIP_REGION):
        run = play(emulator, "spot-workers", "workers.yml", extra, check=True)
    results = {r["item"]["name"]: r for r in run.result("kopsible.kops.instancegroups : Converge the InstanceGroups")["results"]}
    assert sorted(results) == ["spot-workers", "warm-workers"]
    spot, warm = results["spot-workers"], results["warm-workers"]
    for result in (spot, warm):
        # kops' own create on the scratch copy, read back, planned there (issue 20 item 2); nothing on the real store
        assert result["changed"] is True and kops_verbs(result) == ["get", "create [scratch]", "get [scratch]", "update cluster [scratch]"]
        assert result["spec"]["role"] == "Node" and result["spec"]["subnets"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
        assert result["spec"]["image"] == example["workers_image"]
        assert result["spec"]["instanceMetadata"] == {"httpTokens": "required", "httpPutResponseHopLimit": 1}
    assert spot["spec"]["mixedInstancesPolicy"] == {
        "instances": ["m5.large", "m5a.large", "m6i.large", "m6a.large"],
        "onDemandBase": 0,
        "onDemandAboveBase": 0,
        "spotAllocationStrategy": "price-capacity-optimized",
    }
    assert spot["spec"]["capacityRebalance"] is True and "warmPool" not in spot["spec"]
    assert spot["spec"]["taints"] == ["spot=true:PreferNoSchedule"]
    assert warm["spec"]["warmPool"] == {"minSize": 1, "maxSize": 3, "enableLifecycleHook": True}
    assert "mixedInstancesPolicy" not in warm["spec"]

    # The plan kops computed for each group (the cluster was never applied, so it holds the whole cluster too).
    group = created(spot["plan"], "AutoscalingGroup/spot-workers.%s" % name)
    assert (group["MinSize"], group["MaxSize"], group["CapacityRebalance"]) == ("1", "10", "true")
    assert group["MixedSpotAllocationStrategy"] == "price-capacity-optimized"
    assert (group["MixedOnDemandBase"], group["MixedOnDemandAboveBase"]) == ("0", "0")
    assert group["MixedInstanceOverrides"] == "[m5.large, m5a.large, m6i.large, m6a.large]"
    assert created(spot["plan"], "WarmPool/spot-workers.%s" % name)["Enabled"] == "false"
    assert "AutoscalingGroup/warm-workers.%s" % name not in [i["resource"] for i in spot["plan"]["create"]]
    pool = created(warm["plan"], "WarmPool/warm-workers.%s" % name)
    assert (pool["Enabled"], pool["MinSize"], pool["MaxSize"]) == ("true", "1", "3")
    # The hook nodeup completes before a launched instance goes into the pool (enable_lifecycle_hook).
    hook = created(warm["plan"], "AutoscalingLifecycleHook/kops-warmpool-warm-workers")
    assert (hook["HookName"], hook["LifecycleTransition"]) == ("kops-warmpool", "autoscaling:EC2_INSTANCE_LAUNCHING")
    template = created(spot["plan"], "LaunchTemplate/spot-workers.%s" % name)
    assert (template["InstanceType"], template["HTTPTokens"], template["ImageID"]) == ("m5.large", "required", example["workers_image"])

    # The state store still has only the gossip example's groups.
    listing = emulator.client("s3", GOSSIP_REGION).list_objects_v2(Bucket=bucket, Prefix=name + "/instancegroup/")
    keys = [o["Key"] for o in listing["Contents"]]
    assert sorted(k.rsplit("/", 1)[1] for k in keys) == ["bastions", "control-plane-eu-west-1a", "nodes-eu-west-1a", "nodes-eu-west-1b", "nodes-eu-west-1c"]


def test_gossip_example_applies_a_name_kops_truncates_next_to_a_dash(emulator, ssh_public_key):
    """Issue 15: examples/gossip as cluster1.k8s.local (a first label of 8 characters). kops cuts the
    kops-controller target group name to 25 characters, which end in a dash, then adds "-" and a hash:
    kops-controller-cluster1--<hash>. AWS accepts that name; the emulator does too now, so the apply succeeds."""
    emulator.warm(GOSSIP_REGION)
    run = play(emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key, cluster_name="cluster1.k8s.local"))
    assert run.result("kopsible.kops.cluster : Cluster cluster1.k8s.local is present")["changed"] is True
    names = [g["TargetGroupName"] for g in emulator.client("elbv2", GOSSIP_REGION).describe_target_groups()["TargetGroups"]]
    assert [n for n in names if n.startswith("kops-controller-cluster1--")], names
    assert all(len(n) <= 32 for n in names)


def workers(example, **changes):
    """The example's ``workers_instance_groups`` with ``changes`` ({group name: {option: value}}) applied."""
    return [dict(g, **changes.get(g["name"], {})) for g in example["workers_instance_groups"]]


def group_results(run):
    """``{group name: kops_instancegroup result}`` and the cluster plan-and-apply result of an instancegroups run."""
    converged = run.result("kopsible.kops.instancegroups : Converge the InstanceGroups")["results"]
    return {r["item"]["name"]: r for r in converged}, run.result("kopsible.kops.instancegroups : Plan and apply the cluster once")


def auto_scaling_groups(emulator):
    asg = emulator.client("autoscaling", GOSSIP_REGION)
    return {g["AutoScalingGroupName"]: g for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]}


def assert_unchanged(emulator, example, extra, groups):
    """A re-run of the example with ``groups`` changes nothing: each group and the cluster plan report changed=false."""
    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", dict(extra, workers_instance_groups=groups)))
    assert {n: r["changed"] for n, r in results.items()} == {"spot-workers": False, "warm-workers": False}
    assert cluster["changed"] is False, cluster.get("plan_summary")


def test_spot_workers_example_applied_scaled_rolled_deleted(emulator, ssh_public_key):
    """examples/spot-workers for real on the gossip example's applied cluster: apply (read back from the Auto
    Scaling groups: mixed instances policy, spot only, capacity rebalance, warm pool and its hook), re-run
    unchanged; scale the spot group (the policy survives the update); a launch-template change rolled cloud-only
    (every spot instance replaced onto the new version); delete both groups, re-run unchanged; then delete the
    cluster: no group, template or key pair is left."""
    example = example_vars("spot-workers")
    bucket, name = example["state_store_bucket"], example["cluster_name"]
    spot_name, warm_name = "spot-workers." + name, "warm-workers." + name
    emulator.warm(GOSSIP_REGION)
    play(emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key))
    extra = offline(emulator, ssh_public_key)

    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", extra))
    assert all(r["changed"] for r in results.values()) and cluster["changed"] is True
    groups = auto_scaling_groups(emulator)
    spot, warm = groups[spot_name], groups[warm_name]
    policy = spot["MixedInstancesPolicy"]
    assert [o["InstanceType"] for o in policy["LaunchTemplate"]["Overrides"]] == ["m5.large", "m5a.large", "m6i.large", "m6a.large"]
    distribution = policy["InstancesDistribution"]
    assert (int(distribution["OnDemandBaseCapacity"]), int(distribution["OnDemandPercentageAboveBaseCapacity"]), distribution["SpotAllocationStrategy"]) == (
        0,
        0,
        "price-capacity-optimized",
    )
    assert spot["CapacityRebalance"] is True and (spot["MinSize"], spot["MaxSize"], len(spot["Instances"])) == (1, 10, 1)
    asg = emulator.client("autoscaling", GOSSIP_REGION)
    pool = asg.describe_warm_pool(AutoScalingGroupName=warm_name)["WarmPoolConfiguration"]
    assert (pool["MinSize"], pool["MaxGroupPreparedCapacity"]) == (1, 3)
    hooks = asg.describe_lifecycle_hooks(AutoScalingGroupName=warm_name)["LifecycleHooks"]
    assert ("kops-warmpool", "autoscaling:EC2_INSTANCE_LAUNCHING") in [(h["LifecycleHookName"], h["LifecycleTransition"]) for h in hooks]
    assert "MixedInstancesPolicy" not in warm and (warm["MinSize"], warm["MaxSize"]) == (1, 6)
    assert_unchanged(emulator, example, extra, workers(example))

    # Scale the spot group: the update keeps its mixed instances policy and launches from it.
    scaled = workers(example, **{"spot-workers": {"min_size": 2}})
    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", dict(extra, workers_instance_groups=scaled)))
    assert results["spot-workers"]["changed"] is True and results["warm-workers"]["changed"] is False
    spot = auto_scaling_groups(emulator)[spot_name]
    assert spot["MinSize"] == 2 and len(spot["Instances"]) == 2
    assert spot["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"] == policy["LaunchTemplate"]["Overrides"]
    assert spot["CapacityRebalance"] is True
    assert_unchanged(emulator, example, extra, scaled)

    # A launch-template change (metadata hop limit), applied, then rolled cloud-only: every spot instance replaced.
    hop2 = workers(example, **{"spot-workers": {"min_size": 2, "instance_metadata": {"http_tokens": "required", "http_put_response_hop_limit": 2}}})
    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", dict(extra, workers_instance_groups=hop2)))
    assert results["spot-workers"]["changed"] is True and cluster["changed"] is True
    old = [i["InstanceId"] for i in auto_scaling_groups(emulator)[spot_name]["Instances"]]
    kops = dict(
        cluster=name,
        state_store="s3://" + bucket,
        kops_binary=extra["kops_binary"],
        kops_env=extra["kops_env"],
        region=GOSSIP_REGION,
        cloudonly=True,
        node_interval="1s",
    )
    roll = {"name": "roll", "kopsible.kops.rolling_update": dict(kops, instance_groups=["spot-workers"])}
    rolled = run_playbook([roll], emulator=emulator).result("roll")
    assert not rolled.get("failed"), rolled.get("msg")
    assert rolled["changed"] is True and rolled["would_roll"] == ["spot-workers"]
    spot = auto_scaling_groups(emulator)[spot_name]
    assert len(spot["Instances"]) == 2 and not {i["InstanceId"] for i in spot["Instances"]} & set(old)
    ec2 = emulator.client("ec2", GOSSIP_REGION)
    template = spot["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]["LaunchTemplateId"]
    latest = ec2.describe_launch_templates(LaunchTemplateIds=[template])["LaunchTemplates"][0]["LatestVersionNumber"]
    assert all(i["LaunchTemplate"]["Version"] == str(latest) for i in spot["Instances"])
    version = ec2.describe_launch_template_versions(LaunchTemplateId=template, Versions=[str(latest)])["LaunchTemplateVersions"][0]
    assert version["LaunchTemplateData"]["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    again = run_playbook([roll], emulator=emulator).result("roll")
    assert again["changed"] is False and again["would_roll"] == []
    assert_unchanged(emulator, example, extra, hop2)

    # Delete both groups (kops removes their resources); a re-run is unchanged.
    gone = [{"name": g["name"], "state": "absent"} for g in example["workers_instance_groups"]]
    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", dict(extra, workers_instance_groups=gone)))
    assert all(r["changed"] for r in results.values()), {n: r.get("msg") for n, r in results.items()}
    assert not {spot_name, warm_name} & set(auto_scaling_groups(emulator))
    templates = [t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]]
    # kops deletes a group's template only when the group names it at top level (awsup/aws_cloud.go deleteGroup,
    # asg.LaunchTemplate); a mixed-instances group names it inside its policy, so on AWS too its template stays
    # until `kops delete cluster` (docs/emulator.md).
    assert warm_name not in templates and spot_name in templates, templates
    results, cluster = group_results(play(emulator, "spot-workers", "workers.yml", dict(extra, workers_instance_groups=gone)))
    assert not any(r["changed"] for r in results.values()) and cluster["changed"] is False

    # The cluster goes too, its key pair with it (kops deletes it by KeyPairId).
    assert ec2.describe_key_pairs()["KeyPairs"]
    delete = {
        "name": "delete",
        "kopsible.kops.kops_cluster": dict(
            name=name, state="absent", state_store="s3://" + bucket, kops_binary=extra["kops_binary"], kops_env=extra["kops_env"], region=GOSSIP_REGION
        ),
    }
    deleted = run_playbook([delete], emulator=emulator).result("delete")
    assert not deleted.get("failed") and deleted["changed"] is True, deleted.get("msg")
    assert auto_scaling_groups(emulator) == {}
    assert ec2.describe_key_pairs()["KeyPairs"] == []
    assert [t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]] == []


class ChinaNetwork:
    """What a user in cn-north-1 has before running examples/aws-china: a VPC (10.20.0.0/16) with an internet
    gateway, a private and a utility subnet in each of cn-north-1a/b, the private hosted zone kops.internal
    associated with the VPC, the state-store bucket, and an Ubuntu image owned by the account in the region.

    The image is a copy (ec2:CopyImage) of the emulator's Ubuntu image: moto's ec2:RegisterImage keeps only
    Name and Description (no Architecture), and kops then refuses every instance type ("machine type
    architecture x86_64 does not match image architecture ''").
    """

    def __init__(self, emulator, example):
        emulator.warm(CHINA)
        # kops takes the partition of its ARNs from this answer (upup/pkg/fi/cloudup/awsup/aws_cloud.go AccountInfo);
        # they show in the IAM policies it writes on apply, never in a dry run.
        assert emulator.client("sts", CHINA).get_caller_identity()["Arn"].startswith("arn:aws-cn:")
        ec2 = emulator.client("ec2", CHINA)
        self.vpc = ec2.create_vpc(CidrBlock=example["cluster_network_cidr"])["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=self.vpc, EnableDnsHostnames={"Value": True})
        gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=self.vpc)
        self.cidrs = {}

        def subnet(cidr, zone):
            subnet_id = ec2.create_subnet(VpcId=self.vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
            self.cidrs[subnet_id] = cidr
            return subnet_id

        self.private = [subnet("10.20.32.0/19", "cn-north-1a"), subnet("10.20.64.0/19", "cn-north-1b")]
        self.utility = [subnet("10.20.0.0/22", "cn-north-1a"), subnet("10.20.4.0/22", "cn-north-1b")]
        self.zone_id = emulator.client("route53", CHINA).create_hosted_zone(
            Name=example["cluster_dns_zone"] + ".",
            CallerReference="kops-internal",
            HostedZoneConfig={"PrivateZone": True},
            VPC={"VPCRegion": CHINA, "VPCId": self.vpc},
        )["HostedZone"]["Id"]
        self.image = ec2.copy_image(SourceImageId=UBUNTU_AMI, SourceRegion=CHINA, Name=example["cluster_image"].split("/", 1)[1])["ImageId"]
        make_bucket(emulator, example["state_store_bucket"], CHINA)

    def overrides(self):
        """The example's placeholders replaced by the ids made here."""
        return dict(cluster_vpc=self.vpc, cluster_subnets=self.private, cluster_utility_subnets=self.utility, cluster_image=self.image)


def stage_kops_files(emulator, bucket, prefix="files"):
    """What ``kops get assets --copy`` puts in the example's fileRepository for kops' own artifacts: under their
    artifacts.k8s.io path (binaries/kops/1.36.2/...), readable without credentials, the sha256 files kops reads
    (nodeup, protokube, channels and the control-plane images, per architecture; Kubernetes' own hashes are
    built into kops). Only the placeholders' hashes of tools/harness/kops_env.py: the instances never boot.

    Returns ``(fileRepository URL, KOPS_BASE_URL)`` through the endpoint, path style.
    """
    s3 = emulator.client("s3", CHINA)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": CHINA})
    tree = artifact_mirror()[len("file://") :]
    base = "%s/binaries/kops/%s" % (prefix, os.path.basename(tree))
    for folder, _, files in os.walk(tree):
        for file_name in files:
            if file_name.endswith(".sha256"):
                path = os.path.join(folder, file_name)
                with open(path, "rb") as handle:
                    s3.put_object(Bucket=bucket, Key=base + "/" + os.path.relpath(path, tree), Body=handle.read(), ACL="public-read")
    return "%s/%s/%s/" % (emulator.url, bucket, prefix), "%s/%s/%s" % (emulator.url, bucket, base)


def test_aws_china_example_check_mode(emulator, ssh_public_key, tmp_path, kops_dns, kube_world_process):
    """examples/aws-china in check mode on a new cluster: the spec kops would create in cn-north-1 (the existing
    VPC and subnets, private topology and private DNS, an internal API load balancer, the asset mirrors).
    Then applied as a user would, with kops' files from the fileRepository mirror, to read back what only an
    apply shows: IAM roles and policies in the aws-cn partition, the VPC used (not created), the shared subnets
    tagged, the API record in the private zone. Then check mode again: an empty plan, changed=false. No DNS
    lookup; check mode writes nothing either time. Then operate.yml's steps: terraform; roll (not cloud-only) and
    validate for real against the cluster's control plane (kube world), read back from kops and the Kubernetes API."""
    example = example_vars("aws-china")
    net = ChinaNetwork(emulator, example)
    bucket, name = example["state_store_bucket"], example["cluster_name"]
    # The example's mirror bucket, reached through the endpoint (path style) instead of s3.cn-north-1.amazonaws.com.cn.
    file_repository, base_url = stage_kops_files(emulator, "kopsible-cn-assets")
    assert example["kops_env"]["KOPS_BASE_URL"] == example["cluster_assets"]["fileRepository"] + "binaries/kops/1.36.2"
    assets = dict(example["cluster_assets"], fileRepository=file_repository)
    extra = offline(emulator, ssh_public_key, kops_env={"KOPS_BASE_URL": base_url}, cluster_assets=assets, **net.overrides())

    with NothingWritten(emulator, bucket, CHINA):
        run = play(emulator, "aws-china", "cluster.yml", extra, check=True)
    result = run.result("China cluster %s" % name)
    spec = result["spec"]
    assert result["changed"] is True and kops_verbs(result) == ["get", "create cluster --dry-run"]
    assert spec["cloudProvider"] == "aws" and spec["configBase"] == "s3://%s/%s" % (bucket, name)
    assert (spec["networkID"], spec["networkCIDR"]) == (net.vpc, "10.20.0.0/16")
    assert {(s["id"], s["cidr"], s["name"], s["type"], s["zone"]) for s in spec["subnets"]} == {
        (net.private[0], "10.20.32.0/19", "cn-north-1a", "Private", "cn-north-1a"),
        (net.private[1], "10.20.64.0/19", "cn-north-1b", "Private", "cn-north-1b"),
        (net.utility[0], "10.20.0.0/22", "utility-cn-north-1a", "Utility", "cn-north-1a"),
        (net.utility[1], "10.20.4.0/22", "utility-cn-north-1b", "Utility", "cn-north-1b"),
    }
    assert spec["topology"]["dns"]["type"] == "Private" and spec["dnsZone"] == "kops.internal"
    assert spec["api"]["loadBalancer"]["type"] == "Internal"
    assert spec["assets"] == assets
    assert (spec["kubernetesVersion"], spec["channel"]) == ("1.34.1", "none")
    groups = {g["name"]: (g["role"], g["zones"]) for g in result["instance_groups"]}
    assert groups == {
        "control-plane-cn-north-1a": ("ControlPlane", ["cn-north-1a"]),
        "nodes-cn-north-1a": ("Node", ["cn-north-1a"]),
        "nodes-cn-north-1b": ("Node", ["cn-north-1b"]),
    }
    assert run.result("Report the cluster")["msg"][1] == "zones ['cn-north-1a', 'cn-north-1b'], subnets ['Private', 'Utility']"

    # Applied as a user runs it (not check mode), to read back what kops made in China; then check mode again.
    applied = play(emulator, "aws-china", "cluster.yml", extra).result("China cluster %s" % name)
    assert applied["changed"] is True and "update cluster --yes" in kops_verbs(applied), kops_verbs(applied)
    iam = emulator.client("iam", CHINA)
    roles = sorted(r["Arn"] for r in iam.list_roles()["Roles"])
    assert roles == ["arn:aws-cn:iam::123456789012:role/masters.%s" % name, "arn:aws-cn:iam::123456789012:role/nodes.%s" % name]
    policy = json.dumps(iam.get_role_policy(RoleName="masters." + name, PolicyName="masters." + name)["PolicyDocument"])
    assert "arn:aws-cn:route53:::hostedzone/%s" % net.zone_id.split("/")[-1] in policy and "arn:aws:" not in policy
    ec2 = emulator.client("ec2", CHINA)
    assert [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == [net.vpc]  # used, not created
    for subnet in ec2.describe_subnets(SubnetIds=net.private + net.utility)["Subnets"]:
        assert {"Key": "kubernetes.io/cluster/" + name, "Value": "shared"} in subnet["Tags"], subnet
    templates = ec2.describe_launch_template_versions(LaunchTemplateName="nodes-cn-north-1a." + name, Versions=["$Latest"])["LaunchTemplateVersions"]
    assert templates[0]["LaunchTemplateData"]["ImageId"] == net.image
    records = emulator.client("route53", CHINA).list_resource_record_sets(HostedZoneId=net.zone_id)["ResourceRecordSets"]
    assert ("api.%s." % name, "A") in [(r["Name"], r["Type"]) for r in records]

    with NothingWritten(emulator, bucket, CHINA):
        run = play(emulator, "aws-china", "cluster.yml", extra, check=True)
    again = run.result("China cluster %s" % name)
    assert again["changed"] is False and again["changes"] == [] and again["plan_summary"] == []
    # the create-only options are compared with the stored cluster, its groups and its SSH key (issue 16 item 9; the key
    # read from the state store, in the aws-cn partition's S3 as well)
    assert [c["argv"][1:3] for c in again["kops_invocations"]] == [["get", "all"], ["update", "cluster"]]
    assert again["create_only_differences"] == [] and not user_warnings(again), again.get("warnings")

    # Guide 002's least-privilege IAM (playbooks/kops_iam.yml with the example's vars): every ARN is arn:aws-cn.
    zone = net.zone_id.split("/")[-1]
    iam_run = run_playbook(
        playbook=os.path.join(ROOT, "playbooks", "kops_iam.yml"),
        emulator=emulator,
        extra_vars=dict(example, aws_endpoint_url=emulator.url, kops_iam_hosted_zone_ids=[zone]),
    )
    assert iam_run.rc == 0, [(n, r.get("msg")) for n, r in iam_run.results if r.get("failed")]
    arn = "arn:aws-cn:iam::123456789012:policy/kops-operator"
    assert [p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"]] == [arn]
    version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
    document = json.loads(document) if isinstance(document, str) else document
    statements = {st["Sid"]: st for st in document["Statement"]}
    assert statements["StateStoreBuckets"]["Resource"] == ["arn:aws-cn:s3:::" + bucket]
    assert statements["ClusterRoles"]["Resource"] == ["arn:aws-cn:iam::*:role/*.kops.internal", "arn:aws-cn:iam::*:instance-profile/*.kops.internal"]
    assert statements["Records"]["Resource"] == ["arn:aws-cn:route53:::hostedzone/" + zone]
    assert "arn:aws:" not in json.dumps(document)

    # Guide 002's terraform target: kubernetes.tf written (nothing applied), its groups and aws-cn ARNs read back.
    out = tmp_path / "terraform-output"
    before = cloud_state(emulator)
    operate = play(emulator, "aws-china", "operate.yml", dict(extra, china_terraform_out=str(out), china_steps=["terraform"]))
    assert operate.result("Terraform output of %s" % name)["changed"] is True
    assert cloud_state(emulator) == before  # kops wrote only its state store (the completed spec) and the files
    terraform = (out / "kubernetes.tf").read_text()
    # One aws_autoscaling_group per InstanceGroup, named after the group kops applied (dots to dashes).
    applied_groups = [g["AutoScalingGroupName"] for g in emulator.client("autoscaling", CHINA).describe_auto_scaling_groups()["AutoScalingGroups"]]
    assert (
        sorted(re.findall(r'^resource "aws_autoscaling_group" "([^"]+)"', terraform, re.M)) == sorted(g.replace(".", "-") for g in applied_groups)
        and len(applied_groups) == 3
    ), applied_groups
    # The ARNs are in the policy files kubernetes.tf reads (file("${path.module}/data/...")): all aws-cn.
    policy_file = "aws_iam_role_policy_masters.%s_policy" % name
    assert 'file("${path.module}/data/%s")' % policy_file in terraform
    assert "arn:aws-cn:route53:::hostedzone/" + zone in (out / "data" / policy_file).read_text()
    written = terraform + "".join(f.read_text() for f in (out / "data").iterdir() if not f.name.endswith("_user_data"))
    assert "arn:aws:" not in written and written.count("arn:aws-cn:") >= 2
    assert 'region = "cn-north-1"' in terraform

    # Guide 002's last steps for real, against the cluster's control plane (the kube world, resumed only now: its
    # dns-controller stand-in writes the API records, which the check-mode and terraform steps above must not see).
    # kops reaches the internal API through the load balancer's DNS name (pkg/kubeconfig/create_kubecfg.go), which the
    # emulator's DNS face answers with the control plane's address, so kops runs through tools/kops-with-local-dns.
    live = dict(
        extra,
        kops_binary=os.path.join(ROOT, "tools", "kops-with-local-dns"),
        kops_env=dict(extra["kops_env"], KOPSIBLE_KOPS=kops_binary(), KOPSIBLE_RESOLV_CONF=kops_dns.resolv_conf),
    )
    with kube_world_process.serving():
        info = kube_world_process.wait_cluster(name, timeout=120, nodes=3)
        instances = {
            i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]}["kops.k8s.io/instancegroup"]
            for r in ec2.describe_instances(
                Filters=[{"Name": "tag:KubernetesCluster", "Values": [name]}, {"Name": "instance-state-name", "Values": ["running"]}]
            )["Reservations"]
            for i in r["Instances"]
        }
        [balancer] = emulator.client("elbv2", CHINA).describe_load_balancers()["LoadBalancers"]
        assert balancer["Scheme"] == "internal" and info["lb_names"] == [balancer["DNSName"].lower()], (balancer, info)
        # the dns-controller stand-in found the private zone of the aws-cn partition
        records = emulator.client("route53", CHINA).list_resource_record_sets(HostedZoneId=net.zone_id)["ResourceRecordSets"]
        internal = [r["ResourceRecords"] for r in records if r["Name"] == "api.internal.%s." % name and r["Type"] == "A"]
        assert [sorted(v["Value"] for v in values) for values in internal] == [sorted(info["api_endpoints"].values())], records
        assert sorted(info["api_endpoints"]) == sorted(i for i, g in instances.items() if g.startswith("control-plane")), info

        # Guide 002's rolling update with its flags as the example gives them (not cloud-only: kops reads the nodes
        # through the API for its table; no instance needs an update, so nothing rolls), then its last step, kops
        # validate cluster: one run of operate.yml, as a user runs both steps.
        run = play(emulator, "aws-china", "operate.yml", dict(live, china_steps=["roll", "validate"], china_validate_timeout="3m"))
        rolled = run.result("Rolling update with the guide's flags")
        assert not rolled.get("failed") and rolled["changed"] is False, rolled.get("msg")
        argv = next(c["argv"] for c in rolled["kops_invocations"] if c["argv"][1:3] == ["rolling-update", "cluster"])
        assert argv[1:5] == ["rolling-update", "cluster", "--name", name]
        pairs = [argv[i : i + 2] for i in range(len(argv) - 1)]
        for flag in (
            ["--instance-group", "nodes-cn-north-1a,nodes-cn-north-1b"],
            ["--instance-group-roles", "node"],
            ["--node-interval", "15m"],
            ["--control-plane-interval", "15m"],
            ["--validation-timeout", "30m"],
        ):
            assert flag in pairs, (flag, argv)
        assert "--fail-on-validate-error=true" in argv and "--cloudonly" not in argv and "--yes" not in argv
        # NODES: the group's instances kops found joined as Nodes, read through the API (no column with --cloudonly)
        assert {g["name"]: (g["status"], g["need_update"], g.get("nodes")) for g in rolled["groups_before"]} == {
            "nodes-cn-north-1a": ("Ready", 0, 1),
            "nodes-cn-north-1b": ("Ready", 0, 1),
        }, rolled["groups_before"]

        # kops' own validation result, and the nodes read from the API.
        validated = run.result("Validate %s" % name)
        assert not validated.get("failed") and validated["changed"] is False, validated.get("msg")
        validation = validated["validation"]
        assert validation["ok"] is True and validation["failures"] == [] and validation["problems"] == [], validation
        api_nodes = kube_world_process.core(name).list_node().items
        read = {n.spec.provider_id.rsplit("/", 1)[-1]: n for n in api_nodes}
        assert sorted(read) == sorted(instances), (sorted(read), instances)
        for instance_id, node in read.items():
            assert node.metadata.labels["kops.k8s.io/instancegroup"] == instances[instance_id]
            assert node.metadata.labels["topology.kubernetes.io/region"] == CHINA
            assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
        roles = {n.metadata.name: ("control-plane" if "node-role.kubernetes.io/control-plane" in n.metadata.labels else "node") for n in api_nodes}
        assert sorted((n["name"], n["role"], n["zone"], n["status"]) for n in validation["nodes"]) == sorted(
            (n.metadata.name, roles[n.metadata.name], n.metadata.labels["topology.kubernetes.io/zone"], "True") for n in api_nodes
        )
        assert sorted(roles.values()) == ["control-plane", "node", "node"]
