"""A fleet update run's rules (_fleet/record.py): the plan, the maintenance window, the holder's lease and whether a
cluster may start (issue 31)."""

import datetime
import re

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._fleet import record as runs
from ansible_collections.kopsible.kops.plugins.module_utils._fleet import selection
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday
PLAN = {
    "stages": [
        {"name": "canary", "clusters": ["c0", "c1"], "soak": "10m"},
        {"name": "wave1", "clusters": ["c2", "c3"], "approval": True},
        {"name": "wave2", "clusters": ["c4", "c5"]},
    ],
    "max_failures": 0,
}


def fresh(plan=PLAN):
    return runs.new_record("r1", runs.check_plan(plan), NOW)


def test_the_plan_is_stored_with_its_defaults():
    plan = runs.check_plan(PLAN)
    assert [(s["name"], s["soak_seconds"], s["approval"]) for s in plan["stages"]] == [("canary", 600, False), ("wave1", 0, True), ("wave2", 0, False)]
    assert plan["max_failures"] == 0 and plan["window"] is None


@pytest.mark.parametrize(
    "plan, message",
    [
        ({}, "plan.stages: at least one stage"),
        ({"stages": [{"clusters": ["c0"]}]}, "plan.stages[0].name"),
        ({"stages": [{"name": "a", "clusters": []}]}, "plan.stages[0].clusters"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}, {"name": "a", "clusters": ["c1"]}]}, "plan.stages[1].name: stage a is named twice"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}, {"name": "b", "clusters": ["c0"]}]}, "c0 is already in stage a"),
        ({"stages": [{"name": "a", "clusters": ["c0"], "soak": "ten minutes"}]}, "plan.stages[0].soak"),  # a Go duration
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "max_failures": -1}, "plan.max_failures"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "window": {"start": "25:00", "end": "04:00"}}, "plan.window.start"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "window": {"start": "22:00", "end": "04:00", "days": ["funday"]}}, "plan.window.days"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "window": {"start": "22:00", "end": "04:00", "timezone": "Mars/Olympus"}}, "plan.window.timezone"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "change": {"kubernetes_version": "1.35.0", "kops_version": "1.36.2"}}, "plan.change: "),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "change": {"image": {"groups": ["nodes"]}}}, "plan.change.image.image"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "change": {"image": {"image": "ami-1", "groups": [], "roles": ["Node"]}}}, "not both"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "change": {"image": {"image": "ami-1", "roles": ["Worker"]}}}, "plan.change.image.roles"),
        ({"stages": [{"name": "a", "clusters": ["c0"]}], "change": {"kops_version": "1.36"}}, "plan.change.kops_version"),
    ],
)
def test_a_broken_plan_is_named(plan, message):
    with pytest.raises(RuleError, match=message.replace("[", r"\[").replace("]", r"\]")):
        runs.check_plan(plan)


def test_a_change_is_stored_in_its_checked_form():
    stages = PLAN["stages"]
    assert runs.check_plan({"stages": stages})["change"] is None
    assert runs.check_plan({"stages": stages, "change": {"image": {"image": " ami-1 "}}})["change"] == {"image": {"image": "ami-1", "roles": ["Node"]}}
    assert runs.check_plan({"stages": stages, "change": {"image": {"image": "ami-1", "groups": ["nodes-a"]}}})["change"] == {
        "image": {"image": "ami-1", "groups": ["nodes-a"]}
    }
    assert runs.check_plan({"stages": stages, "change": {"kops_version": "v1.36.2"}})["change"] == {"kops_version": "1.36.2"}


def test_a_window_across_midnight_in_its_own_time_zone():
    window = runs.check_window({"days": ["mon"], "start": "22:00", "end": "04:00", "timezone": "Europe/Berlin"})
    # Monday 21:30 UTC is 22:30 in Berlin: open; Tuesday 02:59 UTC (03:59 Berlin) still Monday's window
    assert runs.window_open(window, datetime.datetime(2026, 12, 7, 21, 30, tzinfo=UTC)) == (True, None)
    assert runs.window_open(window, datetime.datetime(2026, 12, 8, 2, 59, tzinfo=UTC))[0] is True
    # Tuesday 03:00 UTC (04:00 Berlin): closed, opens next Monday 22:00 Berlin = 21:00 UTC
    closed, next_open = runs.window_open(window, datetime.datetime(2026, 12, 8, 3, 0, tzinfo=UTC))
    assert closed is False and next_open == datetime.datetime(2026, 12, 14, 21, 0, tzinfo=UTC)
    assert runs.window_open(None, NOW) == (True, None)


def test_stages_run_in_order_with_soak_and_approval():
    record = fresh()
    assert runs.decide(record, "c0", NOW)["proceed"] is True
    runs.start(record, "c0", NOW, "h1")
    waiting = runs.decide(record, "c2", NOW)
    assert waiting["proceed"] is False and waiting["why"] == "waiting for stage canary: c0 (running), c1 (pending)"
    runs.finish(record, "c0", "done", None, NOW)
    runs.start(record, "c1", NOW, "h1")
    runs.finish(record, "c1", "done", None, NOW + datetime.timedelta(minutes=2))
    soaking = runs.decide(record, "c2", NOW + datetime.timedelta(minutes=5))
    assert soaking["proceed"] is False and soaking["wait_seconds"] == 7 * 60 and "soaking after stage canary" in soaking["why"]
    later = NOW + datetime.timedelta(minutes=13)
    assert "waits for approval" in runs.decide(record, "c2", later)["why"]
    assert runs.approve(record, "wave1", later) is True and runs.approve(record, "wave1", later) is False
    assert runs.decide(record, "c2", later) == {"proceed": True, "why": "started", "wait_seconds": None, "resumed": False}
    done = runs.decide(record, "c0", later)
    assert done["proceed"] is False and done["why"].startswith("done at ")  # never twice


def test_a_failure_beyond_the_budget_halts_the_run_and_a_rerun_retries_the_failed_cluster():
    record = fresh()
    runs.start(record, "c0", NOW, "h1")
    runs.finish(record, "c0", "failed", "node c0-a NotReady", NOW)
    halted = runs.decide(record, "c1", NOW)
    assert halted["proceed"] is False and halted["why"] == "the run halted: 1 cluster(s) failed (c0), more than max_failures 0"
    retry = runs.decide(record, "c0", NOW)  # its own failure does not count against it: the re-run after the fix
    assert retry["proceed"] is True
    runs.start(record, "c0", NOW, "h2")
    assert record["clusters"]["c0"]["attempts"] == 2
    assert runs.summary(record)[:2] == ["canary c0: running (attempt 2)", "canary c1: pending"]


def test_a_cluster_left_running_by_a_stopped_controller_is_resumed_not_counted_twice():
    record = fresh()
    runs.start(record, "c0", NOW, "h1")
    resumed = runs.decide(record, "c0", NOW)
    assert resumed["proceed"] is True and resumed["resumed"] is True
    runs.start(record, "c0", NOW, "h2")
    assert record["clusters"]["c0"]["attempts"] == 1


def test_the_lease_refuses_another_holder_until_it_runs_out_or_is_taken_over():
    record = fresh()
    assert runs.take(record, "h1", NOW, 60) is True
    assert runs.take(record, "h1", NOW, 60) is False  # renewed
    with pytest.raises(runs.Refused, match="run r1 is held by h1") as refused:
        runs.take(record, "h2", NOW + datetime.timedelta(seconds=30), 60)
    assert refused.value.holder["id"] == "h1"
    assert runs.take(record, "h2", NOW + datetime.timedelta(seconds=30), 60, takeover=True) is True
    assert record["events"][-1]["event"] == "takeover" and record["events"][-1]["previous"] == "h1"
    assert runs.take(record, "h3", NOW + datetime.timedelta(seconds=200), 60) is True  # h2's lease ran out


def test_a_closed_window_keeps_clusters_pending():
    plan = dict(PLAN, window={"days": ["sat", "sun"], "start": "01:00", "end": "05:00"})
    record = fresh(plan)
    waiting = runs.decide(record, "c0", NOW)
    assert waiting["proceed"] is False and waiting["why"] == "waiting for the maintenance window (opens 2026-12-12T01:00:00Z)"
    with pytest.raises(runs.Refused, match="cluster c9 is not in run r1"):
        runs.decide(record, "c9", NOW)


def test_an_approved_plan_names_what_changed_since():
    """fleet_run ``approved`` (_fleet.approval): a pending cluster whose stored objects or applied kops version differ
    from the approved plan's spec_fingerprint is named with each object; a started cluster is not compared."""
    from ansible_collections.kopsible.kops.plugins.module_utils._fleet import approval
    from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import spec_fingerprint

    stored = {
        "cluster": {"metadata": {"name": "c0"}, "spec": {"kubernetesVersion": "1.34.1"}},
        "instance_groups": [{"metadata": {"name": "nodes"}, "spec": {"maxSize": 2}}],
        "kops_version": "1.36.2",
    }
    before = spec_fingerprint(stored)
    assert sorted(before) == ["config", "instancegroup/nodes", "kops-version.txt"] and before["kops-version.txt"] == "1.36.2"
    assert spec_fingerprint(stored) == before  # the same objects read again
    edited = dict(stored, instance_groups=[{"metadata": {"name": "nodes"}, "spec": {"maxSize": 3}}, {"metadata": {"name": "gpu"}, "spec": {}}])
    assert approval.fingerprint_changes(before, spec_fingerprint(edited)) == ["instancegroup/gpu added", "instancegroup/nodes changed"]
    assert approval.fingerprint_changes(before, spec_fingerprint(dict(stored, kops_version="1.37.0"))) == ["kops-version.txt 1.36.2 -> 1.37.0"]
    assert approval.fingerprint_changes(before, None) == ["the cluster is no longer in its state store"]

    record = {"clusters": {"c0": {"state": "done"}, "c1": {"state": "pending"}}}
    with pytest.raises(runs.Refused) as refused:
        approval.check_approved(record, {"c0": {}}, s3=None)  # c0 was started by the run: not compared
    assert "c1: not in the approved plan" in refused.value.message and "c0" not in refused.value.message


# an inventory as playbooks/fleet_update_run.yml passes it: cluster -> its inventory groups and cloud labels
INVENTORY = {"p%d" % i: {"groups": ["all", "prod"], "labels": {"environment": "production", "team": "a" if i < 3 else "b"}} for i in range(7)}
INVENTORY["s0"] = {"groups": ["all", "staging"], "labels": {"environment": "staging"}}


def test_a_selecting_stage_is_cut_into_waves_of_a_percentage_rounded_up_less_the_canary():
    plan = {
        "stages": [
            {"name": "canary", "clusters": ["p0"], "soak": "1h"},
            {"name": "rest", "select": {"group": "prod"}, "wave_size": "34%", "soak": "30m", "approval": True},
        ]
    }
    stages = runs.check_plan(selection.expand_stages(plan, INVENTORY))["stages"]
    # 6 clusters left; 34 % of 6 is 2.04, rounded up to 3 (intstr.GetScaledValueFromIntOrPercent, roundUp)
    assert [(s["name"], s["clusters"], s["soak_seconds"], s["approval"]) for s in stages] == [
        ("canary", ["p0"], 3600, False),
        ("rest1", ["p1", "p2", "p3"], 1800, True),  # the selection is approved once, before its first wave
        ("rest2", ["p4", "p5", "p6"], 1800, False),
    ]


@pytest.mark.parametrize(
    "select, size, waves",
    [
        ({"labels": {"team": "a"}}, 1, [["p0"], ["p1"], ["p2"]]),  # every label given must match
        ({"group": "prod", "labels": {"team": "b"}}, None, [["p3", "p4", "p5", "p6"]]),  # one wave: the stage keeps its name
        ({"labels": {"environment": "production"}}, "1%", [["p%d" % i] for i in range(7)]),  # at least 1 a wave
        ({"group": "prod"}, "100%", [["p%d" % i for i in range(7)]]),
    ],
)
def test_a_selection_by_group_or_labels_in_name_order(select, size, waves):
    stage = {"name": "w", "select": select, "wave_size": size}
    stages = runs.check_plan(selection.expand_stages({"stages": [stage]}, INVENTORY))["stages"]
    assert [s["clusters"] for s in stages] == waves
    assert [s["name"] for s in stages] == (["w"] if len(waves) == 1 else ["w%d" % n for n in range(1, len(waves) + 1)])


def test_a_selection_whose_clusters_are_all_in_other_stages_adds_no_stage():
    plan = {"stages": [{"name": "canary", "clusters": ["s0"]}, {"name": "rest", "select": {"group": "staging"}}]}
    assert [s["name"] for s in runs.check_plan(selection.expand_stages(plan, INVENTORY))["stages"]] == ["canary"]


@pytest.mark.parametrize(
    "stage, message",
    [
        ({"name": "w", "select": {"group": "dev"}}, "plan.stages[0].select: {'group': 'dev'} matches no cluster of the inventory (8 clusters)"),
        ({"name": "w", "select": {}}, "plan.stages[0].select: give group"),
        ({"name": "w", "select": {"group": "prod"}, "wave_size": 0}, "plan.stages[0].wave_size: 0; give a count"),
        ({"name": "w", "select": {"group": "prod"}, "wave_size": "0%"}, "plan.stages[0].wave_size"),
        ({"name": "w", "select": {"group": "prod"}, "wave_size": "150%"}, "plan.stages[0].wave_size"),
        ({"name": "w", "select": {"group": "prod"}, "wave_size": "half"}, "plan.stages[0].wave_size"),
        ({"name": "w", "select": {"group": "prod"}, "clusters": ["p0"]}, "plan.stages[0]: give clusters or select, not both"),
        ({"name": "w", "clusters": ["p0"], "wave_size": 2}, "plan.stages[0].wave_size: only a stage with select"),
    ],
)
def test_a_broken_selection_is_named(stage, message):
    with pytest.raises(
        RuleError, match=message.replace("[", r"\[").replace("]", r"\]").replace("{", r"\{").replace("}", r"\}").replace("(", r"\(").replace(")", r"\)")
    ):
        selection.expand_stages({"stages": [stage]}, INVENTORY)


def test_explicit_stages_are_kept_as_the_module_gives_them():
    # the module's argument spec fills select and wave_size with None for an explicit stage
    stage = {"name": "a", "clusters": ["c0"], "soak": "0", "approval": False, "select": None, "wave_size": None}
    expanded = selection.expand_stages({"stages": [stage]}, {})
    assert expanded == {"stages": [{"name": "a", "clusters": ["c0"], "soak": "0", "approval": False, "_index": 0}]}
    assert runs.check_plan(expanded)["stages"] == [{"name": "a", "clusters": ["c0"], "soak_seconds": 0, "approval": False}]


@pytest.mark.parametrize(
    "stages, message",
    [
        # the user's stage index, and where a generated wave name comes from (found by a helper: stages[3] and no hint)
        (
            [{"name": "canary", "clusters": ["s0"]}, {"name": "rest", "select": {"group": "prod"}, "wave_size": 4}, {"name": "rest1", "clusters": ["x"]}],
            "plan.stages[2].name: stage rest1 is named twice (a wave of stage rest is named rest1)",
        ),
        (
            [{"name": "w", "select": {"group": "prod"}, "wave_size": 1}, {"name": "x", "clusters": ["zz"], "soak": "5x"}],
            "plan.stages[1].soak: '5x' is not a duration",
        ),
        ([{"name": "", "select": {"group": "prod"}, "wave_size": 2}], "plan.stages[0].name: every stage needs a name"),
    ],
)
def test_a_broken_plan_with_waves_names_the_stage_as_given(stages, message):
    with pytest.raises(RuleError, match=re.escape(message)):
        runs.check_plan(selection.expand_stages({"stages": stages}, INVENTORY))


@pytest.mark.parametrize(
    "inventory, select, message",
    [
        ({"a": "prod"}, {"group": "prod"}, "inventory.a: 'prod'; give {groups"),
        ({"a": ["prod"]}, {"group": "prod"}, "inventory.a: ['prod']"),
        ({"a": {"groups": "production"}}, {"group": "prod"}, "inventory.a.groups: 'production'; a list"),  # was a substring match
        ({"a": {"groups": 5}}, {"group": "prod"}, "inventory.a.groups: 5"),
        ({"a": {"labels": ["env"]}}, {"labels": {"env": "x"}}, "inventory.a.labels: ['env']"),
        ({"": {"groups": ["prod"]}}, {"group": "prod"}, "inventory: '' is not a cluster name"),
        ({"a\nb": {"groups": ["prod"]}}, {"group": "prod"}, "inventory: 'a\\nb' is not a cluster name"),
        ({"a": {"labels": {"n": None}}}, {"group": "prod"}, "inventory.a.labels.n: None; a cloud label's value is a string"),
        (INVENTORY, {"labels": {"x": {"y": 1}}}, "plan.stages[0].select.labels.x: {'y': 1}; a cloud label's value is a string"),
        (INVENTORY, {"labels": {"x": None}}, "plan.stages[0].select.labels.x: None"),
    ],
)
def test_a_broken_inventory_or_label_is_named(inventory, select, message):
    with pytest.raises(RuleError, match=re.escape(message)):
        selection.expand_stages({"stages": [{"name": "w", "select": select}]}, inventory)


def test_label_values_compare_as_the_strings_kops_stores():
    inventory = {"c0": {"labels": {"spot": "true", "tier": "1"}}, "c1": {"labels": {"spot": "false", "tier": "1"}}}
    [stage] = selection.expand_stages({"stages": [{"name": "w", "select": {"labels": {"spot": True, "tier": 1}}}]}, inventory)["stages"]
    assert stage["clusters"] == ["c0"]


@pytest.mark.parametrize("size", ["\u00b2", "\u00b2%", "\u0663", "\uff15%", "9" * 5000, " 25 % ", 2.5, True])
def test_a_wave_size_is_ascii_digits_or_a_percentage(size):
    with pytest.raises(RuleError, match=re.escape("plan.stages[0].wave_size: ")):
        selection.expand_stages({"stages": [{"name": "w", "select": {"group": "prod"}, "wave_size": size}]}, INVENTORY)


def test_a_cluster_done_over_the_time_budget_is_recorded_failed_and_halts_the_run():
    plan = dict(PLAN, cluster_budget="30m")
    assert runs.check_plan(plan)["cluster_budget_seconds"] == 1800
    assert "cluster_budget_seconds" not in runs.check_plan(PLAN)  # not given: the stored plan is as before
    record = fresh(plan)
    runs.start(record, "c0", NOW, "job-1")
    runs.finish(record, "c0", "done", None, NOW + datetime.timedelta(minutes=29))
    assert record["clusters"]["c0"]["state"] == "done"
    runs.start(record, "c1", NOW, "job-1")
    runs.finish(record, "c1", "done", None, NOW + datetime.timedelta(minutes=31))
    assert record["clusters"]["c1"]["state"] == "failed"
    assert record["clusters"]["c1"]["reason"].startswith("done in 1860 s, over the plan's cluster_budget of 1800 s: counted as failed"), record
    later = NOW + datetime.timedelta(hours=2)  # after the canary's soak
    decision = runs.decide(record, "c2", later)
    assert decision["proceed"] is False and decision["why"].startswith("the run halted: 1 cluster(s) failed (c1)"), decision


@pytest.mark.parametrize("budget", ["soon", "0s", "-5m"])
def test_a_time_budget_that_is_not_a_positive_duration_is_named(budget):
    with pytest.raises(RuleError, match=r"plan\.cluster_budget"):
        runs.check_plan(dict(PLAN, cluster_budget=budget))


@pytest.mark.parametrize("budget, seconds", [("0.5s", 1), ("1ns", 1), ("45m0.5s", 2701), ("1h30m", 5400)])
def test_a_time_budget_is_whole_seconds_rounded_up(budget, seconds):
    assert runs.check_plan(dict(PLAN, cluster_budget=budget))["cluster_budget_seconds"] == seconds


def test_a_duration_past_go_s_range_is_named():
    # time.ParseDuration refuses a duration past int64 nanoseconds ("invalid duration"); a helper's 400 nines crashed
    for field, plan in (
        ("plan.cluster_budget", dict(PLAN, cluster_budget="9" * 400 + "h")),
        ("plan.stages[0].soak", {"stages": [{"name": "a", "clusters": ["c0"], "soak": "2562048h"}]}),
    ):
        with pytest.raises(RuleError, match=re.escape(field) + ".* is out of range; a Go duration is at most 2562047h47m16.854775807s"):
            runs.check_plan(plan)
    assert runs.check_plan({"stages": [{"name": "a", "clusters": ["c0"], "soak": "2562047h"}]})["stages"][0]["soak_seconds"] == 2562047 * 3600
