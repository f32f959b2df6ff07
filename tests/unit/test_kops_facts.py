"""The facts kops derives from a stored spec and the names it gives AWS resources (plugins/module_utils/_kops/facts.py),
each rule in one place, read the same way by every part that reports it: kops_cluster's create-only comparison and
facts, the info modules' and inventory's summary, rolling_update's groups and its log reader. Cases from the kops
v1.36.2 source each rule names."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import facts, rolling_log
from ansible_collections.kopsible.kops.plugins.module_utils._kops.create_options import stored_create_options
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import cluster_facts
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rolling import group_instances
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import summarize_cluster

CLUSTER = "c.example.org"


def ig(name, role):
    return {"metadata": {"name": name}, "spec": {"role": role}}


@pytest.mark.parametrize(
    "role, expected",
    [
        ("ControlPlane", "cp-a.masters.c.example.org"),
        ("Master", "cp-a.masters.c.example.org"),
        ("APIServer", "cp-a.apiservers.c.example.org"),
        ("Node", "cp-a.c.example.org"),
        ("Bastion", "cp-a.c.example.org"),
        ("Unknown", None),
    ],
)
def test_asg_name_is_kops_autoscaling_group_name_and_reads_back(role, expected):
    """pkg/model/names.go AutoscalingGroupName, by role; instance_group_of_asg is its inverse."""
    assert facts.asg_name(CLUSTER, ig("cp-a", role)) == expected
    if expected:
        assert facts.instance_group_of_asg(expected, CLUSTER) == "cp-a"
    assert facts.instance_group_of_asg("cp-a.other.example.org", CLUSTER) is None


def test_an_api_server_group_is_named_right_in_rolling_updates_groups_and_log():
    """An APIServer InstanceGroup's Auto Scaling group is ``<ig>.apiservers.<cluster>``; rolling_update's instances per
    group (``replaced``) and its reading of kops' log both name the group ``apiserver-a``, as kops_info does."""
    names = {role: facts.asg_name(CLUSTER, ig(name, role)) for name, role in (("cp-a", "ControlPlane"), ("apiserver-a", "APIServer"), ("nodes", "Node"))}
    groups = [{"AutoScalingGroupName": asg, "Instances": [{"InstanceId": "i-%d" % n}]} for n, asg in enumerate(names.values())]
    assert group_instances(groups, CLUSTER) == {"cp-a": ["i-0"], "apiserver-a": ["i-1"], "nodes": ["i-2"]}
    line = 'I1201 00:25:23.150733   20913 instancegroups.go:654] Stopping instance "i-1", node "n1", in group "%s" (this may take a while).'
    log = rolling_log.parse_rolling_log(line % names["APIServer"], CLUSTER)
    assert list(log["groups"]) == ["apiserver-a"]


DUAL_STACK_ONLY = {
    "subnets": [
        {"name": "dualstack-us-east-1a", "zone": "us-east-1a", "type": "DualStack", "cidr": "172.20.64.0/18"},
        {"name": "utility-us-east-1a", "zone": "us-east-1a", "type": "Utility", "cidr": "172.20.0.0/21"},
    ]
}


@pytest.mark.parametrize(
    "types, topology",
    [
        (["Public", "Utility"], "public"),
        (["Private", "Utility"], "private"),
        # kops create cluster --ipv6 adds a DualStack subnet next to each Private one (upup/pkg/fi/cloudup/new_cluster.go)
        (["Private", "DualStack", "Utility"], "private"),
        (["DualStack", "Utility"], "private"),
        ([], None),
    ],
)
def test_subnet_topology_treats_dual_stack_as_private(types, topology):
    """pkg/model/awsmodel/network.go:161/:352: DualStack subnets are private ones (NAT egress, no public addresses)."""
    assert facts.subnet_topology([{"type": t} for t in types]) == topology


def test_a_dual_stack_cluster_is_private_everywhere_it_is_reported():
    """The create-only comparison, the cluster facts and the inventory's summary read one rule."""
    cluster = {"metadata": {"name": CLUSTER}, "spec": DUAL_STACK_ONLY}
    assert stored_create_options(cluster, {})["topology"] == "private"
    assert cluster_facts(cluster)["topology"] == "private"
    assert summarize_cluster({"name": CLUSTER, "store": "s3://b", "cluster": cluster, "instance_groups": []})["topology"] == "private"


def test_region_of_spec_is_kops_find_region():
    """upup/pkg/fi/cloudup/awsup/aws_utils.go FindRegion: a subnet's zone minus its last letter; a subnet's own
    region (kops' ClusterSubnetSpec.Region, GCE) wins; no subnet, no region."""
    assert facts.region_of_spec({"subnets": [{"name": "a", "zone": "cn-northwest-1b"}]}) == "cn-northwest-1"
    assert facts.region_of_spec({"subnets": [{"zone": "ap-southeast-2c"}]}) == "ap-southeast-2"
    assert facts.region_of_spec({"subnets": [{"region": "us-central1", "zone": "us-central1-a"}]}) == "us-central1"
    assert facts.region_of_spec({"subnets": []}) is None and facts.region_of_spec(None) is None and facts.region_of_spec({}) is None


SUBNETS = [
    {"name": "us-east-1a", "zone": "us-east-1a", "type": "Private"},
    {"name": "shared-b", "zone": "us-east-1b", "type": "Private"},
    {"name": "utility-us-east-1a", "zone": "us-east-1a", "type": "Utility"},
]


@pytest.mark.parametrize(
    "ig_spec, subnets, zones",
    [
        # AWS: the zones of the named subnets (pkg/model/context.go GatherSubnets), a subnet named unlike its zone too
        ({"subnets": ["us-east-1a", "shared-b"]}, SUBNETS, ["us-east-1a", "us-east-1b"]),
        ({"subnets": ["shared-b"], "zones": ["us-east-1b"]}, SUBNETS, ["us-east-1b"]),
        # GCE-style regional subnet (no zone): the group's zones
        (
            {"subnets": ["us-central1"], "zones": ["us-central1-a", "us-central1-b"]},
            [{"name": "us-central1", "region": "us-central1"}],
            ["us-central1-a", "us-central1-b"],
        ),
        ({"subnets": ["missing"]}, SUBNETS, ["missing"]),
        ({}, SUBNETS, []),
    ],
)
def test_instance_group_zones_are_its_subnets_zones(ig_spec, subnets, zones):
    assert facts.instance_group_zones(ig_spec, subnets) == zones


def test_control_plane_zones_of_a_shared_subnet_group_agree_in_comparison_and_summary():
    """kops_cluster's create-only comparison and the inventory's summary read a group's zones by one rule."""
    cluster = {"metadata": {"name": CLUSTER}, "spec": {"subnets": SUBNETS}}
    group = {"metadata": {"name": "cp"}, "spec": {"role": "ControlPlane", "subnets": ["shared-b"], "minSize": 1}}
    assert stored_create_options(cluster, {"cp": group})["control_plane_zones"] == {"us-east-1b"}
    summary = summarize_cluster({"name": CLUSTER, "store": "s3://b", "cluster": cluster, "instance_groups": [group]})
    assert summary["control_plane_zones"] == ["us-east-1b"] and summary["instance_groups"][0]["zones"] == ["us-east-1b"]
