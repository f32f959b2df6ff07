"""The collection's value lists equal the platform's: every value the real kops v1.36.2 accepts passes the
module's rule (never stricter), and every value the module accepts is one kops accepts (never looser). kops'
values come from its own ``kops create cluster --help`` (the real binary) and the cases its source accepts
beyond the help (tools/harness/platform_lists.py cites them)."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.modules import kops_cluster
from harness import platform_lists

OPTION_FLAGS = {
    "networking": "networking",
    "cloud": "cloud",
    "topology": "topology",
    "dns": "dns",
    "api_loadbalancer_type": "api-loadbalancer-type",
    "target": "target",
}


def module_values(option):
    """The values kops_cluster accepts for ``option``: its rule's list, or Ansible's choices."""
    if option == "networking":
        return kops_rules.NETWORKING_MODES
    if option == "cloud":
        return kops_rules.CLOUDS
    return kops_cluster.argument_spec()[option]["choices"]


def test_help_lists_are_read_from_the_real_kops():
    help_lists = platform_lists.kops_create_help()
    assert help_lists["networking"][:3] == ("kubenet", "external", "flannel-vxlan") and "cilium" in help_lists["networking"]
    assert help_lists["dns"] == ("public", "private", "none")
    assert help_lists["target"] == ("direct", "terraform")


@pytest.mark.parametrize("option", sorted(OPTION_FLAGS))
def test_module_accepts_exactly_what_kops_accepts(option):
    kops = set(platform_lists.kops_values(OPTION_FLAGS[option]))
    module = set(module_values(option))
    assert sorted(kops - module) == [], "stricter than kops"
    assert sorted(module - kops) == [], "looser than kops"


def kops_networking_modes():
    """The networking modes kops' help lists, one case each; without a kops binary (``make check`` collects every file
    but runs no integration test) one case that fails when run, saying so."""
    try:
        return platform_lists.kops_values("networking")
    except RuntimeError:
        return [pytest.param(None, id="no-kops-binary")]


@pytest.mark.parametrize("value", kops_networking_modes())
def test_networking_rule_passes_each_kops_mode(value):
    assert value is not None, "no kops binary: run scripts/ensure_kops.sh"
    kops_rules.one_of(value, kops_rules.NETWORKING_MODES, "networking")


@pytest.mark.parametrize("value", ["Cilium", "cilium ", "weave", "canal", "romana", ""])
def test_networking_rule_refuses_what_kops_refuses(value):
    # weave, canal and romana were removed from kops (new_cluster.go setupNetworking has no case for them)
    with pytest.raises(kops_rules.RuleError) as err:
        kops_rules.one_of(value, kops_rules.NETWORKING_MODES, "networking")
    assert str(err.value).startswith("networking")
