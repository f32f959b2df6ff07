"""kops upgrade cluster: its table parsed, and its actions applied in memory for check mode."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils import kops_output, kops_spec

# The shape of `kops upgrade cluster` output (tab-padded columns of util/pkg/tables; the real output is parsed in
# tests/integration/test_kops_upgrade.py).
UPGRADE_OUT = (
    "ITEM\t\t\t\t\tPROPERTY\t\tOLD\t\tNEW\n"
    "Cluster\t\t\t\t\tKubernetesVersion\t1.34.1\t\t1.35.2\n"
    "InstanceGroup/nodes-us-east-1a\t\tImage\t\t\tami-old\t\tami-new\n"
    "Cluster\t\t\t\t\tChannel\t\t\t\t\tstable\n"
    "\nMust specify --yes to perform upgrade\n"
)


def test_parse_upgrade_table():
    assert kops_output.parse_upgrade(UPGRADE_OUT) == [
        {"item": "Cluster", "property": "KubernetesVersion", "old": "1.34.1", "new": "1.35.2"},
        {"item": "InstanceGroup/nodes-us-east-1a", "property": "Image", "old": "ami-old", "new": "ami-new"},
        {"item": "Cluster", "property": "Channel", "old": "", "new": "stable"},
    ]
    assert kops_output.parse_upgrade("") == []


def test_apply_upgrade_actions_leaves_inputs_alone():
    cluster = {"kind": "Cluster", "metadata": {"name": "c", "creationTimestamp": "x"}, "spec": {"kubernetesVersion": "1.34.1"}}
    groups = {
        "nodes-us-east-1a": {"kind": "InstanceGroup", "metadata": {"name": "nodes-us-east-1a"}, "spec": {"image": "ami-old"}},
        "other": {"kind": "InstanceGroup", "metadata": {"name": "other"}, "spec": {"image": "custom"}},
    }
    new_cluster, changed = kops_spec.apply_upgrade_actions(cluster, groups, kops_output.parse_upgrade(UPGRADE_OUT))
    assert new_cluster["spec"] == {"kubernetesVersion": "1.35.2", "channel": "stable"}
    assert "creationTimestamp" not in new_cluster["metadata"]
    assert [g["metadata"]["name"] for g in changed] == ["nodes-us-east-1a"] and changed[0]["spec"]["image"] == "ami-new"
    assert cluster["spec"]["kubernetesVersion"] == "1.34.1" and groups["nodes-us-east-1a"]["spec"]["image"] == "ami-old"
    with pytest.raises(ValueError, match="unknown kops upgrade action"):
        kops_spec.apply_upgrade_actions(cluster, groups, [{"item": "Cluster", "property": "Networking", "old": "", "new": "x"}])
