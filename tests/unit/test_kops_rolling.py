"""rolling_update's command lines and replacement bookkeeping (pure logic)."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rolling as kops_rolling
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rolling import group_instances, replaced, rolling_update_args
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

C = "c.example.org"


def test_every_option_maps_to_its_flag():
    params = dict(
        instance_groups=["nodes-a", "nodes-b"],
        instance_group_roles=["control-plane", "node"],
        cloudonly=True,
        force=True,
        validation_timeout="10m",
        drain_timeout="5m",
        control_plane_interval="1s",
        node_interval="2s",
        bastion_interval="3s",
        post_drain_delay="4s",
        validate_count=3,
        fail_on_validate_error=False,
        fail_on_drain_error=True,
    )
    assert rolling_update_args(C, params, yes=True) == [
        "rolling-update",
        "cluster",
        "--name",
        C,
        "--instance-group",
        "nodes-a,nodes-b",
        "--instance-group-roles",
        "control-plane,node",
        "--cloudonly",
        "--force",
        "--validation-timeout",
        "10m",
        "--drain-timeout",
        "5m",
        "--control-plane-interval",
        "1s",
        "--node-interval",
        "2s",
        "--bastion-interval",
        "3s",
        "--post-drain-delay",
        "4s",
        "--validate-count",
        "3",
        "--fail-on-validate-error=false",
        "--fail-on-drain-error=true",
        "--yes",
    ]


@pytest.mark.parametrize(
    "given, role",
    [
        ("Node", "node"),
        ("nodes", "node"),
        ("Master", "control-plane"),
        ("masters", "control-plane"),
        ("ControlPlane", "control-plane"),
        ("control-plane", "control-plane"),
        ("Bastions", "bastion"),
        ("APIServer", "apiserver"),
    ],
)
def test_roles_are_read_as_kops_reads_them(given, role):
    """pkg/apis/kops/parse.go ParseInstanceGroupRole(input, lenient=true), as rolling-update_cluster.go:329 calls it:
    the AWS China guide's --instance-group-roles=Node and =Master are kops' node and control-plane."""
    assert rolling_update_args(C, {"instance_group_roles": [given]}, yes=False)[-2:] == ["--instance-group-roles", role]


def test_defaults_are_left_to_kops():
    assert rolling_update_args(C, {}, yes=False) == ["rolling-update", "cluster", "--name", C]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"instance_group_roles": ["worker"]}, "instance_group_roles: 'worker' is not one of"),
        ({"instance_group_roles": ["control_plane"]}, "instance_group_roles: 'control_plane'"),
        ({"validate_count": -1}, "validate_count: must be 0 or more"),
    ],
)
def test_bad_options(params, message):
    with pytest.raises(RuleError) as err:
        rolling_update_args(C, params, yes=True)
    assert message in str(err.value)


def test_group_instances_and_replacements():
    groups = [
        {"AutoScalingGroupName": "control-plane-a.masters." + C, "Instances": [{"InstanceId": "i-1"}]},
        {"AutoScalingGroupName": "nodes-a." + C, "Instances": [{"InstanceId": "i-3"}, {"InstanceId": "i-2"}]},
        {"AutoScalingGroupName": "other.example.org", "Instances": [{"InstanceId": "i-9"}]},
    ]
    before = group_instances(groups, C)
    assert before == {"control-plane-a": ["i-1"], "nodes-a": ["i-2", "i-3"]}
    after = {"control-plane-a": ["i-1"], "nodes-a": ["i-2", "i-4"]}
    assert replaced(before, after) == {"nodes-a": {"before": ["i-3"], "after": ["i-4"]}}


def test_drain_disabled_resolves_group_then_cluster_then_true():
    """Issue 16 item 11; kops' resolveSettings (pkg/instancegroups/settings.go:27-46): the InstanceGroup's
    drainAndTerminate, else the cluster's, else true."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.rolling import drain_disabled, roll_args

    groups = {
        "nodes-us-east-1a": {"spec": {"rollingUpdate": {"drainAndTerminate": False}}},
        "nodes-us-east-1b": {"spec": {}},
        "nodes-us-east-1c": {"spec": {"rollingUpdate": {"drainAndTerminate": True}}},
    }
    assert drain_disabled({"spec": {}}, groups) == {"nodes-us-east-1a": "rollingUpdate.drainAndTerminate: false on the InstanceGroup"}
    cluster = {"spec": {"rollingUpdate": {"drainAndTerminate": False}}}
    assert drain_disabled(cluster, groups) == {
        "nodes-us-east-1a": "rollingUpdate.drainAndTerminate: false on the InstanceGroup",
        "nodes-us-east-1b": "rollingUpdate.drainAndTerminate: false in the cluster spec (the InstanceGroup sets none)",
    }
    assert drain_disabled(None, {}) == {}
    assert roll_args("c.example.org", {"instance_group_roles": ["node"], "cloudonly": True}, ["nodes-us-east-1c"]) == [
        "rolling-update",
        "cluster",
        "--name",
        "c.example.org",
        "--instance-group",
        "nodes-us-east-1c",
        "--instance-group-roles",
        "node",
        "--cloudonly",
        "--yes",
    ]


def test_roll_order_is_kops_order_bastions_control_plane_apiservers_nodes():
    """pkg/instancegroups/rollingupdate.go:110-235: bastions, the control plane (its legacy role Master too), API
    servers, nodes, each phase by name in byte order (sortGroups: sort.Strings, so "Z" before "a")."""
    groups = {
        "nodes-b": {"spec": {"role": "Node"}},
        "control-plane-b": {"spec": {"role": "Master"}},
        "control-plane-a": {"spec": {"role": "ControlPlane"}},
        "bastions": {"spec": {"role": "Bastion"}},
        "api": {"spec": {"role": "APIServer"}},
        "Zeta": {"spec": {"role": "Node"}},
    }
    assert kops_rolling.roll_order(["nodes-b", "control-plane-b", "Zeta", "api", "control-plane-a", "bastions", "unknown"], groups) == [
        {"name": "bastions", "role": "Bastion"},
        {"name": "control-plane-a", "role": "ControlPlane"},
        {"name": "control-plane-b", "role": "ControlPlane"},
        {"name": "api", "role": "APIServer"},
        {"name": "Zeta", "role": "Node"},
        {"name": "nodes-b", "role": "Node"},
        {"name": "unknown", "role": "Node"},
    ]
