"""Issue 32, adopt: the Cluster and InstanceGroup objects as stored become the modules' options, the option fields
as their options and every other field in ``spec`` as stored; what no option says is named."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import adopt
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec_fields import IG_SPEC_FIELDS

CLUSTER = {
    "apiVersion": "kops.k8s.io/v1alpha2",
    "kind": "Cluster",
    "metadata": {"name": "c.example.org", "creationTimestamp": "2026-12-05T10:00:00Z"},
    "spec": {"kubernetesVersion": "1.34.1", "cloudProvider": "aws", "networking": {"cilium": {}}, "notAField": 1},
}
GROUP = {
    "apiVersion": "kops.k8s.io/v1alpha2",
    "kind": "InstanceGroup",
    "metadata": {"name": "spot", "labels": {"kops.k8s.io/cluster": "c.example.org", "team": "a"}, "creationTimestamp": "x"},
    "spec": {
        "role": "Node",
        "machineType": "m5.large",
        "minSize": 0,
        "maxSize": 4,
        "subnets": ["us-east-1a"],
        "taints": ["dedicated=batch:NoSchedule"],
        "nodeLabels": {"workload": "batch"},
        "mixedInstancesPolicy": {"instances": ["m5.large", "m5a.large"], "onDemandAboveBase": 0},
        "rootVolumeSize": 40,
    },
}


def test_the_cluster_is_its_name_and_every_spec_field_the_module_takes():
    options, left = adopt.adopt_cluster(CLUSTER)
    assert options == {"name": "c.example.org", "spec": {"kubernetesVersion": "1.34.1", "cloudProvider": "aws", "networking": {"cilium": {}}}}
    assert left == ["Cluster.spec.notAField"]  # kops_cluster's spec rule (spec_fields.check_spec_fields) refuses it


def test_an_instance_group_keeps_the_stored_values_options_first_then_spec():
    options, left = adopt.adopt_instance_group(GROUP, "c.example.org")
    assert options == {
        "cluster": "c.example.org",
        "name": "spot",
        "role": "Node",
        "machine_type": "m5.large",
        "min_size": 0,
        "max_size": 4,
        "subnets": ["us-east-1a"],
        "taints": ["dedicated=batch:NoSchedule"],
        "node_labels": {"workload": "batch"},
        "spec": {"mixedInstancesPolicy": {"instances": ["m5.large", "m5a.large"], "onDemandAboveBase": 0}, "rootVolumeSize": 40},
    }
    assert left == ["InstanceGroup spot.metadata.labels.team"]
    assert set(options["spec"]) <= IG_SPEC_FIELDS


def test_a_field_no_option_takes_is_named_and_left_out():
    doc = dict(GROUP, spec=dict(GROUP["spec"], someFutureField=True), metadata=dict(GROUP["metadata"], annotations={"a/b": "c"}))
    options, left = adopt.adopt_instance_group(doc, "c.example.org")
    assert "someFutureField" not in options["spec"]
    assert left == ["InstanceGroup spot.spec.someFutureField", "InstanceGroup spot.metadata.annotations.a/b", "InstanceGroup spot.metadata.labels.team"]


def test_adoption_orders_the_groups_and_gathers_what_is_left():
    second = dict(GROUP, metadata={"name": "a-nodes", "labels": {"kops.k8s.io/cluster": "c.example.org"}})
    found = adopt.adoption({"cluster": CLUSTER, "instance_groups": [GROUP, second]})
    assert [g["name"] for g in found["instance_groups"]] == ["a-nodes", "spot"]
    assert found["not_expressed"] == ["Cluster.spec.notAField", "InstanceGroup spot.metadata.labels.team"]
