"""tools/harness/in_process.py: a module's real main() in the test process, as the bad-input matrix uses it: a clean
failure comes back as the module's own result, and a crash as ansible-core reports one ("Module failed")."""

from ansible_collections.kopsible.kops.plugins.modules import kops_cluster
from harness import in_process


def test_a_clean_failure_is_the_modules_result():
    result = in_process.run_module("kops_cluster", {"state_store": "file:///nonexistent"})
    assert result["failed"] is True and result["msg"] == "missing required arguments: name", result


def test_a_crash_is_reported_as_module_failed(monkeypatch):
    def broken(params, region):
        raise KeyError("zones")

    monkeypatch.setattr(kops_cluster, "check_params", broken)
    result = in_process.run_module("kops_cluster", {"name": "c.example.org", "state_store": "file:///nonexistent"})
    assert result["failed"] is True and result["msg"].startswith("Module failed: ") and "Traceback" in result["module_stderr"], result
