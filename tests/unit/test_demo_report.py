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


def test_upgrade_line_counts_what_was_applied_without_a_dry_run():
    roll = {"replaced": {"nodes-us-east-1a": {}, "nodes-us-east-1b": {}}, "rolled": [{}], "roll_seconds": 89.4}
    applied = {"plan": None, "plan_summary": [], "changes": [{"path": "spec.kubernetesVersion", "before": "1.34.1", "after": "1.35.0"}]}
    preflight = {
        "plan_summary": [
            "modify LaunchTemplate/nodes-us-east-1a...: UserData (changed)",
            "modify LaunchTemplate/nodes-us-east-1b...: UserData (changed)",
            "modify ManagedFile/manifests-etcdmanager-main: Contents (changed)",
        ]
    }
    assert demo.upgrade_line(applied, preflight, roll) == (
        "1 spec change(s) written, 3 cloud change(s) applied (planned by the pre-flight), 2 groups rolled, drained for real in 89s"
    )
    # variant: the apply planned itself (a re-run that found the version written)
    planned = {"plan": {"modify": []}, "plan_summary": ["modify LaunchTemplate/x: UserData (changed)"], "changes": []}
    assert demo.upgrade_line(planned, preflight, {"replaced": {}}) == "1 plan items applied, 0 groups rolled"
