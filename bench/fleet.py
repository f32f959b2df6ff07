"""Section 6 of ``make bench`` (``--sections fleet``): how many clusters an hour a fleet update run upgrades.

A fleet of gossip clusters (tools/harness/fleet.py: one control-plane node and one worker each, Kubernetes 1.34.1)
in one state store, upgraded to 1.35.0 by playbooks/fleet_update_run.yml: stages of ``concurrency`` clusters (the
first the canary), the upgrade role cloud-only (no control plane runs for these clusters), the record in S3. Measured
per run: the wall time of the whole ``ansible-playbook`` run, each cluster's time from its ``start`` to its ``done``
event in the record, the bound ``clusters x mean cluster time / concurrency`` (what a run would take if the stages
cost nothing but their clusters), clusters per hour, and the record's own cost per cluster (the fleet_run tasks of the
cluster plays: the claim and the finish, each a conditional PUT). Then the same with a modelled AWS round trip on
every request (the counting proxy's latency). 50 clusters are projected from the measured stage time (stages x
stage time + the run's fixed start and summary), not run.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

import yaml

from harness import fleet
from harness.playbook import _seconds, ansible_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "kopsible-bench-fleet"
FROM, TO = "1.34.1", "1.35.0"
FLEET_TASKS = ("Fleet update run - may this cluster start now?", "Fleet update run - record the cluster done")


def run_once(bench, log, clusters, concurrency, latency, index):
    """One fleet update run over a fresh fleet of ``clusters`` at ``concurrency`` clusters per stage and ``latency``
    seconds per AWS request; returns its figures (dict)."""
    emulator = bench.emulator
    emulator.reset()
    names = ["f%02d-%d.k8s.local" % (i, index) for i in range(clusters)]
    fleet.make_fleet(emulator, BUCKET, {n: (FROM, None) for n in names}, bench.ssh_key)
    stages = [{"name": "stage%d" % (i // concurrency), "clusters": names[i : i + concurrency]} for i in range(0, clusters, concurrency)]
    stages[0]["name"] = "canary"
    inventory = os.path.join(bench.tmp, "fleet.kops.yml")
    with open(inventory, "w") as handle:
        yaml.safe_dump({"plugin": "kopsible.kops.kops", "state_stores": ["s3://" + BUCKET], "endpoint_url": bench.proxy.url, "region": "us-east-1"}, handle)
    extra = dict(
        fleet.kops_settings(BUCKET),
        fleet_run_name="bench",
        fleet_run_bucket=BUCKET,
        fleet_run_plan={"change": {"kubernetes_version": TO}, "stages": stages},
        fleet_run_holder="bench",
        fleet_export_kubeconfig=False,
        aws_endpoint_url=bench.proxy.url,
        aws_region="us-east-1",
        **fleet.CLOUD_ONLY_UPGRADE,
    )
    extra_file = os.path.join(bench.tmp, "fleet-extra.yml")
    with open(extra_file, "w") as handle:
        yaml.safe_dump(extra, handle)
    env = ansible_env(bench.proxied, {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_FORKS": str(max(5, concurrency))})
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, "-e", "@" + extra_file]
    bench.proxy.configure(latency=latency)
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv + [os.path.join(ROOT, "playbooks", "fleet_update_run.yml")], capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    finally:
        bench.proxy.configure(latency=0.0)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError("fleet run failed: %s %s" % (proc.stdout[-2000:], proc.stderr[-1000:]))
    record = json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/bench.json")["Body"].read())
    versions = [yaml.safe_load(emulator.client("s3").get_object(Bucket=BUCKET, Key=n + "/config")["Body"].read())["spec"]["kubernetesVersion"] for n in names]
    if versions != [TO] * clusters or any(record["clusters"][n]["state"] != "done" for n in names):
        raise RuntimeError("fleet run did not upgrade every cluster: %s" % {n: record["clusters"][n]["state"] for n in names})
    events = {(e["cluster"], e["event"]): e["at"] for e in record["events"] if e.get("cluster")}
    per_cluster = [_seconds(events[(n, "start")].replace("Z", "+00:00"), events[(n, "done")].replace("Z", "+00:00")) for n in names]
    data = json.loads(proc.stdout[proc.stdout.index("{") :])
    record_seconds, stage_seconds = 0.0, []
    for play in data["plays"]:
        name = play["play"]["name"]
        duration = play["play"].get("duration") or {}
        if "a stage per batch" in name and duration.get("start"):
            stage_seconds.append(_seconds(duration["start"], duration["end"]))
        for task in play["tasks"]:
            span = task["task"].get("duration") or {}
            if task["task"]["name"] in FLEET_TASKS and span.get("start"):
                record_seconds += _seconds(span["start"], span["end"])
    stages_count = len(stages)
    fixed = wall - sum(stage_seconds)
    row = {
        "clusters": clusters,
        "concurrency": concurrency,
        "latency_ms": round(latency * 1000),
        "wall": round(wall, 1),
        "cluster_seconds": round(statistics.mean(per_cluster), 1),
        "cluster_range": "%.0f-%.0f" % (min(per_cluster), max(per_cluster)),
        "bound": round(clusters * statistics.mean(per_cluster) / concurrency, 1),
        "per_hour": round(clusters * 3600 / wall, 1),
        "record_per_cluster": round(record_seconds / stages_count, 2),
        "stage_seconds": round(statistics.mean(stage_seconds), 1) if stage_seconds else None,
        "fixed_seconds": round(fixed, 1),
    }
    if stage_seconds:
        row["projected_50"] = round(fixed + math.ceil(50 / concurrency) * statistics.mean(stage_seconds), 0)
        row["projected_50_per_hour"] = round(50 * 3600 / row["projected_50"], 1)
    log("fleet: %d clusters, %d per stage, %d ms: %.0f s (%.1f clusters/h)" % (clusters, concurrency, row["latency_ms"], wall, row["per_hour"]))
    return row


def section_fleet(bench, log, clusters=6, concurrency=2, latency_ms=50.0):
    """The section's data: one run without and one with ``latency_ms`` per AWS request (``{'rows': [...]}``)."""
    rows = []
    for index, latency in enumerate((0.0, latency_ms / 1000.0) if latency_ms else (0.0,)):
        rows.append(run_once(bench, log, clusters, concurrency, latency, index))
    return {"rows": rows, "from": FROM, "to": TO}


def render_fleet(data, fmt):
    """The section's Markdown lines (list of str)."""
    lines = [
        "## 6. Fleet update run: clusters per hour",
        "",
        "playbooks/fleet_update_run.yml upgrading gossip clusters %s -> %s (one control-plane node and one worker each, "
        "cloud-only rolls at 1 s intervals: no control plane runs for them), a stage of `concurrency` clusters at a time, "
        "the first the canary. **cluster s**: from its `start` to its `done` event in the run's record; **bound**: "
        "clusters x mean cluster time / concurrency; **record s per cluster**: the fleet_run claim and finish tasks of a "
        "stage (conditional PUTs), which every cluster of the stage waits for; **50 projected**: the run's fixed start "
        "and summary plus ceil(50 / concurrency) stages of the measured mean stage time (not run)." % (data["from"], data["to"]),
        "",
        "| clusters | concurrency | AWS round trip | wall s | clusters/h | cluster s (range) | bound s | record s per cluster "
        "| stage s | fixed s | 50 projected: s, clusters/h |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        lines.append(
            "| %d | %d | %s ms | %s | %s | %s (%s) | %s | %s | %s | %s | %s, %s |"
            % (
                row["clusters"],
                row["concurrency"],
                row["latency_ms"],
                fmt(row["wall"], 0),
                fmt(row["per_hour"], 1),
                fmt(row["cluster_seconds"], 1),
                row["cluster_range"],
                fmt(row["bound"], 0),
                fmt(row["record_per_cluster"], 2),
                fmt(row["stage_seconds"], 1),
                fmt(row["fixed_seconds"], 1),
                fmt(row.get("projected_50"), 0),
                fmt(row.get("projected_50_per_hour"), 1),
            )
        )
    return lines + [""]
