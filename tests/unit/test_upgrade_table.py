"""kops upgrade cluster: its table parsed; kops_spec.dropped_paths (check mode runs ``kops upgrade cluster --yes`` on a scratch copy of the
specs, kops_preview.ScratchStore, so the actions are never applied in memory)."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import output as kops_output

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


def test_dropped_paths_names_set_fields_kops_did_not_keep():
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import dropped_paths

    desired = {
        "spec": {
            "kubeAPIServer": {"auditLogMaxAge": 10, "auditLogMaxAges": 10},
            "hooks": [{"name": "a", "nmae": "b"}],
            "cloudLabels": {},
            "nodePortAccess": [],
            "kubelet": {"anonymousAuth": False},
            "iam": {"legacy": None},
        }
    }
    stored = {"spec": {"kubeAPIServer": {"auditLogMaxAge": 10}, "hooks": [{"name": "a"}], "kubelet": {}}}
    assert dropped_paths(desired, stored) == ["spec.hooks[0].nmae", "spec.kubeAPIServer.auditLogMaxAges"]
    assert dropped_paths(desired, desired) == []
