"""Issue 16 item 13: `make demo` (scripts/demo.py) prints records as zone-file text and counts what the upgrade applied
when its apply step skipped the dry run (the upgrade role's plan_before_apply: false)."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("demo", os.path.join(ROOT, "scripts", "demo.py"))
demo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo)


def test_records_as_zone_file_text():
    """route53_info's snake_case record sets (amazon.aws route53_info query: record_sets) and kops_cluster's
    dns_records_left items (route53.record_summary)."""
    placeholder = {"name": "api.internal.mycluster01.kopsclustertest.example.org.", "type": "A", "ttl": 10, "resource_records": [{"value": "203.0.113.123"}]}
    assert demo.zone_lines(placeholder) == ["api.internal.mycluster01.kopsclustertest.example.org. 10 IN A 203.0.113.123"]
    ns = {
        "name": "kopsclustertest.example.org.",
        "type": "NS",
        "ttl": 172800,
        "resource_records": [{"value": "ns-1.awsdns-1.com."}, {"value": "ns-2.awsdns-2.net."}],
    }
    assert demo.zone_lines(ns) == [
        "kopsclustertest.example.org. 172800 IN NS ns-1.awsdns-1.com.",
        "kopsclustertest.example.org. 172800 IN NS ns-2.awsdns-2.net.",
    ]
    alias = {
        "name": "api.mycluster01.kopsclustertest.example.org.",
        "type": "A",
        "alias_target": {"dns_name": "api-mycluster01-abc.elb.us-east-1.amazonaws.com.", "hosted_zone_id": "Z35SXDOTRQ7X7K"},
    }
    assert demo.zone_lines(alias) == ["api.mycluster01.kopsclustertest.example.org. IN A ; alias to api-mycluster01-abc.elb.us-east-1.amazonaws.com."]
    left = {"name": "kops-controller.internal.mycluster01.kopsclustertest.example.org", "type": "A", "ttl": 10, "values": ["203.0.113.123"]}
    assert demo.zone_lines(left) == ["kops-controller.internal.mycluster01.kopsclustertest.example.org. 10 IN A 203.0.113.123"]
    assert "{" not in " ".join(demo.zone_lines(alias) + demo.zone_lines(ns))


def test_upgrade_line_and_phases_show_the_control_plane_first():
    """Issue 26 item 5: the demo's upgrade lines: the hops and rolls counted, and after each phase the kubelets of the
    control plane and of the workers (read through the kubeconfig)."""
    roll = {"replaced": {"nodes-us-east-1a": {}, "nodes-us-east-1b": {}}, "rolled": [{}], "roll_seconds": 89.4}
    report = {"version": "1.34.1 -> 1.35.0", "hops": ["1.35.0"], "control_plane_rolls": 1, "worker_rolls": 1}
    assert demo.upgrade_line(report, roll) == (
        "1.34.1 -> 1.35.0 in 1 hop(s) (1.35.0): 1 control-plane roll(s), 1 worker roll(s), 2 groups rolled, drained for real in 89s"
    )
    phases = [
        {"phase": "control plane to 1.35.0", "groups": ["cp-a", "cp-b", "cp-c"], "seconds": 61.2, "kubelets": {"a": "v1.35.0", "w": "v1.34.1"}},
        {"phase": "workers", "groups": ["nodes-a"], "seconds": 30, "kubelets": {"a": "v1.35.0", "w2": "v1.35.0"}},
    ]
    lines = demo.phase_lines(phases, {"a": "control-plane", "w": "node", "w2": "node"})
    assert "3 group(s) in 61s; kubelets after it: control plane v1.35.0, workers v1.34.1" in lines[0]
    assert "1 group(s) in 30s; kubelets after it: control plane v1.35.0, workers v1.35.0" in lines[1]


def test_task_results_stream_while_the_play_runs(tmp_path):
    """Issue 34 ('make demo prints nothing for about six minutes'): with ``progress``, each task's result line reaches
    the reader while the play still runs (the next task waits for a file this test writes only after reading the
    line), and the JSON results still arrive at the end."""
    import sys
    import threading

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from harness.playbook import run_playbook

    gate = tmp_path / "gate"
    tasks = [
        {"name": "First step", "ansible.builtin.command": "true", "changed_when": True},
        {"name": "Skipped step", "ansible.builtin.debug": {"msg": "x"}, "when": False},
        {"name": "Wait for the reader", "ansible.builtin.wait_for": {"path": str(gate), "timeout": 60}},
        {"name": "Tolerated failure", "ansible.builtin.command": "false", "ignore_errors": True},
    ]
    read_fd, write_fd = os.pipe()
    outcome = {}
    with os.fdopen(write_fd, "w") as progress:
        play = threading.Thread(target=lambda: outcome.update(run=run_playbook(tasks, progress=progress)))
        play.start()
        with os.fdopen(read_fd) as reader:
            lines = [reader.readline(), reader.readline()]
            assert not gate.exists() and play.is_alive()  # both lines came before the play could end
            gate.write_text("go")
            play.join(120)
            progress.close()
            lines += reader.read().splitlines(keepends=True)
    assert [line.split()[0] for line in lines] == ["changed", "skipped", "ok", "ignored"], lines
    assert lines[0].rstrip().endswith("s  First step") and lines[3].rstrip().endswith("Tolerated failure"), lines
    run = outcome["run"]
    assert run.rc == 0 and [name for name, _result in run.results] == [t["name"] for t in tasks]


def test_the_subdomain_check_is_found_under_its_full_task_name():
    """The teardown role's last check is named "Only NS and SOA may remain (in check mode, ...)": the demo's summary
    found no task ending with "Only NS and SOA may remain" and printed "subdomain check did not run" after a
    teardown that had run it."""
    from types import SimpleNamespace

    name = "kopsible.kops.teardown : Only NS and SOA may remain (in check mode, once kops has deleted the records it lists)"
    run = SimpleNamespace(results=[("kopsible.kops.teardown : Read the subdomain's records", {}), (name, {"msg": "holds only its NS and SOA records"})])
    assert demo.task(run, "Only NS and SOA may remain") == {"msg": "holds only its NS and SOA records"}
    assert demo.task(run, "Nothing like it") == {}
