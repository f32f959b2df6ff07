"""kops' rolling-update log read per group (rolling_log.parse_rolling_log, kops_rolling.roll_report).

Fixtures captured from the real kops v1.36.2 on 2026-12-01 against the emulator and the kube world (a
Deployment of 4 pods under a PodDisruptionBudget minAvailable 3, HA cluster upgraded 1.34.1 -> 1.35.0):
``kops rolling-update cluster --name mycluster01.kopsclustertest.example.org --yes --instance-group-roles node
--node-interval 1s --validate-count 1 --validation-timeout 5m --drain-timeout 2m``, stdout and stderr kept
apart (``rolling_update_drain.stdout`` / ``.stderr``); the merged form is the two read through one pipe,
which the module does (its ordering is asserted by the integration tests on a real roll)."""

import os

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rolling as kops_rolling
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rolling_log

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "kops-1.36.2")
CLUSTER = "mycluster01.kopsclustertest.example.org"


def read(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_groups_instances_drains_validations_from_the_real_log():
    log = rolling_log.parse_rolling_log(read("rolling_update_drain.stderr"), CLUSTER)
    assert log["order"] == ["nodes-us-east-1a", "nodes-us-east-1b"]
    assert log["completed"] is True
    a = log["groups"]["nodes-us-east-1a"]
    assert a["instances"] == [{"id": "i-df1daf48e354eaaa5", "node": "ip-172-20-0-4.ec2.internal", "detached": True, "stopped": True}]
    assert a["nodes_drained"] == ["ip-172-20-0-4.ec2.internal"]
    assert a["evictions_refused"] == [{"pod": "default/web-fb958ccc5-6nmkx", "reason": "Cannot evict pod as it would violate the pod's disruption budget."}]
    assert [v["ok"] for v in a["validations"]] == [False, True, True, True]
    assert a["validations"][0]["message"] == 'machine "i-82a49f2e1ddf557ea" has not yet joined cluster'
    assert a["validations"][1]["seconds"] == 33.401  # 00:24:37.057 -> 00:25:10.458, the 30 s retry included
    assert a["seconds"] == 50.1
    assert log["validations_before"] == [{"ok": True, "seconds": 1.832, "message": None}]
    assert log["seconds"] == 103.657


def test_evictions_counted_once_per_pod_in_the_merged_order():
    err, out = read("rolling_update_drain.stderr").splitlines(), read("rolling_update_drain.stdout").splitlines()
    evicting = [line for line in out if line.startswith("evicting pod")]
    # kops' drain of the first node evicted the first three lines' pods (one retried after a PDB refusal), the second the rest
    merged, drains = [], 0
    for line in err:
        merged.append(line)
        if "Draining the node" in line:
            merged.extend(evicting[:3] if drains == 0 else evicting[3:])
            drains += 1
    log = rolling_log.parse_rolling_log("\n".join(merged), CLUSTER)
    assert log["groups"]["nodes-us-east-1a"]["pods_evicted"] == {"ip-172-20-0-4.ec2.internal": ["default/web-fb958ccc5-dtffl", "default/web-fb958ccc5-6nmkx"]}
    assert log["groups"]["nodes-us-east-1b"]["pods_evicted"] == {"ip-172-20-64-5.ec2.internal": ["default/web-fb958ccc5-nvlpn", "default/web-fb958ccc5-dvfnp"]}


def test_roll_report_pairs_old_and_new_and_lists_what_remains():
    log = rolling_log.parse_rolling_log(read("rolling_update_drain.stderr"), CLUSTER)
    changes = {
        "nodes-us-east-1a": {"before": ["i-df1daf48e354eaaa5"], "after": ["i-82a49f2e1ddf557ea"]},
        "nodes-us-east-1b": {"before": ["i-e268e246adc799178"], "after": ["i-3a0b9f1346ac1dfc7"]},
    }
    groups, remaining = kops_rolling.roll_report(log, changes, ["nodes-us-east-1a", "nodes-us-east-1b", "nodes-us-east-1c"], succeeded=True)
    assert [(g["name"], g["instances"][0]["old"], g["instances"][0]["new"], g["done"]) for g in groups] == [
        ("nodes-us-east-1a", "i-df1daf48e354eaaa5", "i-82a49f2e1ddf557ea", True),
        ("nodes-us-east-1b", "i-e268e246adc799178", "i-3a0b9f1346ac1dfc7", True),
    ]
    assert groups[0]["validations"] == 4 and groups[0]["evictions_refused"] == 1
    assert remaining == []  # nodes-us-east-1c had nothing to replace; kops' run succeeded
    # kops logs "Completed rolling update" after a pass with failed groups too: a failed run marks none done by it
    dummy, remaining = kops_rolling.roll_report(log, changes, ["nodes-us-east-1a", "nodes-us-east-1b", "nodes-us-east-1c"])
    assert remaining == ["nodes-us-east-1c"]


def test_roll_stopped_part_way_reports_what_remains():
    text = read("rolling_update_drain.stderr")
    cut = text[: text.index('Stopping instance "i-e268e246adc799178"')]  # killed while draining the second group
    log = rolling_log.parse_rolling_log(cut, CLUSTER)
    groups, remaining = kops_rolling.roll_report(log, {}, ["nodes-us-east-1a", "nodes-us-east-1b", "nodes-us-east-1c"])
    assert [(g["name"], g["done"]) for g in groups] == [("nodes-us-east-1a", True), ("nodes-us-east-1b", False)]
    assert remaining == ["nodes-us-east-1b", "nodes-us-east-1c"]
    assert log["completed"] is False


def test_a_pod_whose_every_eviction_was_refused_is_not_counted_evicted():
    """Issue 33 item 4: the drain helper prints "evicting pod" before each attempt and "error when evicting" after each
    refused one, nothing after a successful one (k8s.io/kubectl/pkg/drain); 12 attempts all refused (the drain timed
    out) evicted nothing, 2 attempts with one refusal evicted the pod. The lines as the real log has them."""
    log_lines = read("rolling_update_drain.stderr").splitlines()
    detach = next(line for line in log_lines if "Detaching instance" in line)
    drain = next(line for line in log_lines if "Draining the node" in line)
    refusal = next(line for line in log_lines if line.startswith("error when evicting"))
    lines = [detach, drain]
    lines += ["evicting pod default/web-fb958ccc5-6nmkx", refusal] * 12
    lines += ["evicting pod default/web-2", refusal.replace("web-fb958ccc5-6nmkx", "web-2"), "evicting pod default/web-2"]
    group = rolling_log.parse_rolling_log("\n".join(lines), CLUSTER)["groups"]["nodes-us-east-1a"]
    assert group["pods_evicted"] == {"ip-172-20-0-4.ec2.internal": ["default/web-2"]}
    assert len(group["evictions_refused"]) == 13


def test_roll_steps_one_line_each_from_the_real_log():
    """Issue 33 item 11: the lines rolling_update's progress_file gets (rolling_log.roll_step), from the real log: kops'
    steps with their klog time, the drain helper's attempts and refusals as printed; tables and klog details none."""
    steps = [rolling_log.roll_step(line) for line in read("rolling_update_drain.stderr").splitlines()]
    shown = [s for s in steps if s]
    assert shown[:3] == ["00:24:34 Validating the cluster.", "00:24:36 Cluster validated.", '00:24:36 Tainting 1 node in "nodes-us-east-1a" instancegroup.']
    assert shown[3].startswith('00:24:36 Detaching instance "i-df1daf48e354eaaa5", node "ip-172-20-0-4.ec2.internal"')
    assert '00:24:38 Cluster did not pass validation, will retry in "30s": machine "i-82a49f2e1ddf557ea" has not yet joined cluster.' in shown
    assert '00:25:10 Draining the node: "ip-172-20-0-4.ec2.internal".' in shown
    assert any(s.startswith('00:25:23 Stopping instance "i-df1daf48e354eaaa5"') for s in shown)
    assert [rolling_log.roll_step(line) for line in read("rolling_update_drain.stdout").splitlines() if line.startswith(("evicting", "error when"))] == [
        line for line in read("rolling_update_drain.stdout").splitlines() if line.startswith(("evicting", "error when"))
    ]
    assert rolling_log.roll_step("NAME\t\t\tSTATUS\t\tNEEDUPDATE") is None
    assert rolling_log.roll_step("I1201 00:24:34.184945   20913 rollingupdate.go:1] some detail") is None
