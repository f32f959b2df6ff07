"""kops_cluster_info and kops_instancegroup_info against a cluster the real kops applied in the emulator and
its real control plane (kube world): every value asserted against what kops stored (the state store's
objects), what AWS holds (Auto Scaling groups, instances, launch template versions), what kops itself says
needs a roll (``kops rolling-update cluster`` through rolling_update in check mode) and the Nodes of the API."""

import pytest
import yaml

from conftest import BUCKET, CLUSTER

pytestmark = pytest.mark.kops


def stored(kops_world):
    """The Cluster and InstanceGroup objects kops wrote: ``(cluster, {ig name: ig})``, read with boto3."""
    s3 = kops_world.emulator.client("s3")
    read = lambda key: yaml.safe_load(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())  # noqa: E731
    cluster = read(CLUSTER + "/config")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=CLUSTER + "/instancegroup/")["Contents"]]
    return cluster, {k.rsplit("/", 1)[1]: read(k) for k in keys}


def cloud(kops_world):
    """``{asg name: {'min', 'max', 'desired', 'instances': {id: need_update}}}`` from boto3: an instance needs an
    update when its launch template version is not the group's (resolved with DescribeLaunchTemplates)."""
    asg = kops_world.emulator.client("autoscaling")
    ec2 = kops_world.emulator.client("ec2")
    groups = {}
    for group in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
        template = group["LaunchTemplate"]
        version = template["Version"]
        if version in ("$Latest", "$Default"):
            found = ec2.describe_launch_templates(LaunchTemplateIds=[template["LaunchTemplateId"]])["LaunchTemplates"][0]
            version = str(found["LatestVersionNumber" if version == "$Latest" else "DefaultVersionNumber"])
        groups[group["AutoScalingGroupName"]] = {
            "min": group["MinSize"],
            "max": group["MaxSize"],
            "desired": group["DesiredCapacity"],
            "instances": {i["InstanceId"]: i["LaunchTemplate"]["Version"] != version for i in group["Instances"]},
        }
    return groups


def assert_matches_store_and_aws(kops_world, info):
    cluster, igs = stored(kops_world)
    aws = cloud(kops_world)
    assert info["cluster_name"] == CLUSTER and info["state_store"] == "s3://" + BUCKET
    assert info["kubernetes_version"] == cluster["spec"]["kubernetesVersion"]
    assert info["spec"] == cluster["spec"]
    assert info["zones"] == sorted({s["zone"] for s in cluster["spec"]["subnets"]})
    assert [g["name"] for g in info["instance_groups"]] == sorted(igs)
    for group in info["instance_groups"]:
        ig = igs[group["name"]]
        assert (group["role"], group["min_size"], group["max_size"], group["machine_type"], group["spec"]) == (
            {"Master": "ControlPlane"}.get(ig["spec"]["role"], ig["spec"]["role"]),
            ig["spec"]["minSize"],
            ig["spec"]["maxSize"],
            ig["spec"]["machineType"],
            ig["spec"],
        )
        suffix = ".masters." if ig["spec"]["role"] in ("Master", "ControlPlane") else "."
        name = group["name"] + suffix + CLUSTER
        assert group["cloud"]["name"] == name
        real = aws[name]
        assert (group["cloud"]["min_size"], group["cloud"]["max_size"], group["cloud"]["desired_capacity"]) == (real["min"], real["max"], real["desired"])
        assert {i["id"]: i["need_update"] for i in group["cloud"]["instances"]} == real["instances"]
        assert group["cloud"]["need_update"] == sum(real["instances"].values())
    assert sorted(aws) == sorted(g["cloud"]["name"] for g in info["instance_groups"])


def test_info_against_store_aws_kops_and_api(kops_world, kplay, kube_world, tmp_path):
    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")

    # the kube world's dns-controller stand-in writes the API records once the control plane is up: wait for it
    kube_world.wait_cluster(CLUSTER, timeout=120, nodes=5)
    # the whole store, check mode: the same answer, nothing written, no kops call
    before = kops_world.emulator.snapshot()
    run = kplay(
        [
            {"name": "all", "kopsible.kops.kops_cluster_info": {}},
            {"name": "missing", "kopsible.kops.kops_cluster_info": {"name": "absent.kopsclustertest.example.org"}},
            {"name": "nodes", "kopsible.kops.kops_instancegroup_info": {"cluster": CLUSTER, "roles": ["node"], "state_store": kops_world.kops["state_store"]}},
            {
                "name": "one",
                "kopsible.kops.kops_instancegroup_info": {
                    "cluster": CLUSTER,
                    "name": "control-plane-us-east-1b",
                    "state_store": kops_world.kops["state_store"],
                },
            },
        ],
        check=True,
    )
    assert not run.failed, run.stdout[-3000:]
    after = kops_world.emulator.snapshot()
    assert after == before, kops_world.emulator.snapshot_diff(before, after)
    found = run.result("all")
    assert found["changed"] is False and found["kops_invocations"] == []
    assert [c["cluster_name"] for c in found["clusters"]] == [CLUSTER]
    info = found["clusters"][0]
    assert_matches_store_and_aws(kops_world, info)
    assert info["needs_update"] == [] and info["nodes"] is None and info["validation"] is None
    assert info["control_plane_zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert run.result("missing")["clusters"] == []
    assert [g["name"] for g in run.result("nodes")["instance_groups"]] == [g["name"] for g in info["instance_groups"] if g["role"] == "Node"]
    one = run.result("one")["instance_groups"]
    assert [g["name"] for g in one] == ["control-plane-us-east-1b"]
    assert one[0] == next(g for g in info["instance_groups"] if g["name"] == "control-plane-us-east-1b")
    assert one[0]["cloud"]["instances"][0]["roles"] == ["control-plane"]

    # with the API: nodes joined to instances, kops' validation (one kops call)
    kubeconfig = str(tmp_path / "kubeconfig")
    dns = dict(resolv_conf=kops_world.dns.resolv_conf)
    exported = kplay([{"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": kubeconfig}}], **dns)
    assert not exported.failed, exported.stdout[-2000:]
    live_run = kplay(
        [
            {"name": "i", "kopsible.kops.kops_cluster_info": {"name": CLUSTER, "kubeconfig": kubeconfig, "validate": True}},
            {
                "name": "g",
                "kopsible.kops.kops_instancegroup_info": {"cluster": CLUSTER, "kubeconfig": kubeconfig, "state_store": kops_world.kops["state_store"]},
            },
        ],
        **dns,
    )
    live, groups_live = live_run.result("i"), live_run.result("g")
    assert not live.get("failed"), live.get("msg")
    assert not groups_live.get("failed"), groups_live.get("msg")
    assert [c["argv"][1:3] for c in live["kops_invocations"]] == [["validate", "cluster"]]
    info = live["clusters"][0]
    assert info["validation"]["ok"] is True, info["validation"]["problems"]
    api_nodes = {n.metadata.name: n for n in kube_world.core(CLUSTER).list_node().items}
    assert sorted(n["name"] for n in info["nodes"]) == sorted(api_nodes)
    for node in info["nodes"]:
        real = api_nodes[node["name"]]
        assert node["instance_id"] == real.spec.provider_id.rsplit("/", 1)[1]
        assert node["instance_group"] == real.metadata.labels["kops.k8s.io/instancegroup"]
        assert node["kubelet_version"] == real.status.node_info.kubelet_version
        assert node["ready"] is True
    for group in info["instance_groups"]:
        for instance in group["cloud"]["instances"]:
            node = next(n for n in info["nodes"] if n["instance_id"] == instance["id"])
            assert instance["node"] == node["name"] and node["instance_group"] == group["name"]
    # kops_instancegroup_info with the kubeconfig: each instance names the Node whose providerID is that instance
    node_of = {n.spec.provider_id.rsplit("/", 1)[1]: name for name, n in api_nodes.items()}
    instances = [i for g in groups_live["instance_groups"] for i in g["cloud"]["instances"]]
    assert len(instances) == len(api_nodes) and all(i["node"] == node_of[i["id"]] for i in instances), instances
    with open(kubeconfig) as handle:
        key = yaml.safe_load(handle)["users"][0]["user"]["client-key-data"]
    assert key not in str(live) and key not in str(groups_live)

    # after an upgrade applied without a roll: every instance needs an update, as kops itself says
    upgraded = kplay([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.35.0", "apply": True}}]).result("u")
    assert not upgraded.get("failed"), upgraded.get("msg")
    run = kplay(
        [
            {"name": "i", "kopsible.kops.kops_cluster_info": {"name": CLUSTER}},
            {"name": "roll", "kopsible.kops.rolling_update": {"cluster": CLUSTER, "cloudonly": True}},
        ],
        check=True,
    )
    assert not run.failed, run.stdout[-3000:]
    info = run.result("i")["clusters"][0]
    assert_matches_store_and_aws(kops_world, info)
    assert info["kubernetes_version"] == "1.35.0"
    kops_says = run.result("roll")["groups_before"]
    assert sorted(info["needs_update"]) == sorted(g["name"] for g in kops_says if g["need_update"])
    assert len(info["needs_update"]) == 5
    for group in info["instance_groups"]:
        theirs = next(g for g in kops_says if g["name"] == group["name"])
        assert (group["cloud"]["status"], group["cloud"]["need_update"], group["cloud"]["ready"]) == (theirs["status"], theirs["need_update"], theirs["ready"])


def test_bad_input_names_the_field(kplay, kops_world):
    run = kplay(
        [
            {"name": "v", "kopsible.kops.kops_cluster_info": {"validate": True}, "ignore_errors": True},
            {
                "name": "r",
                "kopsible.kops.kops_instancegroup_info": {"cluster": CLUSTER, "roles": ["worker"], "state_store": kops_world.kops["state_store"]},
                "ignore_errors": True,
            },
            {"name": "s", "kopsible.kops.kops_instancegroup_info": {"cluster": CLUSTER, "state_store": "s3://no-such-bucket"}, "ignore_errors": True},
        ]
    )
    assert run.result("v")["failed"] and run.result("v")["msg"].startswith("validate: needs name")
    assert run.result("r")["failed"] and run.result("r")["msg"].startswith("roles[0]: 'worker' is not one of")
    assert run.result("s")["failed"] and "no-such-bucket does not exist" in run.result("s")["msg"]
