"""The run object of the kops modules (issue 27, _kops.run.KopsRun): one failure shape for a kops error, a re-plan under
the lock that fails naming a field another run changed meanwhile (no module call from ClusterOps), the step's own
result kept on a failure. A ``file://`` store: no S3, no kops process (the steps raise what kops and the guard would)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import KopsRun, checked
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import diff_paths
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.lock import SpecChanged

CLUSTER = "c.example.org"
READ = {"spec": {"minSize": 1, "maxSize": 1}}


def finish(capsys, tmp_path, body):
    """``body(run)`` in a KopsRun of a fresh KopsModule on a ``file://`` store, until the module exits; the printed
    result (dict)."""
    with patch_module_args({"state_store": "file://%s" % tmp_path, "region": "us-east-1"}):
        module = KopsModule(argument_spec=kops_argument_spec(), supports_check_mode=True)
        run = KopsRun(module, CLUSTER, "cluster %s" % CLUSTER, "kops failed for cluster %s" % CLUSTER)
        with pytest.raises(SystemExit):
            body(run)
    return json.loads(capsys.readouterr().out)


def test_a_kops_error_is_the_one_failure_shape(capsys, tmp_path):
    def step():
        raise KopsError('cluster "c.example.org" not found', ["kops", "get", "cluster"], 1, "Error: cluster not found")

    result = finish(capsys, tmp_path, lambda run: run.exit(run(step)))
    assert result["failed"] is True and result["msg"] == 'kops failed for cluster c.example.org: cluster "c.example.org" not found'
    assert result["kops_command"] == ["kops", "get", "cluster"] and result["rc"] == 1 and result["stderr"] == "Error: cluster not found"
    assert result["written"] == [] and result["kops_invocations"] == [] and result["previous_versions"] == {}
    assert result["state_store_safety"]["lock"] is None


def test_a_step_that_fills_the_runs_result_reports_it_on_success_and_failure(capsys, tmp_path):
    def step(run, fail):
        run.result.update(changed=True, replaced={"nodes": ["i-1"]})
        if fail:
            raise KopsError("drain timed out", ["kops", "rolling-update", "cluster"], 1)

    done = finish(capsys, tmp_path, lambda run: run.exit(run(lambda: step(run, False))))
    assert done["changed"] is True and done["replaced"] == {"nodes": ["i-1"]} and done["previous_versions"] == {}
    failed = finish(capsys, tmp_path, lambda run: run.exit(run(lambda: step(run, True))))
    assert failed["failed"] is True and failed["replaced"] == {"nodes": ["i-1"]} and failed["msg"].endswith(": drain timed out")


def test_a_replan_conflict_fails_naming_the_field_and_other_fields_are_kept(capsys, tmp_path):
    """Issue 16 item 15's case through the run object: the first attempt intends minSize/maxSize 1 -> 5, another run
    writes the spec (SpecChanged when the lock is taken); the second attempt re-reads maxSize 7."""
    desired = {"spec": {"minSize": 5, "maxSize": 5}}
    attempts = []

    def step(run, now):
        attempts.append(now)
        run.ops.intend(diff_paths(now, desired))
        if len(attempts) == 1:
            raise SpecChanged()
        return {"changed": True}

    conflict = finish(capsys, tmp_path, lambda run: run.exit(run(lambda: step(run, READ if not attempts else {"spec": {"minSize": 1, "maxSize": 7}}))))
    assert len(attempts) == 2 and conflict["failed"] is True
    assert conflict["conflicting_fields"] == ["spec.maxSize (was 1 when this run read it, now 7; this run sets 5)"]
    assert conflict["msg"].startswith("another run changed fields this run sets while it waited 0s for the lock of cluster c.example.org: spec.maxSize")
    assert "This run wrote nothing" in conflict["msg"] and conflict["written"] == []

    attempts.clear()
    other = {"spec": {"minSize": 1, "maxSize": 1, "cloudLabels": {"team": "a"}}}  # the other run changed another field
    kept = finish(capsys, tmp_path, lambda run: run.exit(run(lambda: step(run, READ if not attempts else other))))
    assert len(attempts) == 2 and kept["changed"] is True and not kept.get("failed")


def test_checked_fails_with_the_rules_message(capsys, tmp_path):
    def rule(value):
        raise RuleError("name: %r must be a DNS name" % value)

    result = finish(capsys, tmp_path, lambda run: checked(run.module, rule, "Bad_Name"))
    assert result["failed"] is True and result["msg"] == "name: 'Bad_Name' must be a DNS name" and result["written"] == []
