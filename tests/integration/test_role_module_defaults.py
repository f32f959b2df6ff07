"""Issue 33 item 1: the roles keep a play's ``group/kopsible.kops.kops`` module_defaults. A role task's argument
``"{{ x | default(omit) }}"`` used to drop the play's value of that argument (ansible-core merges module_defaults
first, then removes omitted arguments), so a play that gave the state store and the kops binary only as
module_defaults failed with ``state_store: required``. The roles now hand their kops_* variables to the modules as
module defaults of the action group ``role_settings``, merged over the play's key by key.

The user's play: the state store and the kops binary only in ``group/kopsible.kops.kops`` (a ``file://`` store with
no cluster, so each role's first kops module answers naming the store it was given), no role variable."""

import pytest

from harness.kops_env import kops_binary
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops
CLUSTER = "absent.example.org"


def play(store, role, variables):
    """``role`` with ``variables`` under module_defaults for ``group/kopsible.kops.kops`` only (a block standing for the
    user's play; the harness adds none of its own)."""
    defaults = {"group/kopsible.kops.kops": {"state_store": store, "kops_binary": kops_binary()}}
    task = {"name": role, "ansible.builtin.include_role": {"name": "kopsible.kops." + role}, "vars": variables}
    return run_playbook([{"name": "the play", "module_defaults": defaults, "block": [task]}], module_defaults=False)


def test_roles_keep_the_plays_module_defaults(tmp_path):
    store = "file://%s" % tmp_path
    cluster = play(store, "cluster", {"cluster_name": CLUSTER, "cluster_state": "absent"})
    result = cluster.result("kopsible.kops.cluster : Cluster %s is absent" % CLUSTER)
    assert not result.get("failed") and result["state_store"] == store, result
    assert result["msg"] == "cluster %s does not exist in %s; nothing to delete" % (CLUSTER, store)

    upgrade = play(store, "upgrade", {"upgrade_cluster": CLUSTER, "upgrade_kubernetes_version": "1.35.0", "upgrade_validate": False})
    failed = [(n, r) for n, r in upgrade.results if r.get("failed")]
    assert [n for n, _r in failed] == [
        "kopsible.kops.upgrade : Pre-flight - the cluster is in the state store",
        "kopsible.kops.upgrade : The failure of Pre-flight - the cluster is in the state store",
    ], failed
    assert failed[0][1]["msg"] == failed[1][1]["msg"] == "upgrade_cluster: cluster %s is not in the state store %s; nothing was written" % (CLUSTER, store)

    # a role variable still wins over the play's value
    other = tmp_path / "other"
    other.mkdir()
    given = play(store, "cluster", {"cluster_name": CLUSTER, "cluster_state": "absent", "kops_state_store": "file://%s" % other})
    assert given.result("kopsible.kops.cluster : Cluster %s is absent" % CLUSTER)["state_store"] == "file://%s" % other
