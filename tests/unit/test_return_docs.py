"""Issue 17 item 4: results against RETURN. The checker the harness runs on every playbook's results
(tools/harness/return_doc.py), and a real run through the harness that it checks."""

import os

import pytest

from conftest import ROOT
from harness import return_doc
from harness.playbook import run_playbook

MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py"))
DOC = {
    "name": {"type": "str"},
    "cluster": {"type": "dict", "contains": {"zones": {"type": "list"}, "validation": {"type": "dict", "contains": {"ok": {"type": "bool"}}}}},
    "groups": {"type": "list", "elements": "dict", "contains": {"name": {"type": "str"}}},
    "spec": {"type": "dict"},
}


def test_undocumented_keys_recurse_where_contains_is_documented():
    value = {
        "name": "a",
        "extra": 1,
        "cluster": {"zones": [], "validation": {"ok": True, "why": "x"}, "region": "r"},
        "groups": [{"name": "g"}, {"name": "h", "size": 1}],
        "spec": {"anything": {"goes": 1}},  # no contains: free-form
    }
    assert return_doc.undocumented_keys(DOC, value) == ["cluster.region", "cluster.validation.why", "extra", "groups[].size"]


def test_result_problems_check_kopsible_successes_only(monkeypatch):
    monkeypatch.setattr(return_doc, "return_doc", lambda module: DOC)
    ok = {"changed": False, "invocation": {}, "action": "x", "_ansible_no_log": False, "name": "a", "bogus": 1}
    assert return_doc.result_problems("kopsible.kops.kops_cluster", ok) == ["kops_cluster returned bogus, not in its RETURN"]
    assert return_doc.result_problems("ansible.builtin.debug", ok) == []
    assert return_doc.result_problems("kopsible.kops.kops_cluster", dict(ok, failed=True)) == []
    loop = {"changed": False, "results": [dict(ok, item=1), {"name": "b", "item": 2}]}
    assert return_doc.result_problems("kopsible.kops.kops_cluster", loop) == ["kops_cluster returned bogus, not in its RETURN"]


@pytest.mark.parametrize("module", MODULES)
def test_every_module_has_a_return_doc_with_a_type_per_key(module):
    def walk(doc, path):
        for key, item in doc.items():
            assert item.get("type"), "%s%s has no type" % (path, key)
            walk(item.get("contains") or {}, path + key + ".")

    walk(return_doc.return_doc(module), "")


def test_the_harness_checks_a_real_run(tmp_path):
    """A real ansible-playbook run through the harness: the callback names each task's module and the result of
    kops_cluster_info over an empty file:// state store passes the check (a key outside RETURN would raise)."""
    store = tmp_path / "store"
    store.mkdir()
    run = run_playbook([{"name": "info", "kopsible.kops.kops_cluster_info": {"state_store": "file://%s" % store}}])
    assert run.actions == ["kopsible.kops.kops_cluster_info"], run.stdout[-2000:]
    assert run.result("info")["clusters"] == []


# Documented keys a recording of successful results cannot hold, each with the reason.
NOT_RECORDABLE = {
    "kops_cluster": {
        "msg": "Ansible's own key in every result (the recorder leaves Ansible's keys out)",
        "written": "returned by failures only (the recorder reads successful results)",
    },
}


def test_every_documented_return_key_appears_in_a_recorded_real_result():
    """The reverse of the harness' check: each key path a module's RETURN documents appears in some successful result
    of that module in a recorded run of the integration tests (tests/unit/fixtures/recorded/return-keys-observed.json, written
    by tools/return_coverage.py; its ``command`` and ``commit`` say which run). A key documented but never returned
    fails here until a test makes the module return it (and a new recording shows it) or RETURN drops it."""
    import json

    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "recorded", "return-keys-observed.json")) as handle:
        recorded = json.load(handle)
    assert recorded["command"] and recorded["commit"] and recorded["recorded"]
    unseen = {}
    for module in MODULES:
        documented = return_doc.documented_paths(return_doc.return_doc(module))
        seen = set(recorded["modules"].get(module, []))
        assert seen <= documented, "%s: the recording holds keys RETURN no longer documents: %s" % (module, sorted(seen - documented))
        excused = NOT_RECORDABLE.get(module, {})
        assert not (set(excused) & seen), "%s: recorded after all, drop the excuse: %s" % (module, sorted(set(excused) & seen))
        missing = sorted(documented - seen - set(excused))
        if missing:
            unseen[module] = missing
    assert unseen == {}, unseen
