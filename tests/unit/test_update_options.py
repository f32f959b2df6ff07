"""kops_cluster's options of every ``kops update cluster`` of a run (issue 26 item 1): the roles read as kops reads
them (pkg/apis/kops/parse.go, the parse update and rolling-update share), refused with ``target: terraform`` (kops
would write only those groups; docs/tutorial/upgrading-kubernetes.md gives Terraform a targeted apply), and
``reconcile`` refused with terraform (cmd/kops/reconcile_cluster.go: "reconcile is not supported with terraform")."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.modules import kops_cluster


def params(**given):
    return dict({"instance_group_roles": None, "prune": False, "reconcile": False, "target": "direct", "allow_kops_downgrade": False}, **given)


def test_roles_in_kops_names_and_prune():
    options = kops_cluster.update_options(params(instance_group_roles=["Master", "APIServer"], prune=True))
    assert options == {"instance_group_roles": ["control-plane", "apiserver"], "prune": True, "reconcile": False, "allow_kops_downgrade": False}


@pytest.mark.parametrize(
    "given, message",
    [
        (dict(instance_group_roles=["control-plane"], target="terraform"), "instance_group_roles: not with target: terraform"),
        (dict(instance_group_roles=["etcd"]), "instance_group_roles: 'etcd' is not one of"),
        (dict(reconcile=True, target="terraform"), "reconcile: not with target: terraform"),
        (dict(reconcile=True, instance_group_roles=["node"]), "reconcile: not with instance_group_roles"),
    ],
)
def test_refused(given, message):
    with pytest.raises(RuleError) as err:
        kops_cluster.update_options(params(**given))
    assert str(err.value).startswith(message), str(err.value)
