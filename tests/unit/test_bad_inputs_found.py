"""Inputs a breaker session found (wrong types inside dict options, trailing newlines, bools as
numbers, a cluster named as `name`): each fails naming its field, never with a TypeError."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import kube_versions
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError


@pytest.mark.parametrize(
    "params, message",
    [
        ({"warm_pool": {"min_size": "x"}}, "warm_pool.min_size: 'x' must be a whole number"),
        ({"warm_pool": {"min_size": 1, "max_size": "x"}}, "warm_pool.max_size: 'x' must be a whole number"),
        ({"warm_pool": {"min_size": 3, "max_size": 1.5}}, "warm_pool.max_size: 1.5 must be a whole number"),
        ({"root_volume": {"size": "x"}}, "root_volume.size: 'x' must be a whole number"),
        ({"mixed_instances_policy": {"on_demand_above_base": "x"}}, "on_demand_above_base: 'x' must be a whole number"),
        ({"mixed_instances_policy": {"on_demand_above_base": 150.5}}, "on_demand_above_base: 150.5 must be a whole number"),
        ({"mixed_instances_policy": {"on_demand_base": "x"}}, "on_demand_base: 'x' must be a whole number"),
        ({"mixed_instances_policy": {"spot_instance_pools": -1}}, "spot_instance_pools: -1 must be 0 or more"),
        ({"external_load_balancers": [{"target_group_arn": 123}]}, "external_load_balancers[0].target_group_arn: 123 must be a string"),
        ({"instance_metadata": {"http_put_response_hop_limit": True}}, "http_put_response_hop_limit: True must be a whole number"),
        ({"taints": ["k=v:NoSchedule\n"]}, "taints[0]: 'k=v:NoSchedule\\n' must be key[=value]:Effect with Effect one of"),
        ({"taints": [7]}, "taints[0]: 7 must be a string"),
        ({"max_instance_lifetime": "24h\n"}, "max_instance_lifetime: '24h\\n' is not a duration such as 24h, 90m or 30s"),
    ],
)
def test_typed_and_anchored_ig_rules(params, message):
    with pytest.raises(RuleError) as err:
        kops_ig.check_fields(params, "Node")
    assert message in str(err.value)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: kops_rules.zones(["us-east-1a\n"]), "zones: 'us-east-1a\\n' is not an availability zone"),
        (lambda: kube_versions.kubernetes_version("1.34.1\n"), "is not a version"),
        (lambda: kops_rules.cluster_name("", "cluster"), "cluster: a DNS name is required"),
        (lambda: kops_rules.cluster_name("single", "cluster"), "cluster: a cluster name must be a fully qualified"),
        (lambda: kops_rules.non_negative(-1.5, "node_count"), "node_count: must be 0 or more, got -1.5"),
    ],
)
def test_cluster_rules_anchor_and_name_the_field(call, message):
    with pytest.raises(RuleError) as err:
        call()
    assert message in str(err.value)


def test_warm_pool_role_rule_waits_for_the_stored_role():
    kops_ig.check_fields({"warm_pool": {"min_size": 1}}, None)  # role unknown yet: no verdict
    with pytest.raises(RuleError) as err:
        kops_ig.check_fields({"warm_pool": {"min_size": 1}}, "ControlPlane")
    assert str(err.value) == "warm_pool: only allowed on instance groups with role Node or APIServer, not ControlPlane"
