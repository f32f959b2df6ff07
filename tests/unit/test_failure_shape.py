"""KopsModule's one failure shape (issue 17): ``written`` on every failure, clean-ups (the cluster's lock) run
before the result is printed, a clean-up that fails fails the run and says how to recover, and AWS errors
become ``fail_json_aws`` naming the operation."""

import json

import botocore.exceptions
import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule


def finish(capsys, body):
    """Run ``body(module)`` in a fresh KopsModule until it exits; returns the printed result (dict)."""
    with patch_module_args({}):
        module = KopsModule(argument_spec={}, supports_check_mode=True)
        with pytest.raises(SystemExit):
            body(module)
    return json.loads(capsys.readouterr().out)


def test_failure_reports_what_was_written(capsys):
    def body(module):
        module.wrote("hosted zone a.example.org (Z1)")
        module.wrote("hosted zone a.example.org (Z1)")
        module.fail_json(msg="it broke")

    result = finish(capsys, body)
    assert result["failed"] is True and result["msg"] == "it broke"
    assert result["written"] == ["hosted zone a.example.org (Z1)"]


def test_nothing_written_is_an_empty_list(capsys):
    result = finish(capsys, lambda module: module.fail_json(msg="bad input"))
    assert result["written"] == []


def test_cleanups_run_before_the_result_last_first(capsys):
    order = []

    def body(module):
        module.on_exit(lambda: order.append("first registered"))
        module.on_exit(lambda: order.append("last registered"))
        module.exit_json(changed=True)

    result = finish(capsys, body)
    assert order == ["last registered", "first registered"]
    assert result["changed"] is True and not result.get("failed")


def test_a_failed_cleanup_fails_the_run_keeping_its_result(capsys):
    def body(module):
        module.on_exit(lambda: "the run could not delete its lock s3://b/.kopsible-locks/c.json")
        module.exit_json(changed=True, cluster="c")

    result = finish(capsys, body)
    assert result["failed"] is True and result["changed"] is True and result["cluster"] == "c"
    assert result["cleanup_failed"] == ["the run could not delete its lock s3://b/.kopsible-locks/c.json"]
    assert "could not delete its lock" in result["msg"]


def test_a_failed_cleanup_joins_a_failure(capsys):
    def body(module):
        module.on_exit(lambda: "lock left behind")
        module.fail_json(msg="kops failed")

    result = finish(capsys, body)
    assert result["msg"] == "kops failed; lock left behind"


def test_aws_errors_name_the_operation(capsys):
    error = botocore.exceptions.ClientError({"Error": {"Code": "AccessDenied", "Message": "not authorized"}}, "PutObject")

    def body(module):
        with module.aws_failures("AWS call failed for cluster c"):
            raise error

    result = finish(capsys, body)
    assert result["failed"] is True
    assert result["msg"].startswith("AWS call failed for cluster c: An error occurred (AccessDenied) when calling the PutObject")
    assert result["error"]["code"] == "AccessDenied" and result["written"] == []


def test_a_signal_between_steps_is_a_clean_failure(capsys, monkeypatch):
    """Issue 33 item 8: a stop signal outside a kops run (kops_runner.Interrupted raised between AWS calls) leaves the
    StoreGuard block as the module's failure naming the signal, not a traceback; with no lock held nothing was written."""
    import signal

    from ansible_collections.kopsible.kops.plugins.module_utils._kops import runner as kops_runner
    from ansible_collections.kopsible.kops.plugins.module_utils._state_store.guard import StoreGuard

    monkeypatch.setattr(kops_runner, "_interrupted", [signal.SIGTERM])

    def body(module):
        with StoreGuard(module, "file:///tmp/kopsible-no-store", "c.example.org"):
            raise kops_runner.Interrupted(signal.SIGTERM)

    result = finish(capsys, body)
    assert result["failed"] is True and result["msg"] == "c.example.org: interrupted by SIGTERM; nothing was written"
    assert result["written"] == [] and result["state_store_safety"]["interruption_note"] is None
