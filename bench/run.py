#!/usr/bin/env python
"""`make bench`: what the collection costs on top of kops, measured against the local AWS emulator.

Writes docs/benchmarks.md (tables, with the commit, the date and the machine) and out/bench.json (every
run). Four sections, each figure the median of ``--runs`` runs, each comparison measured in the same run
with its two sides interleaved (A B, B A, A B ...) so that load from other processes hits both alike:

1. **No-op cost per module**: a second (third, ...) identical run of route53_subdomain, kops_cluster,
   kops_instancegroup and rolling_update: kops invocations (the modules' ``kops_invocations``), AWS API
   requests (counted at a counting proxy in front of the emulator, tools/fault_proxy.py with no faults,
   split by client: kops' Go SDK, the module's boto3, the aws CLI), wall time of the ``ansible-playbook``
   run and of the task alone.
2. **Overhead over raw kops**: scale an InstanceGroup by one with apply (kops_instancegroup vs
   bench/raw_scale.sh: ``kops edit ig`` + ``kops update cluster --yes``), and create + apply a cluster
   (kops_cluster vs bench/raw_create.sh: ``kops create cluster`` + ``kops update cluster --yes``).
3. **Lifecycle**: state store -> create -> scale -> upgrade + cloud-only roll -> delete through the
   playbooks (create_cluster, scale_cluster, upgrade_cluster, delete_cluster) vs bench/raw_lifecycle.sh,
   on a gossip cluster (``*.k8s.local``: no DNS server needed). With ``--with-dns`` (needs 127.0.0.1:53
   free and root) also playbooks/lifecycle.yml with Route53 delegation vs the same script with SUBDOMAIN.
4. **Fleet inventory**: bench/inventory.py (the inventory plugin over 1, 10, 100, 500 clusters).
5. **Upgrade** (bench/upgrade.py, needs root and port 53 on 127.0.0.1, as ``--with-dns``): the upgrade role against
   ``kops edit cluster --set`` + ``kops reconcile cluster --yes`` on fresh HA clusters with the kube world running,
   ``--upgrade-runs`` runs each for one minor version, then ``--upgrade-multi-runs`` each for three (the role's
   one plan against three chained ``kops reconcile`` runs).
6. **Fleet update run** (bench/fleet.py, ``--sections fleet``): clusters per hour of playbooks/fleet_update_run.yml
   over 6 gossip clusters, 2 per stage, without and with ``--latency-ms`` per AWS request, against the bound
   clusters x cluster time / concurrency, and the run record's cost per cluster; 50 clusters projected.

A run of only some sections (``--sections upgrade``) rewrites those sections of docs/benchmarks.md and keeps the
others as they were, each under its own "measured at" line.

Kops clusters here are gossip clusters (``NAME.k8s.local``), which make no DNS lookups, so the benchmark
never binds port 53 unless ``--with-dns`` is given.

    .venv/bin/python bench/run.py [--runs 3] [--lifecycle-runs 2] [--upgrade-runs 2] [--upgrade-multi-runs 1]
                                  [--sections noop,overhead,lifecycle,inventory,upgrade]
                                  [--inventory-sizes 1,10,100,500] [--with-dns]
"""

import argparse
import datetime
import itertools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from fleet import render_fleet, section_fleet  # noqa: E402
from upgrade import render_upgrade  # noqa: E402

import fault_proxy  # noqa: E402
from harness.emulator import Emulator  # noqa: E402
from harness.faults import ProxiedEmulator  # noqa: E402
from harness.kops_env import UBUNTU_AMI, artifact_mirror, kops_binary  # noqa: E402
from harness.playbook import ansible_env, run_playbook  # noqa: E402

BENCH = os.path.join(ROOT, "bench")
PARENT = "example.org"
STORE_BUCKET = "kopsible-bench-state"
K8S_FROM, K8S_TO = "1.34.1", "1.35.0"


# ---------------------------------------------------------------------------------------------- counting
class ClientCounter:
    """Counts the AWS requests that pass the counting proxy, per client family, by wrapping
    ``fault_proxy.classify`` (which sees every request's headers). The family comes from the
    ``User-Agent``: ``kops`` (aws-sdk-go), ``aws-cli``, ``boto3`` (the modules, the inventory plugin)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()
        original = fault_proxy.classify

        def classify(method, path, headers, body, rest_operations=None):
            found = original(method, path, headers, body, rest_operations)
            if found[2] != "internal":
                agent = (headers.get("User-Agent") or "").lower()
                family = "kops" if "aws-sdk-go" in agent else "aws-cli" if "aws-cli" in agent else "boto3"
                with self._lock:
                    self.by_client[family] = self.by_client.get(family, 0) + 1
                    key = "%s %s:%s" % (family, found[0], found[1])
                    self.by_operation[key] = self.by_operation.get(key, 0) + 1
            return found

        fault_proxy.classify = classify

    def reset(self):
        with self._lock:
            self.by_client, self.by_operation = {}, {}

    def snapshot(self):
        """``{'total': n, 'kops': n, 'boto3': n, 'aws-cli': n, 'operations': {...}}`` since the last reset."""
        with self._lock:
            counts = {"total": sum(self.by_client.values()), "operations": dict(sorted(self.by_operation.items()))}
            for family in ("kops", "boto3", "aws-cli"):
                counts[family] = self.by_client.get(family, 0)
            return counts


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def spread(values):
    values = [v for v in values if v is not None]
    return "%.1f-%.1f" % (min(values), max(values)) if values else "-"


# -------------------------------------------------------------------------------------------- the bench
class Bench:
    """The emulator, the counting proxy in front of it, an SSH key and the kops options, plus helpers
    that time one module playbook or one raw script and count its AWS requests."""

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.emulator = self.proxy = self.proxied = None
        self.counter = ClientCounter()
        key = os.path.join(tmp, "id_rsa")
        subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", key], check=True)
        self.ssh_key_path = key + ".pub"
        with open(self.ssh_key_path) as handle:
            self.ssh_key = handle.read().strip()
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        self.kops_env = {"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest", "KUBECONFIG": self.kubeconfig}
        self.kops = {"kops_binary": kops_binary(), "kops_env": self.kops_env, "state_store": "s3://" + STORE_BUCKET}

    def start(self):
        self.emulator = Emulator(log_path=os.path.join(self.tmp, "emulator.log")).start()
        self.emulator.warm()
        s3 = self.emulator.client("s3")
        s3.create_bucket(Bucket=STORE_BUCKET)
        s3.put_bucket_versioning(Bucket=STORE_BUCKET, VersioningConfiguration={"Status": "Enabled"})
        self.emulator.client("route53").create_hosted_zone(Name=PARENT + ".", CallerReference="bench-parent")
        self.proxy = fault_proxy.FaultProxy(self.emulator.url, rate=0.0).start()
        self.proxied = ProxiedEmulator(self.emulator, self.proxy)
        return self

    def stop(self):
        if self.proxy:
            self.proxy.stop()
        if self.emulator:
            self.emulator.stop()

    def module(self, tasks, kops=True, **kwargs):
        """Run ``tasks`` (module_defaults point at the proxy); returns a measurement dict."""
        self.counter.reset()
        start = time.perf_counter()
        run = run_playbook(tasks, emulator=self.proxied, kops=self.kops if kops else None, **kwargs)
        seconds = time.perf_counter() - start
        aws = self.counter.snapshot()
        if run.failed:
            failed = [(n, r.get("msg")) for n, r in run.results if r.get("failed")]
            raise RuntimeError("module run failed: %s %s" % (failed, run.stderr[-2000:]))
        result = run.result() if run.results else {}
        return {
            "seconds": round(seconds, 3),
            "task_seconds": task_seconds(run.stdout),
            "aws": aws,
            "changed": result.get("changed"),
            "kops_invocations": result.get("kops_invocations"),
            "kops_calls": len(result.get("kops_invocations") or []),
            "result": result,
            "run": run,
        }

    def playbook(self, path, extra_vars, env=None):
        """Run an existing playbook against the proxy; returns a measurement dict."""
        self.counter.reset()
        start = time.perf_counter()
        run = run_playbook(playbook=path, emulator=self.proxied, extra_vars=extra_vars, env=env)
        seconds = time.perf_counter() - start
        aws = self.counter.snapshot()
        if run.failed:
            failed = [(n, r.get("msg")) for n, r in run.results if r.get("failed")]
            raise RuntimeError("playbook %s failed: %s %s" % (path, failed, run.stderr[-2000:]))
        kops_calls = sum(len(r.get("kops_invocations") or []) for _, r in run.results)
        return {"seconds": round(seconds, 3), "task_seconds": task_seconds(run.stdout), "aws": aws, "kops_calls": kops_calls, "run": run}

    def script_env(self, state_store="s3://" + STORE_BUCKET, extra=None):
        """What a person's shell has for the raw scripts: AWS settings for the proxy, kops' state store
        variables (as kops_runner sets them for a custom endpoint) and the offline settings."""
        from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import kops_environment

        env = kops_environment(state_store=state_store, base=ansible_env(self.proxied), extra=self.kops_env)
        env.update(KOPS=kops_binary(), SSH_KEY=self.ssh_key_path, IMAGE=UBUNTU_AMI)
        env.update(extra or {})
        return env

    def script(self, argv, env):
        """Run a raw shell script; returns a measurement dict. RuntimeError when it fails."""
        self.counter.reset()
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT, timeout=1800)
        seconds = time.perf_counter() - start
        aws = self.counter.snapshot()
        if proc.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr[-2000:]))
        return {"seconds": round(seconds, 3), "aws": aws}

    def kops_run(self, args, state_store="s3://" + STORE_BUCKET):
        """A kops command outside any measurement (set-up and clean-up)."""
        proc = subprocess.run([kops_binary()] + args, env=self.script_env(state_store), capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError("kops %s failed: %s" % (" ".join(args), proc.stderr[-2000:]))
        return proc.stdout

    def groups(self, cluster):
        """``{asg name: desired capacity}`` of ``cluster``, read from the emulator."""
        asg = self.emulator.client("autoscaling")
        found = {}
        for page in asg.get_paginator("describe_auto_scaling_groups").paginate():
            for group in page["AutoScalingGroups"]:
                tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
                if tags.get("KubernetesCluster") == cluster:
                    found[group["AutoScalingGroupName"]] = group["DesiredCapacity"]
        return found

    def cluster_options(self, name, **overrides):
        options = {
            "name": name,
            "zones": ["us-east-1a", "us-east-1b"],
            "control_plane_zones": ["us-east-1a"],
            "node_count": 2,
            "node_size": "t3.medium",
            "control_plane_size": "t3.medium",
            "kubernetes_version": K8S_FROM,
            "channel": "none",
            "image": UBUNTU_AMI,
            "ssh_public_key": self.ssh_key,
            "apply": True,
        }
        options.update(overrides)
        return options


def task_seconds(stdout):
    """Seconds of each task of an ansible.posix.json run (list of (name, seconds)); [] when unreadable."""
    try:
        data = json.loads(stdout[stdout.index("{") :])
    except ValueError:
        return []
    found = []
    for play in data.get("plays", []):
        for task in play.get("tasks", []):
            duration = task.get("task", {}).get("duration", {})
            try:
                start = datetime.datetime.fromisoformat(duration["start"].replace("Z", "+00:00"))
                end = datetime.datetime.fromisoformat(duration["end"].replace("Z", "+00:00"))
            except (KeyError, ValueError):
                continue
            found.append((task["task"].get("name"), round((end - start).total_seconds(), 3)))
    return found


def interleaved(runs, first, second):
    """Run ``first(i)`` and ``second(i)`` ``runs`` times, alternating which goes first; returns two lists."""
    a, b = [], []
    for i in range(runs):
        if i % 2 == 0:
            a.append(first(i))
            b.append(second(i))
        else:
            b.append(second(i))
            a.append(first(i))
    return a, b


def log(message):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


# ------------------------------------------------------------------------------------ 1. no-op cost
def noop_row(module, measurements, target, note=""):
    return {
        "module": module,
        "runs": len(measurements),
        "changed": sorted({bool(m["changed"]) for m in measurements}),
        "kops_calls": median([m["kops_calls"] for m in measurements]),
        "aws_total": median([m["aws"]["total"] for m in measurements]),
        "aws_boto3": median([m["aws"]["boto3"] for m in measurements]),
        "aws_kops": median([m["aws"]["kops"] for m in measurements]),
        "seconds": median([m["seconds"] for m in measurements]),
        "seconds_range": spread([m["seconds"] for m in measurements]),
        "task_seconds": median([sum(s for _, s in m["task_seconds"]) for m in measurements]),
        "kops_argv": [" ".join(c["argv"][1:4]) for c in (measurements[-1]["kops_invocations"] or [])],
        "operations": measurements[-1]["aws"]["operations"],
        "target": target,
        "note": note,
        "runs_s": [m["seconds"] for m in measurements],
    }


def section_noop(bench, runs):
    rows = []
    subdomain = {"kopsible.kops.route53_subdomain": {"name": "bench." + PARENT, "parent_zone": PARENT}}
    log("no-op: route53_subdomain (create once, then %d identical runs)" % runs)
    bench.module([subdomain], kops=False)
    rows.append(noop_row("route53_subdomain", [bench.module([subdomain], kops=False) for _ in range(runs)], {"aws_total": 3}))

    # Not every name works on the emulator: kops names the kops-controller target group
    # "kops-controller-<name, dashed>" cut to 25 characters + "-" + hash; when the cut ends in "-" (e.g.
    # noop.k8s.local) the name holds "--", which moto refuses and AWS accepts, and update --yes retries forever.
    name = "bench1.k8s.local"
    log("no-op: kops_cluster (create %s with apply, then %d identical runs)" % (name, runs))
    created = bench.module([{"kopsible.kops.kops_cluster": bench.cluster_options(name)}])
    rows.append(
        noop_row(
            "kops_cluster",
            [bench.module([{"kopsible.kops.kops_cluster": bench.cluster_options(name)}]) for _ in range(runs)],
            {"kops_calls": 2},
            "apply: true (get cluster, update dry run)",
        )
    )
    ig = {"cluster": name, "name": "nodes-us-east-1a", "min_size": 1, "max_size": 1}
    log("no-op: kops_instancegroup without and with apply")
    rows.append(
        noop_row("kops_instancegroup", [bench.module([{"kopsible.kops.kops_instancegroup": ig}]) for _ in range(runs)], {"kops_calls": 1}, "apply: false")
    )
    rows.append(
        noop_row(
            "kops_instancegroup",
            [bench.module([{"kopsible.kops.kops_instancegroup": dict(ig, apply=True)}]) for _ in range(runs)],
            None,
            "apply: true (adds the update dry run)",
        )
    )
    log("no-op: rolling_update (cloudonly, nothing needs an update)")
    roll = {"kopsible.kops.rolling_update": {"cluster": name, "cloudonly": True}}
    rows.append(
        noop_row(
            "rolling_update", [bench.module([roll]) for _ in range(runs)], None, "cloudonly: true (kops rolling-update cluster without --yes lists the groups)"
        )
    )
    for row in rows:
        row["meets_target"] = meets(row)
    return {"rows": rows, "create_seconds": created["seconds"], "create_kops_calls": created["kops_calls"], "create_aws": created["aws"]["total"]}


def meets(row):
    target = row.get("target")
    if not target:
        return None
    return all(row[key] is not None and row[key] <= limit for key, limit in target.items())


# ---------------------------------------------------------------------------------- 2. overhead
def section_overhead(bench, runs):
    name, ig = "bench1.k8s.local", "nodes-us-east-1b"
    asg = "%s.%s" % (ig, name)
    sizes = itertools.cycle([2, 3])  # every run changes the size by one, and the group stays small
    env = bench.script_env()

    def module_scale(plan_before_apply):
        def run(i):
            size = next(sizes)
            m = bench.module(
                [
                    {
                        "kopsible.kops.kops_instancegroup": {
                            "cluster": name,
                            "name": ig,
                            "min_size": size,
                            "max_size": size,
                            "apply": True,
                            "plan_before_apply": plan_before_apply,
                        }
                    }
                ]
            )
            check_size(bench, name, asg, size, "kops_instancegroup")
            return m

        return run

    def raw_scale(preview):
        def run(i):
            size = next(sizes)
            m = bench.script([os.path.join(BENCH, "raw_scale.sh"), name, ig, str(size)], dict(env, PREVIEW="1" if preview else "0"))
            check_size(bench, name, asg, size, "raw_scale.sh")
            return m

        return run

    rows = []
    for latency in (0.0, bench.args.latency_ms / 1000.0):
        if latency and not bench.args.latency_ms:
            continue
        bench.proxy.configure(latency=latency)
        at = " at %d ms per AWS request" % round(latency * 1000) if latency else ""
        try:
            log("overhead: scale %s by one, plan then apply%s, module vs raw kops (preview, then --yes), %d runs each" % (ig, at, runs))
            planned_module, planned_raw = interleaved(runs, module_scale(True), raw_scale(True))
            log("overhead: scale %s by one, apply without the dry run%s, module vs raw kops (--yes only), %d runs each" % (ig, at, runs))
            blind_module, blind_raw = interleaved(runs, module_scale(False), raw_scale(False))
        finally:
            bench.proxy.configure(latency=0.0)
        rows.append(
            overhead_row(
                "scale one InstanceGroup by one: plan, then apply" + at,
                "kops_instancegroup (apply: true)",
                "kops edit ig + kops update cluster + kops update cluster --yes (bench/raw_scale.sh, PREVIEW=1)",
                planned_module,
                planned_raw,
                latency,
            )
        )
        rows.append(
            overhead_row(
                "scale one InstanceGroup by one: apply without a plan" + at,
                "kops_instancegroup (apply: true, plan_before_apply: false)",
                "kops edit ig + kops update cluster --yes (bench/raw_scale.sh)",
                blind_module,
                blind_raw,
                latency,
            )
        )

    def module_create(i):
        cluster = "om%d.k8s.local" % i
        m = bench.module([{"kopsible.kops.kops_cluster": bench.cluster_options(cluster)}])
        check_created(bench, cluster, "kops_cluster")
        return m

    def raw_create(i):
        cluster = "or%d.k8s.local" % i
        m = bench.script([os.path.join(BENCH, "raw_create.sh"), cluster], env)
        check_created(bench, cluster, "raw_create.sh")
        return m

    log("overhead: create + update --yes, module vs raw kops, %d runs each" % runs)
    create_module, create_raw = [], []
    for i in range(runs):  # interleaved; each pair is deleted before the next (not timed)
        if i % 2 == 0:
            create_module.append(module_create(i))
            create_raw.append(raw_create(i))
        else:
            create_raw.append(raw_create(i))
            create_module.append(module_create(i))
        for cluster in ("om%d.k8s.local" % i, "or%d.k8s.local" % i):
            bench.kops_run(["delete", "cluster", "--name", cluster, "--yes"])
    rows.append(
        overhead_row(
            "create a cluster and apply",
            "kops_cluster (apply: true)",
            "kops create cluster + kops update cluster --yes (bench/raw_create.sh)",
            create_module,
            create_raw,
        )
    )
    return {"rows": rows}


def check_size(bench, cluster, asg, size, who):
    found = bench.groups(cluster).get(asg)
    if found != size:
        raise RuntimeError("%s: %s has desired capacity %s, expected %s" % (who, asg, found, size))


def check_created(bench, cluster, who):
    groups = bench.groups(cluster)
    if sorted(groups.values()) != [1, 1, 1]:
        raise RuntimeError("%s: cluster %s has groups %s, expected three groups of 1" % (who, cluster, groups))


def overhead_row(operation, module_side, raw_side, module_runs, raw_runs, latency=0.0):
    ratios = [m["seconds"] / r["seconds"] for m, r in zip(module_runs, raw_runs)]
    module_s, raw_s = median([m["seconds"] for m in module_runs]), median([r["seconds"] for r in raw_runs])
    return {
        "operation": operation,
        "module": module_side,
        "raw": raw_side,
        "runs": len(module_runs),
        "latency": latency,
        "module_seconds": module_s,
        "raw_seconds": raw_s,
        "module_range": spread([m["seconds"] for m in module_runs]),
        "raw_range": spread([r["seconds"] for r in raw_runs]),
        "module_task_seconds": median([sum(s for _, s in m["task_seconds"]) for m in module_runs]),
        "ratio": round(module_s / raw_s, 3),
        "ratio_of_pairs": median(ratios),
        "task_ratio": round(median([sum(s for _, s in m["task_seconds"]) for m in module_runs]) / raw_s, 3),
        "module_kops_calls": median([m["kops_calls"] for m in module_runs]),
        "module_kops_argv": [" ".join(c["argv"][1:4]) for c in (module_runs[-1]["kops_invocations"] or [])],
        "module_kops_seconds": median([sum(c["seconds"] for c in m["kops_invocations"] or []) for m in module_runs]),
        "module_kops_each": [[" ".join(c["argv"][1:4]), c["seconds"]] for c in module_runs[-1]["kops_invocations"] or []],
        "module_aws": median([m["aws"]["total"] for m in module_runs]),
        "raw_aws": median([r["aws"]["total"] for r in raw_runs]),
        "target": 1.15,
        "module_runs_s": [m["seconds"] for m in module_runs],
        "raw_runs_s": [r["seconds"] for r in raw_runs],
    }


# ---------------------------------------------------------------------------------- 3. lifecycle
GOSSIP_PLAYBOOK = """---
# The lifecycle of playbooks/lifecycle.yml without its DNS steps, for a gossip cluster (bench/run.py).
- ansible.builtin.import_playbook: {root}/playbooks/create_cluster.yml
- ansible.builtin.import_playbook: {root}/playbooks/scale_cluster.yml
- ansible.builtin.import_playbook: {root}/playbooks/upgrade_cluster.yml
- ansible.builtin.import_playbook: {root}/playbooks/delete_cluster.yml
"""


def lifecycle_vars(bench, bucket, cluster, extra=None):
    variables = {
        "aws_endpoint_url": bench.proxy.url,
        "aws_region": "us-east-1",
        "state_store_bucket": bucket,
        "cluster_name": cluster,
        "cluster_dns_zone": "",
        "cluster_zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
        "cluster_control_plane_zones": ["us-east-1a"],
        "cluster_node_count": 2,
        "cluster_kubernetes_version": K8S_FROM,
        "cluster_ssh_public_key": bench.ssh_key,
        "cluster_image": UBUNTU_AMI,
        "cluster_channel": "none",
        "kops_binary": kops_binary(),
        "kops_env": bench.kops_env,
        "scale_instance_groups": [{"name": "nodes-us-east-1c", "min_size": 1, "max_size": 1}],
        "upgrade_kubernetes_version": K8S_TO,
        "upgrade_cloudonly": True,
        "upgrade_validate": False,
        "upgrade_control_plane_interval": "1s",
        "upgrade_node_interval": "1s",
        "upgrade_bastion_interval": "1s",
        # a cloud-only world: no control plane runs, so no etcd-manager writes the backups the pre-flight asks for
        "upgrade_etcd_backup_max_age": "",
    }
    variables.update(extra or {})
    return variables


def check_gone(bench, cluster, who):
    if bench.groups(cluster):
        raise RuntimeError("%s: cluster %s still has Auto Scaling groups after the lifecycle" % (who, cluster))


def section_lifecycle(bench, runs):
    playbook = os.path.join(bench.tmp, "lifecycle_gossip.yml")
    with open(playbook, "w") as handle:
        handle.write(GOSSIP_PLAYBOOK.format(root=ROOT))

    def module_side(i):
        cluster = "lm%d.k8s.local" % i
        m = bench.playbook(playbook, lifecycle_vars(bench, "kopsible-bench-lm%d" % i, cluster))
        check_gone(bench, cluster, "lifecycle playbooks")
        return m

    def raw_side(i):
        cluster, bucket = "lr%d.k8s.local" % i, "kopsible-bench-lr%d" % i
        m = bench.script([os.path.join(BENCH, "raw_lifecycle.sh")], bench.script_env("s3://" + bucket, {"NAME": cluster, "BUCKET": bucket}))
        check_gone(bench, cluster, "raw_lifecycle.sh")
        return m

    log("lifecycle (gossip): playbooks vs raw_lifecycle.sh, %d runs each" % runs)
    module_runs, raw_runs = interleaved(runs, module_side, raw_side)
    rows = [lifecycle_row("gossip cluster (no DNS): state store, create, scale, upgrade + roll, delete", module_runs, raw_runs)]
    result = {"rows": rows}
    if bench.args.with_dns:
        try:
            rows.append(lifecycle_with_dns(bench, runs))
        except Exception as exc:  # keep the gossip row; the report names what failed
            log("lifecycle (DNS) failed: %s: %s" % (type(exc).__name__, exc))
            result["dns_error"] = ("%s: %s" % (type(exc).__name__, exc))[-1500:]
    return result


def lifecycle_with_dns(bench, runs):
    """playbooks/lifecycle.yml (Route53 delegation, DNS cluster) vs raw_lifecycle.sh with SUBDOMAIN; binds :53."""
    import yaml

    from harness.kops_env import KopsDNS, lifecycle_overrides, module_options

    with open(os.path.join(ROOT, "examples", "vars", "us-east-1-ha.yml")) as handle:
        example = yaml.safe_load(handle)
    with KopsDNS(bench.emulator) as dns:
        options = module_options(dns)

        def module_side(i):
            sub = "lm%d.%s" % (i, PARENT)
            extra = dict(example, **lifecycle_overrides(dns, bench.ssh_key))
            extra["kops_env"] = dict(extra["kops_env"], KUBECONFIG=bench.kubeconfig)
            extra.update(
                subdomain=sub, cluster_dns_zone=sub, cluster_name="c." + sub, state_store_bucket="kopsible-dns-lm%d" % i, aws_endpoint_url=bench.proxy.url
            )
            extra["upgrade_etcd_backup_max_age"] = ""  # cloud-only: no etcd-manager runs to write the backups
            return bench.playbook(os.path.join(ROOT, "playbooks", "lifecycle.yml"), extra)

        def raw_side(i):
            sub, bucket = "lr%d.%s" % (i, PARENT), "kopsible-dns-lr%d" % i
            env = bench.script_env(
                "s3://" + bucket,
                dict(
                    options["kops_env"],
                    KOPS=options["kops_binary"],
                    NAME="c." + sub,
                    BUCKET=bucket,
                    SUBDOMAIN=sub,
                    PARENT=PARENT,
                    DNS_SERVER=dns.address,
                    ZONES="us-east-1a,us-east-1b,us-east-1c",
                    CONTROL_PLANE_ZONES="us-east-1a,us-east-1b,us-east-1c",
                    KUBECONFIG=bench.kubeconfig,
                ),
            )
            return bench.script([os.path.join(BENCH, "raw_lifecycle.sh")], env)

        log("lifecycle (DNS): playbooks/lifecycle.yml vs raw_lifecycle.sh, %d runs each" % runs)
        module_runs, raw_runs = interleaved(runs, module_side, raw_side)
    return lifecycle_row("playbooks/lifecycle.yml with Route53 delegation (examples/vars/us-east-1-ha.yml)", module_runs, raw_runs)


def lifecycle_row(what, module_runs, raw_runs):
    module_s, raw_s = median([m["seconds"] for m in module_runs]), median([r["seconds"] for r in raw_runs])
    return {
        "lifecycle": what,
        "runs": len(module_runs),
        "module_seconds": module_s,
        "raw_seconds": raw_s,
        "module_range": spread([m["seconds"] for m in module_runs]),
        "raw_range": spread([r["seconds"] for r in raw_runs]),
        "ratio": round(module_s / raw_s, 3),
        "ratio_of_pairs": median([m["seconds"] / r["seconds"] for m, r in zip(module_runs, raw_runs)]),
        "module_kops_calls": median([m["kops_calls"] for m in module_runs]),
        "module_kops_seconds": median([sum(sum(c["seconds"] for c in r.get("kops_invocations") or []) for _, r in m["run"].results) for m in module_runs]),
        "module_aws": median([m["aws"]["total"] for m in module_runs]),
        "module_aws_kops": median([m["aws"]["kops"] for m in module_runs]),
        "raw_aws": median([r["aws"]["total"] for r in raw_runs]),
        "raw_aws_kops": median([r["aws"]["kops"] for r in raw_runs]),
        "slowest_tasks": slowest(module_runs[-1]["task_seconds"]),
        "module_runs_s": [m["seconds"] for m in module_runs],
        "raw_runs_s": [r["seconds"] for r in raw_runs],
    }


def slowest(tasks, count=6):
    return sorted(tasks, key=lambda t: -t[1])[:count]


# ---------------------------------------------------------------------------------- 4. inventory
def section_inventory(args):
    """bench/inventory.py on each backend: the emulator (sizes up to 100 with ``--runs`` repetitions, larger
    sizes in a second call with one timed read each: a 500-cluster read takes over a minute on a busy 2-CPU
    machine), then ``rclone serve s3`` behind a modelled S3 round trip (``--inventory-latency-ms``), sizes up to 100."""
    sizes = [int(s) for s in args.inventory_sizes.split(",")]
    start = time.perf_counter()
    lines, built = [], []
    plans = [("moto", 0.0, [s for s in sizes if s <= 100], args.runs), ("moto", 0.0, [s for s in sizes if s > 100], 1)]
    if args.inventory_latency_ms:
        plans.append(("rclone", args.inventory_latency_ms, [s for s in sizes if s <= 100], args.runs))
    for backend, latency, chosen, runs in plans:
        if not chosen:
            continue
        cmd = [
            sys.executable,
            os.path.join(BENCH, "inventory.py"),
            "--sizes",
            ",".join(map(str, chosen)),
            "--runs",
            str(runs),
            "--subprocess-runs",
            str(args.inventory_subprocess_runs),
            "--backend",
            backend,
            "--latency-ms",
            str(latency),
        ]
        log("inventory: %s" % " ".join(cmd[1:]))
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError("bench/inventory.py failed (%d): %s" % (proc.returncode, proc.stderr[-3000:]))
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                lines.append(dict(json.loads(line), backend=backend, latency_ms=latency))
        built += [json.loads(line) for line in proc.stderr.splitlines() if line.startswith('{"built"')]
    rows = [line for line in lines if "mode" in line]
    growth = {}
    for backend in ("moto", "rclone"):
        mine = [r for r in rows if r["backend"] == backend]
        by = {(r["mode"], r["clusters"]): r for r in mine if r.get("workers") == args_workers(mine)}
        for mode in ("in-process", "subprocess"):
            if (mode, 10) in by and (mode, 100) in by:
                growth["%s %s 100/10" % (backend, mode)] = round(by[(mode, 100)]["median_s"] / by[(mode, 10)]["median_s"], 2)
            if (mode, 100) in by and (mode, 500) in by:
                growth["%s %s 500/100" % (backend, mode)] = round(by[(mode, 500)]["median_s"] / by[(mode, 100)]["median_s"], 2)
    best = min([v for k, v in growth.items() if k.endswith("in-process 100/10")] or [99])
    return {"rows": rows, "built": built, "growth": growth, "seconds": round(time.perf_counter() - start, 1), "meets_target": best <= 2.0}


# ---------------------------------------------------------------------------------- report
def machine():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), cpu)
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as handle:
            memory = "%.1f GiB" % (int(handle.readline().split()[1]) / 1048576.0)
    except (OSError, ValueError, IndexError):
        pass

    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
        except OSError:
            return ""

    import boto3
    import moto

    return {
        "host": platform.node(),
        "os": "%s %s" % (platform.system(), platform.release()),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory": memory,
        "python": platform.python_version(),
        "kops": out([kops_binary(), "version", "--short"]) or out([kops_binary(), "version"]),
        "moto": moto.__version__,
        "boto3": boto3.__version__,
        "aws_cli": out(["aws", "--version"]).split(" ")[0],
        "ansible_core": __import__("ansible.release", fromlist=["__version__"]).__version__,
    }


def commit():
    def git(*args):
        return subprocess.run(["git"] + list(args), capture_output=True, text=True, cwd=ROOT).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "plugins", "roles", "playbooks")
    return {"sha": git("rev-parse", "HEAD"), "subject": git("log", "-1", "--format=%s"), "dirty": bool(dirty)}


def fmt(value, digits=1):
    if value is None:
        return "-"
    if isinstance(value, float):
        return ("%." + str(digits) + "f") % value
    return str(value)


def ok(flag):
    return "-" if flag is None else ("yes" if flag else "**no**")


def render(data):
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`bench/run.py`); every number below comes from the run described here. Raw data of every run: `out/bench.json`.",
        "",
    ]
    c, m = data["commit"], data["machine"]
    lines += [
        "| | |",
        "|---|---|",
        "| commit | `%s`%s (%s) |" % (c["sha"][:12], " + uncommitted changes in plugins/roles/playbooks" if c["dirty"] else "", c["subject"]),
        "| date | %s (total %s s) |" % (data["date"], fmt(data["total_seconds"], 0)),
        "| machine | %s, %s, %s CPUs (%s), %s RAM |" % (m["host"], m["os"], m["cpus"], m["cpu"], m["memory"]),
        "| load average | %s at the start, %s at the end (other processes shared the CPUs) |" % (data["load_start"], data["load_end"]),
        "| software | kops %s, Python %s, ansible-core %s, moto %s, boto3 %s, %s |"
        % (m["kops"].replace("Client version: ", ""), m["python"], m["ansible_core"], m["moto"], m["boto3"], m["aws_cli"]),
        "| repetitions | %d per figure (lifecycle: %d); figures are medians, ranges are min-max |" % (data["runs"], data["lifecycle_runs"]),
        "",
    ]
    lines += [
        "How things are counted:",
        "",
        "- **AWS requests**: every HTTP request to the emulator passes a counting proxy "
        "(`tools/fault_proxy.py` with no faults); `bench/run.py` tags each by its `User-Agent`: kops (Go SDK), "
        "boto3 (the modules' own calls) or the aws CLI. Retries count once per attempt. S3 requests of kops' "
        "state store (`S3_ENDPOINT`) are included.",
        "- **kops calls**: the modules' `kops_invocations`.",
        "- **wall**: one whole `ansible-playbook` run (Ansible start-up, module transfer and the module) or one "
        "whole shell script; **task**: the module task alone (from the `ansible.posix.json` callback).",
        "- Kops clusters are gossip clusters (`*.k8s.local`, no DNS server needed): 1 control plane in "
        "us-east-1a, workers in us-east-1a/b, instances `t3.medium`, Kubernetes %s, channel `none`, "
        "run on the emulator with the offline settings of docs/emulator.md." % K8S_FROM,
        "",
    ]
    for name, title, func in (
        ("noop", "1. No-op cost per module", render_noop),
        ("overhead", "2. Overhead over raw kops", render_overhead),
        ("lifecycle", "3. Lifecycle", lambda d: render_lifecycle(d, data)),
        ("inventory", "4. Fleet inventory", render_inventory),
        ("upgrade", "5. Upgrade", lambda d: render_upgrade(d, fmt)),
        ("fleet", "6. Fleet update run", lambda d: render_fleet(d, fmt)),
    ):
        if name in data and "error" in data[name]:
            lines += ["## " + title, "", "This section failed in this run:", "", "```", data[name]["error"], "```", ""]
        elif name in data:
            lines += func(data[name])
    lines += data.get("notes_md", [])
    return "\n".join(lines) + "\n"


SECTION_TITLES = {"noop": "## 1.", "overhead": "## 2.", "lifecycle": "## 3.", "inventory": "## 4.", "upgrade": "## 5.", "fleet": "## 6."}


def merge(previous, current, measured, data):
    """docs/benchmarks.md after a run of some sections: ``previous`` (the file's text) with the sections whose heading
    starts with one of ``measured`` (e.g. ``'## 5.'``) replaced by, or added from, ``current`` (this run's rendering),
    each replaced one under a line naming this run's commit and date; the rest kept as measured before."""

    def blocks(text):
        head, found, name = [], {}, None
        for line in text.splitlines():
            if line.startswith("## "):
                name = line
                found[name] = []
            (found[name] if name else head).append(line)
        return head, found

    old_head, old_blocks = blocks(previous)
    _new_head, new_blocks = blocks(current)
    stamp = "_Measured at commit `%s`, %s, in a run of this section alone._" % (data["commit"]["sha"][:12], data["date"])
    merged = dict(old_blocks)
    for heading, lines in new_blocks.items():
        if heading.startswith(tuple(measured)):
            for old in [h for h in merged if h.startswith(heading[:6])]:
                del merged[old]
            merged[heading] = [lines[0], "", stamp] + lines[1:]
    ordered = sorted(merged.items(), key=lambda item: (not item[0].startswith("## ") or not item[0][3].isdigit(), item[0]))
    return "\n".join(old_head + [line for _h, lines in ordered for line in lines]) + "\n"


def render_noop(noop):
    lines = [
        "## 1. No-op cost per module",
        "",
        "A run identical to the one before (nothing to change): `changed` must be false.",
        "",
        "| module | options | changed | kops calls | AWS requests (module + kops) | wall s (range) | task s | target | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in noop["rows"]:
        target = ", ".join("%s <= %s" % ("AWS requests" if k == "aws_total" else "kops calls", v) for k, v in (r["target"] or {}).items()) or "-"
        lines.append(
            "| %s | %s | %s | %s | %s (%s + %s) | %s (%s) | %s | %s | %s |"
            % (
                r["module"],
                r["note"] or "-",
                "/".join(str(x).lower() for x in r["changed"]),
                fmt(r["kops_calls"], 0),
                fmt(r["aws_total"], 0),
                fmt(r["aws_boto3"], 0),
                fmt(r["aws_kops"], 0),
                fmt(r["seconds"]),
                r["seconds_range"],
                fmt(r["task_seconds"]),
                target,
                ok(r["meets_target"]),
            )
        )
    lines += ["", "kops commands of the last run, and the AWS requests of `route53_subdomain`:", ""]
    for r in noop["rows"]:
        lines.append("- %s (%s): %s" % (r["module"], r["note"] or "-", "; ".join("`kops %s`" % a for a in r["kops_argv"]) or "none"))
    route = noop["rows"][0]
    lines.append("- route53_subdomain requests: %s" % ", ".join("%s x%d" % (k.split(" ", 1)[1], v) for k, v in route["operations"].items()))
    lines += [
        "",
        "For scale: creating the cluster with apply took %s s, %s kops calls and %s AWS requests."
        % (fmt(noop["create_seconds"]), noop["create_kops_calls"], noop["create_aws"]),
        "",
    ]
    return lines


def render_overhead(overhead):
    lines = [
        "## 2. Overhead over raw kops",
        "",
        "The same operation through the module (one `ansible-playbook` run) and as the raw kops commands "
        "of the kOps guide in a shell script, interleaved. Ratio = median module wall / median raw wall. "
        "Each scale row pairs like with like: the module's default plans before it applies, as the guide's "
        "preview (`kops update cluster`) then `--yes` does; with `plan_before_apply: false` it applies "
        'without the dry run, as a script that runs `--yes` alone. Rows "at N ms per AWS request" run '
        "through the counting proxy with that wait added to every AWS request (both sides alike): the "
        "emulator on loopback answers in a few milliseconds, AWS in tens. **Outside kops** is the module "
        "wall minus the time its kops commands ran: Ansible's start-up and task dispatch, Python imports, "
        "the boto3 client and the state-store guard.",
        "",
        "| operation | module | raw | module wall s (range) | raw wall s (range) | ratio | module task / raw | outside kops s | target | met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in overhead["rows"]:
        outside = r["module_seconds"] - r["module_kops_seconds"] if r.get("module_kops_seconds") is not None else None
        lines.append(
            "| %s | %s | %s | %s (%s) | %s (%s) | %s | %s | %s | <= %s | %s |"
            % (
                r["operation"],
                r["module"],
                r["raw"],
                fmt(r["module_seconds"]),
                r["module_range"],
                fmt(r["raw_seconds"]),
                r["raw_range"],
                fmt(r["ratio"], 2),
                fmt(r["task_ratio"], 2),
                fmt(outside),
                r["target"],
                ok(r["ratio"] <= r["target"]),
            )
        )
    lines += [""]
    for r in overhead["rows"]:
        each = r.get("module_kops_each") or [[a, None] for a in r["module_kops_argv"]]
        lines.append(
            "- %s: the module ran %s kops commands (%s), %s s of kops in total; AWS requests module %s, raw %s."
            % (
                r["operation"],
                fmt(r["module_kops_calls"], 0),
                "; ".join("`kops %s`%s" % (a, "" if t is None else " %.1f s" % t) for a, t in each),
                fmt(r["module_kops_seconds"]),
                fmt(r["module_aws"], 0),
                fmt(r["raw_aws"], 0),
            )
        )
    outside = [r["module_seconds"] - r["module_kops_seconds"] for r in overhead["rows"] if r.get("module_kops_seconds")]
    if outside:
        fixed = statistics.median(outside)
        lines += [
            "",
            "With a fixed %.1f s outside kops (median of the rows), a run meets 1.15 once the raw kops work "
            "takes %.0f s or more (fixed / 0.15)." % (fixed, fixed / 0.15),
        ]
    return lines + [""]


def render_lifecycle(lifecycle, data):
    lines = [
        "## 3. Lifecycle",
        "",
        "The kOps guide's steps through the playbooks vs the same steps as a shell script of aws and kops "
        "commands (`bench/raw_lifecycle.sh`, aws CLI v1 for S3 and Route53), against the same emulator. "
        "Gossip row: playbooks create_cluster, scale_cluster, upgrade_cluster and delete_cluster (the roles "
        "state_store, cluster, instancegroups, upgrade) vs the script's `aws s3api` x4, `kops create cluster`, "
        "`kops update cluster --yes`, `kops edit ig` + update, `kops edit cluster` + update + "
        "`kops rolling-update cluster --cloudonly --yes`, `kops delete cluster --yes`; 1 control plane, workers "
        "in us-east-1a/b/c (1/1/0), scale nodes-us-east-1c 0 -> 1, Kubernetes %s -> %s. The playbooks also "
        "preview the upgrade (check-mode plan, PodDisruptionBudget listing) before applying it." % (K8S_FROM, K8S_TO),
        "",
        "| lifecycle | playbooks wall s (range) | script wall s (range) | ratio | kops calls (playbooks) "
        "| AWS requests playbooks (kops) | AWS requests script (kops) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in lifecycle["rows"]:
        lines.append(
            "| %s | %s (%s) | %s (%s) | %s | %s | %s (%s) | %s (%s) |"
            % (
                r["lifecycle"],
                fmt(r["module_seconds"]),
                r["module_range"],
                fmt(r["raw_seconds"]),
                r["raw_range"],
                fmt(r["ratio"], 2),
                fmt(r["module_kops_calls"], 0),
                fmt(r["module_aws"], 0),
                fmt(r["module_aws_kops"], 0),
                fmt(r["raw_aws"], 0),
                fmt(r["raw_aws_kops"], 0),
            )
        )
    lines += [""]
    for r in lifecycle["rows"]:
        lines.append(
            "- %s: kops ran %s s of the playbooks' wall time; slowest tasks: %s."
            % (r["lifecycle"].split(":")[0], fmt(r["module_kops_seconds"]), ", ".join("%s %.1f s" % (n, s) for n, s in r["slowest_tasks"]))
        )
    if not data.get("with_dns"):
        lines += [
            "",
            "The lifecycle with Route53 delegation (playbooks/lifecycle.yml) needs the emulator's DNS face on "
            "127.0.0.1:53; this run did not bind it. `bench/run.py --with-dns --sections lifecycle` adds that row.",
        ]
    if lifecycle.get("dns_error"):
        lines += ["", "The lifecycle with Route53 delegation failed in this run: `%s`" % lifecycle["dns_error"][-400:]]
    return lines + [""]


def render_inventory(inventory):
    lines = [
        "## 4. Fleet inventory",
        "",
        "`bench/inventory.py`: state stores of N clusters (3 InstanceGroups each; one written by the real kops, "
        "cloned), read by the `kopsible.kops.kops` inventory plugin. `in-process`: the plugin's parse in "
        "Python (S3 requests counted with a botocore hook); `ansible-inventory`: `ansible-inventory --list` as "
        "a user runs it. Backends: `moto` is the emulator (one Python process, one request at a time); "
        "`rclone` is `rclone serve s3` (Go, answers in parallel) over a copy of the same stores, behind "
        "tools/fault_proxy.py adding the stated wait to every request (a modelled S3 round trip).",
        "",
        "| backend | clusters | in-process s (min) | S3 requests | ansible-inventory s | workers | in-process, 1 worker s |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend in ("moto", "rclone"):
        mine = [r for r in inventory["rows"] if r.get("backend", "moto") == backend]
        if not mine:
            continue
        main_workers = args_workers(mine)
        label = backend if not mine[0].get("latency_ms") else "%s, %d ms per request" % (backend, mine[0]["latency_ms"])
        by, single = {}, {}
        for r in mine:
            if r.get("workers") == main_workers:
                by.setdefault(r["clusters"], {})[r["mode"]] = r
            elif r["mode"] == "in-process":
                single[r["clusters"]] = r
        for size in sorted(by):
            ip, sp = by[size].get("in-process", {}), by[size].get("subprocess", {})
            lines.append(
                "| %s | %d | %s (%s) | %s | %s | %s | %s |"
                % (
                    label,
                    size,
                    fmt(ip.get("median_s"), 3),
                    fmt(ip.get("min_s"), 3),
                    ip.get("s3_requests", "-"),
                    fmt(sp.get("median_s"), 2),
                    ip.get("workers", "-"),
                    fmt(single.get(size, {}).get("median_s"), 3),
                )
            )
    lines += [
        "",
        "Growth: %s. Target: reads done concurrently, 100 clusters within 2x the time of 10 (in-process): %s."
        % (", ".join("%s = %.2fx" % (k, v) for k, v in inventory["growth"].items()), ok(inventory["meets_target"])),
        "",
    ]
    return lines


def args_workers(rows):
    """The pool size of the main inventory runs (the largest ``workers`` seen; others are comparisons)."""
    return max([r.get("workers") or 0 for r in rows] or [0])


def findings():
    """The "## Findings" part of bench/README.md (profiles, fixes, before/after), for the end of the report."""
    try:
        with open(os.path.join(BENCH, "README.md")) as handle:
            text = handle.read()
    except OSError:
        return []
    return ["", text[text.index("## Findings") :].rstrip()] if "## Findings" in text else []


def loadavg():
    try:
        return "%.1f" % os.getloadavg()[0]
    except OSError:
        return "?"


def guarded(data, name, func, *args):
    """``data[name] = func(*args)``; a failure is recorded as ``{'error': message}`` and the run goes on."""
    try:
        data[name] = func(*args)
    except Exception as exc:  # a failed section must not lose the others' figures
        message = "%s: %s" % (type(exc).__name__, exc)
        log("section %s failed: %s" % (name, message))
        data[name] = {"error": message[-1500:]}


def _terminate(signum, frame):
    raise SystemExit("bench: terminated")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions per figure (median reported)")
    parser.add_argument("--lifecycle-runs", type=int, default=2, help="repetitions of each lifecycle side")
    parser.add_argument("--upgrade-runs", type=int, default=2, help="repetitions of each upgrade side (about 5 minutes each)")
    parser.add_argument("--upgrade-multi-runs", type=int, default=1, help="repetitions of each side of the three-minor upgrade (about 10 minutes each; 0: not)")
    parser.add_argument("--sections", default="noop,overhead,lifecycle,inventory")
    parser.add_argument("--inventory-sizes", default="1,10,100,500")
    parser.add_argument(
        "--inventory-latency-ms",
        type=float,
        default=50.0,
        help="inventory section: also read the stores from rclone serve s3 with this wait per request (0: not)",
    )
    parser.add_argument("--latency-ms", type=float, default=50.0, help="overhead section: also scale with this modelled AWS round trip per request (0: not)")
    parser.add_argument("--inventory-subprocess-runs", type=int, default=1)
    parser.add_argument("--fleet-clusters", type=int, default=6, help="fleet section: clusters in the fleet update run")
    parser.add_argument("--fleet-concurrency", type=int, default=2, help="fleet section: clusters per stage (the first stage is the canary)")
    parser.add_argument(
        "--with-dns",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also the lifecycle with Route53 delegation (binds 127.0.0.1:53; make bench passes it)",
    )
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--json", default=os.path.join(ROOT, "out", "bench.json"))
    parser.add_argument("--render-only", action="store_true", help="measure nothing: rewrite --out from --json (e.g. after editing bench/README.md's findings)")
    args = parser.parse_args(argv)
    if args.render_only:
        with open(args.json) as handle:
            data = json.load(handle)
        data["notes_md"] = findings()
        with open(args.out, "w") as handle:
            handle.write(render(data))
        return 0
    signal.signal(signal.SIGTERM, _terminate)  # stop the emulator and the proxy on kill, too
    sections = args.sections.split(",")
    os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".cache", "collections")
    data = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "runs": args.runs,
        "lifecycle_runs": args.lifecycle_runs,
        "with_dns": args.with_dns,
        "load_start": loadavg(),
    }
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kopsible-bench-") as tmp:
        bench = Bench(args, tmp)
        try:
            if set(sections) & {"noop", "overhead", "lifecycle", "upgrade", "fleet"}:
                bench.start()
                log("emulator %s, counting proxy %s" % (bench.emulator.url, bench.proxy.url))
            if "noop" in sections or "overhead" in sections:
                guarded(data, "noop", section_noop, bench, args.runs)  # also creates the cluster section 2 scales
            if "overhead" in sections and "error" not in data.get("noop", {}):
                guarded(data, "overhead", section_overhead, bench, args.runs)
            if "lifecycle" in sections:
                guarded(data, "lifecycle", section_lifecycle, bench, args.lifecycle_runs)
            if "upgrade" in sections:
                from upgrade import section_upgrade

                guarded(
                    data,
                    "upgrade",
                    section_upgrade,
                    bench,
                    args.upgrade_runs,
                    PARENT,
                    log,
                    interleaved,
                    median,
                    spread,
                    task_seconds,
                    "127.0.0.1",
                    args.upgrade_multi_runs,
                )
            if "fleet" in sections:  # last: it empties the emulator for each of its runs
                guarded(data, "fleet", section_fleet, bench, log, args.fleet_clusters, args.fleet_concurrency, args.latency_ms)
        finally:
            bench.stop()
    if "inventory" in sections:
        guarded(data, "inventory", section_inventory, args)
    data["total_seconds"] = round(time.perf_counter() - start, 1)
    data["load_end"] = loadavg()
    data["notes_md"] = findings()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as handle:
        json.dump(data, handle, indent=1, default=lambda o: None)
    text = render(data)
    if set(SECTION_TITLES) - set(sections) and os.path.exists(args.out):
        with open(args.out) as handle:
            text = merge(handle.read(), text, [SECTION_TITLES[n] for n in sections if n in SECTION_TITLES], data)
    with open(args.out, "w") as handle:
        handle.write(text)
    log("wrote %s and %s (%.0f s)" % (os.path.relpath(args.out, ROOT), os.path.relpath(args.json, ROOT), data["total_seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
