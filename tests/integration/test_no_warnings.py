"""Issue 16 item 14: what users see is not hidden. With deprecation and localhost warnings shown (the harness
turns them off by default; this test turns them back on), an idempotent re-run of each module prints no warning
and no deprecation, and returns none."""
import pytest

from conftest import CLUSTER, SUBDOMAIN

pytestmark = pytest.mark.kops
SHOWN = {"ANSIBLE_DEPRECATION_WARNINGS": "1", "ANSIBLE_LOCALHOST_WARNING": "1", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "1"}


def test_idempotent_reruns_print_no_warning(kops_world, kplay):
    tasks = [
        {"name": "cluster", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True)},
        {"name": "ig", "kopsible.kops.kops_instancegroup": {"cluster": CLUSTER, "name": "nodes-us-east-1a", "min_size": 1,
                                                            "max_size": 1, "apply": True}},
        {"name": "roll", "kopsible.kops.rolling_update": {"cluster": CLUSTER, "cloudonly": True}},
        {"name": "dns", "kopsible.kops.route53_subdomain": {"name": SUBDOMAIN}},
    ]
    first = kplay(tasks, env=SHOWN)
    assert not first.failed, first.stdout[-3000:]
    again = kplay(tasks, env=SHOWN)
    assert not again.failed, again.stdout[-3000:]
    for name in ("cluster", "ig", "roll", "dns"):
        result = again.result(name)
        assert result["changed"] is False, (name, result.get("changes"), result.get("plan_summary"))
        assert not result.get("warnings") and not result.get("deprecations"), (name, result.get("warnings"),
                                                                               result.get("deprecations"))
    printed = again.stdout + again.stderr
    assert "[WARNING]" not in printed and "[DEPRECATION WARNING]" not in printed, printed[-3000:]
