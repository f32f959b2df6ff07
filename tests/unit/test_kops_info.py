"""kops_info's reading of the cloud side, case by case as kops v1.36.2 decides them
(upup/pkg/fi/cloudup/awsup/aws_cloud.go: findAutoscalingGroupLaunchConfiguration, buildCloudInstance,
awsBuildCloudInstanceGroup), on AWS API response shapes (kops' Auto Scaling group names: test_kops_facts.py)."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import info as kops_info
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import reader

CLUSTER = "c.example.org"


def ig(name, role):
    return {"metadata": {"name": name}, "spec": {"role": role}}


class Pages(object):
    def __init__(self, pages):
        self.pages = pages

    def paginate(self, **kwargs):
        return self.pages(**kwargs)


class FakeAutoscaling(object):
    """DescribeAutoScalingGroups / DescribeWarmPool answers, recording the requests."""

    def __init__(self, groups, warm=None):
        self.groups, self.warm, self.calls = groups, warm or {}, []

    def get_paginator(self, name):
        def pages(**kwargs):
            self.calls.append((name, kwargs))
            if name == "describe_auto_scaling_groups":
                return [{"AutoScalingGroups": [g for g in self.groups if g["AutoScalingGroupName"] in kwargs["AutoScalingGroupNames"]]}]
            return [{"Instances": self.warm.get(kwargs["AutoScalingGroupName"], [])}]

        return Pages(pages)


class FakeEC2(object):
    def __init__(self, instances, templates=None):
        self.instances, self.templates, self.calls = instances, templates or {}, []

    def describe_launch_templates(self, LaunchTemplateIds):
        self.calls.append(("describe_launch_templates", LaunchTemplateIds))
        return {"LaunchTemplates": [self.templates[i] for i in LaunchTemplateIds]}

    def get_paginator(self, name):
        def pages(**kwargs):
            self.calls.append((name, kwargs))
            return [{"Reservations": [{"Instances": self.instances}]}]

        return Pages(pages)


def instance(instance_id, group="nodes", tags=()):
    return {
        "InstanceId": instance_id,
        "InstanceType": "t3.medium",
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "PrivateIpAddress": "10.0.0.1",
        "Tags": [
            {"Key": "KubernetesCluster", "Value": CLUSTER},
            {"Key": "kops.k8s.io/instancegroup", "Value": group},
            {"Key": "k8s.io/role/node", "Value": "1"},
        ]
        + [{"Key": k, "Value": ""} for k in tags],
    }


def member(instance_id, version, state="InService", template="lt-1"):
    return {"InstanceId": instance_id, "LifecycleState": state, "LaunchTemplate": {"LaunchTemplateId": template, "Version": version}}


def test_need_update_latest_resolved_terminating_and_gone_skipped_detached_and_warm_pool():
    group = {
        "AutoScalingGroupName": "nodes." + CLUSTER,
        "MinSize": 1,
        "MaxSize": 4,
        "DesiredCapacity": 3,
        "LaunchTemplate": {"LaunchTemplateId": "lt-1", "Version": "$Latest"},
        "WarmPoolConfiguration": {"MinSize": 1},
        "Instances": [member("i-old", "2"), member("i-new", "3"), member("i-term", "2", "Terminating"), member("i-gone", "2")],
    }
    autoscaling = FakeAutoscaling([group], warm={"nodes." + CLUSTER: [member("i-warm", "3", "Warmed:Stopped")]})
    ec2 = FakeEC2(
        [
            instance("i-old"),
            instance("i-new"),
            instance("i-term"),
            instance("i-warm"),
            instance("i-det", tags=["kops.k8s.io/detached-from-asg"]),
            instance("i-det-other", group="other", tags=["kops.k8s.io/detached-from-asg"]),
        ],
        templates={"lt-1": {"LaunchTemplateId": "lt-1", "LatestVersionNumber": 3, "DefaultVersionNumber": 1}},
    )
    groups = kops_info.read_cloud_groups(autoscaling, ec2, CLUSTER, [ig("nodes", "Node"), ig("missing", "Node")])
    assert list(groups) == ["nodes"]
    cloud = groups["nodes"]
    assert cloud["launch"] == "lt-1:3"
    assert [(i["id"], i["status"], i["state"]) for i in cloud["instances"]] == [
        ("i-det", "Detached", "InService"),
        ("i-new", "UpToDate", "InService"),
        ("i-old", "NeedsUpdate", "InService"),
        ("i-warm", "UpToDate", "WarmPool"),
    ]
    assert cloud["instances"][2]["roles"] == ["node"] and cloud["instances"][2]["launch"] == "lt-1:2"
    assert ("describe_auto_scaling_groups", {"AutoScalingGroupNames": ["missing." + CLUSTER, "nodes." + CLUSTER]}) in autoscaling.calls
    filters = [kw for name, kw in ec2.calls if name == "describe_instances"][0]["Filters"]
    assert {"Name": "tag:KubernetesCluster", "Values": [CLUSTER]} in filters


def test_default_version_launch_configuration_and_groups_being_deleted():
    groups = [
        {
            "AutoScalingGroupName": "a." + CLUSTER,
            "MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": "lt-1", "Version": "$Default"}}},
            "Instances": [member("i-a", "1")],
        },
        {
            "AutoScalingGroupName": "b." + CLUSTER,
            "LaunchConfigurationName": "b-2",
            "Instances": [{"InstanceId": "i-b", "LifecycleState": "InService", "LaunchConfigurationName": "b-1"}],
        },
        {"AutoScalingGroupName": "c." + CLUSTER, "Status": "Delete in progress", "LaunchConfigurationName": "c-1", "Instances": []},
        {
            "AutoScalingGroupName": "d." + CLUSTER,
            "LaunchTemplate": {"LaunchTemplateId": "lt-2", "Version": "7"},
            "Instances": [member("i-d", "7", template="lt-2")],
        },
    ]
    ec2 = FakeEC2(
        [instance("i-a", "a"), instance("i-b", "b"), instance("i-d", "d")],
        templates={"lt-1": {"LaunchTemplateId": "lt-1", "LatestVersionNumber": 5, "DefaultVersionNumber": 1}},
    )
    found = kops_info.read_cloud_groups(FakeAutoscaling(groups), ec2, CLUSTER, [ig(n, "Node") for n in "abcd"])
    assert sorted(found) == ["a", "b", "d"]
    assert (found["a"]["launch"], found["a"]["instances"][0]["status"]) == ("lt-1:1", "UpToDate")
    assert (found["b"]["launch"], found["b"]["instances"][0]["status"]) == ("b-2", "NeedsUpdate")
    assert found["d"]["instances"][0]["status"] == "UpToDate"
    # only the template on $Default/$Latest is described
    assert [c for c in ec2.calls if c[0] == "describe_launch_templates"] == [("describe_launch_templates", ["lt-1"])]


def test_node_summary_and_group_counts():
    node = {
        "metadata": {
            "name": "i-0abc",
            "labels": {"kops.k8s.io/instancegroup": "nodes", "node-role.kubernetes.io/node": "", "topology.kubernetes.io/zone": "us-east-1a"},
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0abc", "unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.34.1"}},
    }
    summary = kops_info.node_summary(node)
    assert summary == {
        "name": "i-0abc",
        "instance_id": "i-0abc",
        "instance_group": "nodes",
        "role": "node",
        "zone": "us-east-1a",
        "ready": True,
        "kubelet_version": "v1.34.1",
        "unschedulable": True,
    }
    cloud = {"name": "nodes." + CLUSTER, "instances": [{"id": "i-0abc", "need_update": True}, {"id": "i-0def", "need_update": False}]}
    group = kops_info.group_info(ig("nodes", "Node"), {"instance_groups": [{"name": "nodes", "role": "Node"}]}, cloud, {"i-0abc": summary})
    assert (group["cloud"]["status"], group["cloud"]["need_update"], group["cloud"]["ready"]) == ("NeedsUpdate", 1, 1)
    assert [i["node"] for i in group["cloud"]["instances"]] == ["i-0abc", None]
    assert "node" not in cloud["instances"][0]  # the input is not modified


def test_read_file_store(tmp_path):
    (tmp_path / "c1" / "instancegroup").mkdir(parents=True)
    (tmp_path / "c1" / "config").write_text("metadata: {name: c1}\nspec: {kubernetesVersion: 1.34.1}\n")
    (tmp_path / "c1" / "instancegroup" / "nodes").write_text("metadata: {name: nodes}\nspec: {role: Node}\n")
    (tmp_path / "not-a-cluster").mkdir()
    records = reader.read_file_store("file://%s/" % tmp_path)
    assert [(r["name"], r["cluster"]["spec"]["kubernetesVersion"], [g["metadata"]["name"] for g in r["instance_groups"]]) for r in records] == [
        ("c1", "1.34.1", ["nodes"])
    ]
    assert records[0]["kops_version"] is None  # never applied: kops writes kops-version.txt at apply
    (tmp_path / "c1" / "kops-version.txt").write_text("1.36.2\n")
    assert reader.read_file_store("file://%s" % tmp_path)[0]["kops_version"] == "1.36.2"
    assert reader.read_file_store("file://%s" % tmp_path, names=["absent"]) == []
    (tmp_path / "c1" / "config").write_text("- a list\n")
    with pytest.raises(ValueError, match="not a kops object"):
        reader.read_file_store("file://%s" % tmp_path)
