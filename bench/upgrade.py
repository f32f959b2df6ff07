"""Section 5 of `make bench`: the upgrade role against kops' own ``kops reconcile cluster --yes`` (issue 35).

Each run makes a fresh HA cluster (3 control-plane nodes in us-east-1a/b/c, 2 workers, Route53 DNS in a delegated
subdomain, Kubernetes 1.34.1) on the emulator with the kube world running (real control plane, node agent), exports
its admin kubeconfig, and then, measured, upgrades it to 1.35.0 in one of two ways:

- **role**: ``kopsible.kops.upgrade`` with the kubeconfig (its pre-flight: validation, the plan, the etcd backup check,
  the control plane's cloud plan in check mode, the PodDisruptionBudget check; then the control plane applied and
  rolled, the workers applied and rolled, the prune, the final validation and the node check), every rolling-update
  setting at the role's defaults, which are kops' defaults;
- **kops**: what a person types: ``kops edit cluster --set spec.kubernetesVersion=1.35.0`` then
  ``kops reconcile cluster --yes`` with the same kubeconfig (kops' 1.31+ order in one command).

Both sides run interleaved (role, kops; kops, role; ...) and both end with every Node's kubelet at v1.35.0, read from
the cluster's API (a run that does not is an error). Measured per side: wall seconds, kops calls (the role's
``kops_invocations``; the kops side makes two), AWS requests by client (the counting proxy), and for the role the
seconds of each phase (from the task timings: pre-flight, control plane, workers, prune, final validation).
The cluster is deleted after each run (not measured).
"""

import os
import subprocess
import time

from harness.kops_env import KopsDNS, module_options
from harness.kubeworld_runner import KubeWorldProcess, prefix_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBDOMAIN = "upgrade.example.org"
FROM, TO = "1.34.1", "1.35.0"
# task name prefixes of roles/upgrade -> the phase they belong to (the role names its tasks by step)
PHASES = (
    ("pre-flight", ("Pre-flight",)),
    ("control plane", ("Hop ", "Rolling update - control plane", "Pause the cluster-autoscaler - control plane", "After the control plane")),
    ("workers", ("Workers", "Rolling update - workers", "After the workers")),
    ("prune", ("Prune",)),
    ("final validation", ("Validate the upgraded", "Verify")),
)


def phase_of(task):
    """The phase of a task of the upgrade role (its name without the role prefix), or ``other``."""
    name = task.split(" : ", 1)[-1]
    for phase, prefixes in PHASES:
        if name.startswith(prefixes):
            return phase
    return "other"


def delegate(emulator, parent):
    """The subdomain's hosted zone with its NS records in ``parent``'s zone (the emulator's)."""
    r53 = emulator.client("route53")
    parent_id = next(z["Id"] for z in r53.list_hosted_zones()["HostedZones"] if z["Name"] == parent + ".")
    child = r53.create_hosted_zone(Name=SUBDOMAIN + ".", CallerReference="bench-upgrade")
    record = {"Name": SUBDOMAIN + ".", "Type": "NS", "TTL": 300, "ResourceRecords": [{"Value": v} for v in child["DelegationSet"]["NameServers"]]}
    r53.change_resource_record_sets(HostedZoneId=parent_id, ChangeBatch={"Changes": [{"Action": "UPSERT", "ResourceRecordSet": record}]})


def kubelets(world, name):
    """Sorted kubelet versions of the cluster's Nodes, read from its API."""
    return sorted(n.status.node_info.kubelet_version for n in world.core(name).list_node().items)


def section_upgrade(bench, runs, parent, log, interleaved, median, spread, task_seconds, dns_address="127.0.0.1"):
    """Measure both sides ``runs`` times each on ``bench`` (bench/run.py's Bench, started); returns the section's data.
    Binds ``dns_address``:53 for the emulator's DNS face (the clusters' API records)."""
    delegate(bench.emulator, parent)
    world_box = {}
    with KopsDNS(bench.emulator, address=dns_address, names=lambda: world_box["world"].names() if "world" in world_box else {}) as dns:
        world = world_box["world"] = KubeWorldProcess(bench.emulator, prefix_for(dns.address)).start()
        kops = dict(module_options(dns), state_store=bench.kops["state_store"])
        try:

            def make(name, kubeconfig):
                options = bench.cluster_options(
                    name,
                    zones=["us-east-1a", "us-east-1b", "us-east-1c"],
                    control_plane_zones=["us-east-1a", "us-east-1b", "us-east-1c"],
                    dns_zone=SUBDOMAIN,
                    kubernetes_version=FROM,
                )
                tasks = [
                    {"name": "create", "kopsible.kops.kops_cluster": options},
                    {"name": "kubeconfig", "kopsible.kops.kops_cluster": {"name": name, "export_kubeconfig": True, "kubeconfig": kubeconfig}},
                ]
                from harness.playbook import run_playbook

                run = run_playbook(tasks, emulator=bench.emulator, kops=kops, resolv_conf=dns.resolv_conf)
                if run.failed:
                    raise RuntimeError("creating %s failed: %s" % (name, [(n, r.get("msg")) for n, r in run.results if r.get("failed")]))
                world.wait_cluster(name, timeout=240, nodes=5)

            def remove(name):
                env = bench.script_env(extra=dict(kops["kops_env"]))
                subprocess.run([kops["kops_binary"], "delete", "cluster", "--name", name, "--yes"], env=env, capture_output=True, timeout=900, check=False)

            def check(name, who):
                found = kubelets(world, name)
                if found != ["v" + TO] * 5:
                    raise RuntimeError("%s left kubelets %s on %s" % (who, found, name))

            def fresh(side, i):
                """A new cluster for run ``i`` of ``side`` ('role' or 'kops'); returns (its name, its kubeconfig's path)."""
                name = "%s%d.%s" % (side[0], i, SUBDOMAIN)
                kubeconfig = os.path.join(bench.tmp, "kubeconfig-" + name)
                log("upgrade: %s run %d: creating %s" % (side, i + 1, name))
                make(name, kubeconfig)
                return name, kubeconfig

            def role_side(i):
                name, kubeconfig = fresh("role", i)
                log("upgrade: role run %d: upgrading" % (i + 1))
                role_vars = {"upgrade_cluster": name, "upgrade_kubernetes_version": TO, "upgrade_kubeconfig": kubeconfig, "upgrade_diagnostics": False}
                tasks = [{"name": "upgrade", "ansible.builtin.include_role": {"name": "kopsible.kops.upgrade"}, "vars": role_vars}]
                bench.counter.reset()
                started = time.perf_counter()
                from harness.playbook import run_playbook

                run = run_playbook(tasks, emulator=bench.proxied, kops=kops, resolv_conf=dns.resolv_conf)
                seconds = time.perf_counter() - started
                aws = bench.counter.snapshot()
                if run.failed:
                    raise RuntimeError("the upgrade role failed on %s: %s" % (name, [(n, r.get("msg")) for n, r in run.results if r.get("failed")]))
                check(name, "the upgrade role")
                phases = {}
                for task, task_s in task_seconds(run.stdout):
                    phases[phase_of(task)] = round(phases.get(phase_of(task), 0.0) + task_s, 3)
                kops_calls = sum(len(r.get("kops_invocations") or []) for _, r in run.results)
                kops_seconds = sum(sum(c.get("seconds", 0) for c in r.get("kops_invocations") or []) for _, r in run.results)
                remove(name)
                return {"seconds": round(seconds, 3), "aws": aws, "kops_calls": kops_calls, "kops_seconds": round(kops_seconds, 3), "phases": phases}

            def kops_side(i):
                name, kubeconfig = fresh("kops", i)
                log("upgrade: kops run %d: kops edit cluster --set + kops reconcile cluster --yes" % (i + 1))
                env = bench.script_env(extra=dict(kops["kops_env"], KUBECONFIG=kubeconfig))
                bench.counter.reset()
                started = time.perf_counter()
                steps = {}
                for label, argv in (
                    ("edit", ["edit", "cluster", "--name", name, "--set", "spec.kubernetesVersion=" + TO]),
                    ("reconcile", ["reconcile", "cluster", "--name", name, "--yes"]),
                ):
                    step_started = time.perf_counter()
                    proc = subprocess.run([kops["kops_binary"]] + argv, env=env, capture_output=True, text=True, timeout=3600)
                    steps[label] = round(time.perf_counter() - step_started, 3)
                    if proc.returncode != 0:
                        raise RuntimeError("kops %s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr[-2000:]))
                seconds = time.perf_counter() - started
                aws = bench.counter.snapshot()
                check(name, "kops reconcile cluster")
                remove(name)
                return {"seconds": round(seconds, 3), "aws": aws, "kops_calls": 2, "steps": steps}

            log("upgrade: the upgrade role vs kops reconcile cluster, %s -> %s, HA cluster, %d runs each" % (FROM, TO, runs))
            role_runs, kops_runs = interleaved(runs, role_side, kops_side)
        finally:
            world.stop()
    role_s, kops_s = median([r["seconds"] for r in role_runs]), median([r["seconds"] for r in kops_runs])
    phases = sorted({p for r in role_runs for p in r["phases"]})
    return {
        "runs": runs,
        "from": FROM,
        "to": TO,
        "role_seconds": role_s,
        "kops_seconds": kops_s,
        "role_range": spread([r["seconds"] for r in role_runs]),
        "kops_range": spread([r["seconds"] for r in kops_runs]),
        "ratio": round(role_s / kops_s, 3),
        "role_phases": {p: median([r["phases"].get(p, 0.0) for r in role_runs]) for p in phases},
        "role_kops_calls": median([r["kops_calls"] for r in role_runs]),
        "role_kops_run_seconds": median([r["kops_seconds"] for r in role_runs]),
        "role_aws": median([r["aws"]["total"] for r in role_runs]),
        "role_aws_kops": median([r["aws"]["kops"] for r in role_runs]),
        "role_aws_boto3": median([r["aws"]["boto3"] for r in role_runs]),
        "kops_aws": median([r["aws"]["total"] for r in kops_runs]),
        "kops_steps": {s: median([r["steps"][s] for r in kops_runs]) for s in ("edit", "reconcile")},
        "role_runs": role_runs,
        "kops_runs": kops_runs,
    }


def render_upgrade(data, fmt):
    """The section's Markdown lines (list of str) from :func:`section_upgrade`'s data."""
    lines = [
        "## 5. Upgrade: the role beside kops reconcile cluster",
        "",
        "An HA cluster (3 control-plane nodes, 2 workers, Route53 DNS) at %s upgraded to %s with a real control plane "
        "behind it (the kube world: validation, cordon and drain for real), made fresh for each run. **role**: "
        "`kopsible.kops.upgrade` with the admin kubeconfig, every setting at its default (kops' rolling-update "
        "defaults); **kops**: `kops edit cluster --set spec.kubernetesVersion=%s` then `kops reconcile cluster --yes` "
        "with the same kubeconfig. Both end with every kubelet at v%s, read from the API." % (data["from"], data["to"], data["to"], data["to"]),
        "",
        "| side | wall s (range) | kops calls | AWS requests (kops) |",
        "|---|---|---|---|",
        "| role | %s (%s) | %s | %s (%s) |"
        % (fmt(data["role_seconds"]), data["role_range"], fmt(data["role_kops_calls"], 0), fmt(data["role_aws"], 0), fmt(data["role_aws_kops"], 0)),
        "| kops edit + reconcile | %s (%s) | 2 | %s |" % (fmt(data["kops_seconds"]), data["kops_range"], fmt(data["kops_aws"], 0)),
        "",
        "Ratio role / kops: **%s** (%d run%s each, interleaved). The role's phases (task seconds, median): %s. "
        "kops ran %s s of the role's wall time; kops' own side: edit %s s, reconcile %s s."
        % (
            fmt(data["ratio"], 2),
            data["runs"],
            "" if data["runs"] == 1 else "s",
            ", ".join("%s %s s" % (p, fmt(s)) for p, s in data["role_phases"].items()),
            fmt(data["role_kops_run_seconds"]),
            fmt(data["kops_steps"]["edit"]),
            fmt(data["kops_steps"]["reconcile"]),
        ),
        "",
    ]
    return lines
