"""Issue 16 item 7: every dict option of kops_instancegroup and kops_cluster merges into the stored value (keys
given are set, keys not given are kept, ``null`` removes a key), and each option's documentation says so."""

import ast
import os

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._kops import create_args
from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORED = {
    "apiVersion": "kops.k8s.io/v1alpha2",
    "kind": "InstanceGroup",
    "metadata": {"name": "nodes"},
    "spec": {
        "role": "Node",
        "minSize": 1,
        "maxSize": 3,
        "rootVolumeSize": 64,
        "rootVolumeType": "gp3",
        "nodeLabels": {"team": "a", "tier": "web"},
        "cloudLabels": {"cost": "1", "owner": "x"},
        "instanceMetadata": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
        "mixedInstancesPolicy": {"instances": ["c5.large", "c5a.large"], "onDemandAboveBase": 100, "instanceRequirements": {"cpu": {"min": "2", "max": "4"}}},
        "warmPool": {"minSize": 1, "maxSize": 2},
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        "kubelet": {"maxPods": 50, "anonymousAuth": False},
    },
}


def merged(params, stored=STORED):
    overrides = {("spec", f): v for f, v in kops_ig.overrides(params).items()}
    return kops_spec.desired_object(stored, overrides, params.get("spec"))["spec"]


def test_root_volume_keeps_type_when_only_size_is_given():
    """The issue's input: {size: 64, type: gp3} then {size: 64} must keep type."""
    spec = merged({"root_volume": {"size": 64}})
    assert (spec["rootVolumeSize"], spec["rootVolumeType"]) == (64, "gp3")
    assert kops_spec.diff_paths(kops_spec.strip_server_fields(STORED), dict(STORED, spec=spec)) == []


def test_root_volume_null_removes_one_field():
    spec = merged({"root_volume": {"type": None, "size": 100}})
    assert spec["rootVolumeSize"] == 100 and "rootVolumeType" not in spec


@pytest.mark.parametrize(
    "option, given, field, expected",
    [
        ("node_labels", {"tier": "api", "new": "1"}, "nodeLabels", {"team": "a", "tier": "api", "new": "1"}),
        ("node_labels", {"tier": None}, "nodeLabels", {"team": "a"}),
        ("cloud_labels", {"owner": None, "cost": 2}, "cloudLabels", {"cost": "2"}),
        ("instance_metadata", {"http_put_response_hop_limit": 2}, "instanceMetadata", {"httpTokens": "required", "httpPutResponseHopLimit": 2}),
        ("instance_metadata", {"http_tokens": None}, "instanceMetadata", {"httpPutResponseHopLimit": 1}),
        (
            "mixed_instances_policy",
            {"on_demand_base": 1, "instance_requirements": {"cpu": {"max": 8}}},
            "mixedInstancesPolicy",
            {"instances": ["c5.large", "c5a.large"], "onDemandAboveBase": 100, "onDemandBase": 1, "instanceRequirements": {"cpu": {"min": "2", "max": 8}}},
        ),
        (
            "mixed_instances_policy",
            {"instances": ["m5.large"]},
            "mixedInstancesPolicy",  # a list replaces
            {"instances": ["m5.large"], "onDemandAboveBase": 100, "instanceRequirements": {"cpu": {"min": "2", "max": "4"}}},
        ),
        ("warm_pool", {"max_size": 5}, "warmPool", {"minSize": 1, "maxSize": 5}),
        ("warm_pool", {"min_size": None, "max_size": None}, "warmPool", None),  # emptied: removed
        ("rolling_update", {"max_unavailable": 1}, "rollingUpdate", {"maxSurge": 1, "maxUnavailable": 1}),
        ("spec", {"kubelet": {"maxPods": 110}}, "kubelet", {"maxPods": 110, "anonymousAuth": False}),
    ],
)
def test_every_instance_group_dict_option_merges(option, given, field, expected):
    spec = merged({option: given})
    assert spec.get(field) == expected
    untouched = set(STORED["spec"]) - {field}
    assert all(spec[k] == STORED["spec"][k] for k in untouched)


def test_new_group_drops_null_keys():
    manifest = kops_ig.new_manifest("c.example.org", "n", "Node", {})
    overrides = {("spec", f): v for f, v in kops_ig.overrides({"node_labels": {"a": "1", "b": None}, "root_volume": {"size": 20, "type": None}}).items()}
    spec = kops_spec.desired_object(manifest, overrides)["spec"]
    assert spec == {"role": "Node", "nodeLabels": {"a": "1"}, "rootVolumeSize": 20}


def test_merged_params_judge_what_would_be_stored():
    """The rules see the merged value: warm_pool {min_size: 3} against the stored maxSize 2 is refused."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

    params = {"name": "nodes", "warm_pool": {"min_size": 3}}
    with pytest.raises(RuleError, match="warm_pool.max_size: 2 cannot be lower than min_size 3"):
        kops_ig.check_fields(kops_ig.merged_params(params, merged(params)), "Node")
    params = {"name": "nodes", "root_volume": {"size": 10}}
    assert kops_ig.merged_params(params, merged(params))["root_volume"] == {"size": 10, "type": "gp3"}


def test_cluster_cloud_labels_merge():
    stored = {"kind": "Cluster", "spec": {"cloudLabels": {"team": "a", "env": "dev"}, "kubernetesVersion": "1.34.1"}}
    spec = kops_spec.desired_object(stored, kops_spec.cluster_overrides({"cloud_labels": {"env": None, "cost": 3}}))["spec"]
    assert spec["cloudLabels"] == {"team": "a", "cost": "3"}
    args = create_args.create_cluster_args("c.example.org", {"cloud_labels": {"a": 1, "b": None}})
    assert args[args.index("--cloud-labels") + 1] == "a=1"


def documentation(module):
    with open(os.path.join(ROOT, "plugins", "modules", module + ".py")) as handle:
        tree = ast.parse(handle.read())
    text = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "DOCUMENTATION")
    return yaml.safe_load(text)


@pytest.mark.parametrize("module", ["kops_instancegroup", "kops_cluster"])
def test_each_dict_option_documents_the_merge_rule(module):
    options = documentation(module)["options"]
    dicts = [name for name, o in options.items() if o.get("type") == "dict"]
    assert dicts, module
    for name in dicts:
        text = " ".join(options[name]["description"]) if isinstance(options[name]["description"], list) else options[name]["description"]
        assert "keys not given are kept" in text and "C(null) is removed" in text, (module, name)


def test_labels_given_through_spec_are_judged_too():
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

    params = {"name": "nodes", "spec": {"nodeLabels": {"a/b/c": "x"}}}
    with pytest.raises(RuleError, match="^node_labels: 'a/b/c'"):
        kops_ig.check_fields(kops_ig.merged_params(params, merged(params)), "Node")
