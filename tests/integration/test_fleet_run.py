"""Issue 31, the run record: kopsible.kops.fleet_run through ansible-playbook against the emulator's S3, the record read
back from the bucket each time. Two controllers that start the same run at once: one holds it, the other is refused
naming the holder. A controller killed while a cluster was running: the re-run is refused until it takes over, then
resumes that cluster (same attempt), and a cluster done is never started again. Check mode writes no version."""

import datetime
import json
import threading
import time
import zoneinfo

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._fleet.record import DAYS
from harness.playbook import run_playbook

BUCKET = "fleet-runs"
KEY = "kopsible-fleet-runs/upgrade-1.35.json"
PLAN = {
    "change": {"kubernetes_version": "1.35.0"},
    "stages": [{"name": "canary", "clusters": ["c0"], "soak": "2s"}, {"name": "wave1", "clusters": ["c1", "c2"], "approval": True}],
}


@pytest.fixture
def runs(emulator):
    """``runs(holder, *tasks, check=False)``: a playbook of fleet_run tasks (bucket and run set) for ``holder``; the
    results as ``[(name, result)]``. ``runs.record()`` and ``runs.versions()`` read the bucket."""
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})

    class Runs:
        s3 = emulator.client("s3")

        def __call__(self, holder, *tasks, check=False):
            play = []
            for index, options in enumerate(tasks):
                options = dict({"bucket": BUCKET, "run": "upgrade-1.35", "holder": holder}, **options)
                play.append({"name": "t%d" % index, "kopsible.kops.fleet_run": options, "ignore_errors": True})
            return run_playbook(play, emulator=emulator, check=check).results

        def record(self):
            return json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read())

        def versions(self):
            return len(s3.list_object_versions(Bucket=BUCKET, Prefix=KEY).get("Versions", []))

    return Runs()


def test_a_run_is_made_once_resumed_with_its_plan_and_refused_with_another(runs):
    [(_, made), (_, again), (_, other), (_, bad)] = runs(
        "job-1",
        {"plan": PLAN},
        {"plan": PLAN},
        {"plan": dict(PLAN, max_failures=1)},
        {"plan": {"stages": [{"name": "a", "clusters": ["c0"], "soak": "soon"}]}, "run": "other"},
    )
    assert made["changed"] is True and again["changed"] is False, (made, again)
    stored = runs.record()
    assert stored["clusters"] == made["record"]["clusters"]
    assert sorted(stored["clusters"]) == ["c0", "c1", "c2"] and {c["state"] for c in stored["clusters"].values()} == {"pending"}
    assert stored["plan"]["stages"][0]["soak_seconds"] == 2 and stored["holder"]["id"] == "job-1"
    assert other["failed"] and "exists with another plan: max_failures (0 -> 1)" in other["msg"], other
    assert bad["failed"] and bad["msg"].startswith("plan.stages[0].soak: 'soon' is not a duration"), bad
    # the second call renews the lease (a write) unless it ran in the same second as the first (lease_until is to the
    # second, so the record is unchanged and nothing is written); the refused calls wrote nothing
    renewed = again["record"]["holder"]["lease_until"] != made["record"]["holder"]["lease_until"]
    assert stored == again["record"] and runs.versions() == 1 + renewed, (made["record"]["holder"], again["record"]["holder"])


def test_the_same_run_started_twice_at_once_runs_once(runs):
    outcomes = {}

    def start(holder):
        outcomes[holder] = runs(holder, {"plan": PLAN})[0][1]

    threads = [threading.Thread(target=start, args=(h,)) for h in ("job-a", "job-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = [h for h, r in outcomes.items() if not r.get("failed")]
    refused = [h for h, r in outcomes.items() if r.get("failed")]
    assert len(held) == 1 and len(refused) == 1, outcomes
    assert "is held by %s" % held[0] in outcomes[refused[0]]["msg"] and outcomes[refused[0]]["holder"]["id"] == held[0]
    assert runs.record()["holder"]["id"] == held[0]


def test_a_killed_controller_is_taken_over_and_its_running_cluster_resumed_never_a_done_one_twice(runs):
    [(_, made), (_, claim)] = runs("job-1", {"plan": PLAN}, {"state": "claimed", "cluster": "c0"})
    assert claim["proceed"] is True and claim["why"] == "started" and claim["changed"] is True
    assert runs.record()["clusters"]["c0"]["state"] == "running"
    # job-1 is killed here: c0 stays running, job-1's lease (1800 s) holds the run
    [(_, refused), (_, taken), (_, resumed), (_, finished), (_, again), (_, wave)] = runs(
        "job-2",
        {"plan": PLAN},
        {"plan": PLAN, "takeover": True},
        {"state": "claimed", "cluster": "c0"},
        {"state": "finished", "cluster": "c0", "outcome": "done"},
        {"state": "claimed", "cluster": "c0"},
        {"state": "claimed", "cluster": "c1"},
    )
    assert refused["failed"] and "is held by job-1" in refused["msg"] and "takeover: true" in refused["msg"], refused
    assert taken["changed"] is True and taken["record"]["holder"]["id"] == "job-2"
    assert resumed["proceed"] is True and resumed["resumed"] is True, resumed
    assert again["proceed"] is False and again["why"].startswith("done at "), again
    assert wave["proceed"] is False  # soaking after the canary, or waiting for wave1's approval
    assert "soaking after stage canary" in wave["why"] or "waits for approval" in wave["why"], wave
    stored = runs.record()
    assert stored["clusters"]["c0"]["state"] == "done" and stored["clusters"]["c0"]["attempts"] == 1  # started once
    assert [e["event"] for e in stored["events"]] == ["start", "takeover", "start", "done"]
    # check mode: the answer without a write
    before = runs.versions()
    [(_, approved)] = runs("job-2", {"state": "approved", "stage": "wave1"}, check=True)
    assert approved["changed"] is True and runs.versions() == before and runs.record()["approved"] == []
    [(_, approved), (_, summary)] = runs("job-2", {"state": "approved", "stage": "wave1"}, {"state": "query"})
    assert approved["changed"] is True and runs.record()["approved"] == ["wave1"]
    assert summary["changed"] is False and summary["summary"] == ["canary c0: done (attempt 1)", "wave1 c1: pending", "wave1 c2: pending"]


def test_a_closed_maintenance_window_keeps_the_clusters_waiting(runs):
    # one minute a week, on the weekday three days from today there: closed now whenever this runs
    today = datetime.datetime.now(zoneinfo.ZoneInfo("Pacific/Kiritimati")).weekday()
    day = DAYS[(today + 3) % 7]
    plan = dict(PLAN, window={"days": [day], "start": "00:00", "end": "00:01", "timezone": "Pacific/Kiritimati"})
    [(_, made), (_, claim)] = runs("job-1", {"plan": plan, "run": "windowed"}, {"state": "claimed", "cluster": "c0", "run": "windowed"})
    assert made["changed"] is True
    assert claim["proceed"] is False and claim["why"].startswith("waiting for the maintenance window (opens "), claim
    assert claim["changed"] is False


def test_a_cluster_over_its_time_budget_is_recorded_failed_and_the_next_stage_does_not_start(runs):
    plan = {"stages": [{"name": "canary", "clusters": ["c0"]}, {"name": "wave1", "clusters": ["c1"]}], "cluster_budget": "1s"}
    [(_, made), (_, claim)] = runs("job-1", {"plan": plan, "run": "budget"}, {"state": "claimed", "cluster": "c0", "run": "budget"})
    assert made["changed"] is True and claim["proceed"] is True, (made, claim)
    time.sleep(2.5)  # the canary's change takes longer than its budget
    [(_, finished), (_, wave)] = runs(
        "job-1", {"state": "finished", "cluster": "c0", "outcome": "done", "run": "budget"}, {"state": "claimed", "cluster": "c1", "run": "budget"}
    )
    stored = json.loads(runs.s3.get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/budget.json")["Body"].read())
    assert stored["plan"]["cluster_budget_seconds"] == 1
    c0 = stored["clusters"]["c0"]
    assert c0["state"] == "failed" and "over the plan's cluster_budget of 1 s: counted as failed" in c0["reason"], c0
    assert finished["summary"][0].startswith("canary c0: failed (attempt 1, done in "), finished["summary"]
    assert wave["proceed"] is False and wave["why"].startswith("the run halted: 1 cluster(s) failed (c0)"), wave
    assert stored["clusters"]["c1"]["state"] == "pending"
