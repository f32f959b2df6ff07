"""Section 5 of `make bench`: the upgrade role against kops' own ``kops reconcile cluster --yes`` (issue 35).

Each run makes a fresh HA cluster (3 control-plane nodes in us-east-1a/b/c, 2 workers, Route53 DNS in a delegated
subdomain) on the emulator with the kube world running (real control plane, node agent), exports its admin
kubeconfig, and then, measured, upgrades it to 1.35.0 in one of two ways:

- **role**: ``kopsible.kops.upgrade`` with the kubeconfig (its pre-flight: validation, the plan, the etcd backup check,
  the control plane's cloud plan in check mode, the PodDisruptionBudget check; then per hop the control plane applied
  and rolled, the workers applied and rolled once, the prune, the final validation and the node check), every
  rolling-update setting at the role's defaults, which are kops' defaults;
- **kops**: what a person types, per version: ``kops edit cluster --set spec.kubernetesVersion=V`` then
  ``kops reconcile cluster --yes`` with the same kubeconfig (kops' 1.31+ order in one command, one minor at a time).

Two comparisons: one minor version (1.34.1 -> 1.35.0, ``runs`` each) and three (1.32.13 -> 1.33.12 -> 1.34.1 ->
1.35.0, ``multi_runs`` each; the role gets the same versions as ``upgrade_hop_versions``). Both sides run interleaved
(role, kops; kops, role; ...) and both end with every Node's kubelet at v1.35.0, read from the cluster's API (a run
that does not is an error). Measured per side: wall seconds, kops calls (the role's ``kops_invocations``), AWS
requests by client (the counting proxy), instances launched by role (the replacements, read from EC2), and for the
role the seconds of each phase and of each task with its kops calls (from the task timings). The cluster is deleted
after each run (not measured)."""

import os
import subprocess
import time

from harness.kops_env import KopsDNS, module_options
from harness.kubeworld_runner import KubeWorldProcess, prefix_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBDOMAIN = "upgrade.example.org"
FROM, TO = "1.34.1", "1.35.0"
# the phase of a task of roles/upgrade, from its name (the role names its tasks by step, and the tasks of a roll end
# with the phase: "... - control plane to 1.35.0", "... - workers")
PHASES = (
    ("pre-flight", ("Pre-flight",), ()),
    ("control plane", ("Control plane", "Hook - after the control plane"), (" - control plane to ",)),
    ("workers", ("Workers", "Then the workers", "Hook - after the workers"), (" - workers",)),
    ("cluster-autoscaler", ("Cluster-autoscaler",), ()),
    ("prune", ("Prune",), ()),
    ("final validation", ("Validate the upgraded", "Verify"), ()),
)


def phase_of(task):
    """The phase of a task of the upgrade role (its name without the role prefix), or ``other``."""
    name = task.split(" : ", 1)[-1]
    for phase, prefixes, infixes in PHASES:
        if name.startswith(prefixes) or any(infix in name for infix in infixes):
            return phase
    return "other"


def task_detail(timings, results):
    """One dict per timed task of a role run, in order: ``task``, ``seconds``, ``phase`` and ``kops`` (one ``[the kops
    command's first two words, seconds]`` per kops call of the task's results, loop items included)."""
    calls = {}
    for name, result in results:
        for item in result.get("results") or [result]:
            for call in (item.get("kops_invocations") or []) if isinstance(item, dict) else []:
                argv = [a for a in call.get("argv", [])[1:] if not a.startswith("-") and "." not in a and "/" not in a][:2]
                calls.setdefault(name, []).append([" ".join(argv), round(call.get("seconds", 0), 2)])
    detail = []
    for name, seconds in timings:
        detail.append({"task": name.split(" : ", 1)[-1], "seconds": seconds, "phase": phase_of(name), "kops": calls.pop(name, [])})
    return detail


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


# the three-minor plan: the role's hops (upgrade_hop_versions) are the versions kops is given one by one
MULTI_FROM, MULTI_HOPS = "1.32.13", ("1.33.12", "1.34.1")


def replacements(emulator, name):
    """``{'control-plane': n, 'node': n}``: instances of cluster ``name`` ever launched, terminated ones included (AWS
    lists a terminated instance for about an hour; the emulator keeps it), by kops' role tag."""
    found = {"control-plane": 0, "node": 0}
    pages = emulator.client("ec2").get_paginator("describe_instances").paginate(Filters=[{"Name": "tag:KubernetesCluster", "Values": [name]}])
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                keys = {t["Key"] for t in instance.get("Tags", [])}
                for role in found:
                    if "k8s.io/role/" + role in keys:
                        found[role] += 1
    return found


def section_upgrade(bench, runs, parent, log, interleaved, median, spread, task_seconds, dns_address="127.0.0.1", multi_runs=1):
    """Measure both sides ``runs`` times each on ``bench`` (bench/run.py's Bench, started) for one minor version, then
    ``multi_runs`` times each for three (0: not); returns the section's data. Binds ``dns_address``:53 for the
    emulator's DNS face (the clusters' API records)."""
    delegate(bench.emulator, parent)
    world_box = {}
    with KopsDNS(bench.emulator, address=dns_address, names=lambda: world_box["world"].names() if "world" in world_box else {}) as dns:
        world = world_box["world"] = KubeWorldProcess(bench.emulator, prefix_for(dns.address)).start()
        kops = dict(module_options(dns), state_store=bench.kops["state_store"])
        try:

            def make(name, kubeconfig, version):
                options = bench.cluster_options(
                    name,
                    zones=["us-east-1a", "us-east-1b", "us-east-1c"],
                    control_plane_zones=["us-east-1a", "us-east-1b", "us-east-1c"],
                    dns_zone=SUBDOMAIN,
                    kubernetes_version=version,
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

            def fresh(side, i, version):
                """A new cluster at ``version`` for run ``i`` of ``side``; returns (its name, its kubeconfig's path)."""
                name = "%s%d.%s" % (side, i, SUBDOMAIN)
                kubeconfig = os.path.join(bench.tmp, "kubeconfig-" + name)
                log("upgrade: %s run %d: creating %s at %s" % (side, i + 1, name, version))
                make(name, kubeconfig, version)
                return name, kubeconfig

            def role_side(version, hops, tag):
                def side(i):
                    name, kubeconfig = fresh(tag + "r", i, version)
                    log("upgrade: role run %d: upgrading %s -> %s" % (i + 1, version, TO))
                    role_vars = {
                        "upgrade_cluster": name,
                        "upgrade_kubernetes_version": TO,
                        "upgrade_hop_versions": list(hops),
                        "upgrade_kubeconfig": kubeconfig,
                        "upgrade_diagnostics": False,
                    }
                    tasks = [{"name": "upgrade", "ansible.builtin.include_role": {"name": "kopsible.kops.upgrade"}, "vars": role_vars}]
                    before = replacements(bench.emulator, name)
                    bench.counter.reset()
                    started = time.perf_counter()
                    from harness.playbook import run_playbook

                    run = run_playbook(tasks, emulator=bench.proxied, kops=kops, resolv_conf=dns.resolv_conf)
                    seconds = time.perf_counter() - started
                    aws = bench.counter.snapshot()
                    if run.failed:
                        raise RuntimeError("the upgrade role failed on %s: %s" % (name, [(n, r.get("msg")) for n, r in run.results if r.get("failed")]))
                    check(name, "the upgrade role")
                    after = replacements(bench.emulator, name)
                    phases = {}
                    timings = task_seconds(run.stdout)
                    for task, task_s in timings:
                        phases[phase_of(task)] = round(phases.get(phase_of(task), 0.0) + task_s, 3)
                    kops_calls = sum(len(r.get("kops_invocations") or []) for _, r in run.results)
                    kops_seconds = sum(sum(c.get("seconds", 0) for c in r.get("kops_invocations") or []) for _, r in run.results)
                    remove(name)
                    return {
                        "seconds": round(seconds, 3),
                        "aws": aws,
                        "kops_calls": kops_calls,
                        "kops_seconds": round(kops_seconds, 3),
                        "phases": phases,
                        "replaced": {role: after[role] - before[role] for role in after},
                        "tasks": task_detail(timings, run.results),
                    }

                return side

            def kops_side(version, hops, tag):
                def side(i):
                    name, kubeconfig = fresh(tag + "k", i, version)
                    steps_of = [v for hop in list(hops) + [TO] for v in (("edit " + hop, hop), ("reconcile " + hop, None))]
                    log("upgrade: kops run %d: kops edit cluster --set + kops reconcile cluster --yes, %s" % (i + 1, " then ".join(list(hops) + [TO])))
                    env = bench.script_env(extra=dict(kops["kops_env"], KUBECONFIG=kubeconfig))
                    before = replacements(bench.emulator, name)
                    bench.counter.reset()
                    started = time.perf_counter()
                    steps = {}
                    for label, target in steps_of:
                        if target:
                            argv = ["edit", "cluster", "--name", name, "--set", "spec.kubernetesVersion=" + target]
                        else:
                            argv = ["reconcile", "cluster", "--name", name, "--yes"]
                        step_started = time.perf_counter()
                        proc = subprocess.run([kops["kops_binary"]] + argv, env=env, capture_output=True, text=True, timeout=3600)
                        steps[label] = round(time.perf_counter() - step_started, 3)
                        if proc.returncode != 0:
                            raise RuntimeError("kops %s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr[-2000:]))
                    seconds = time.perf_counter() - started
                    aws = bench.counter.snapshot()
                    check(name, "kops reconcile cluster")
                    after = replacements(bench.emulator, name)
                    remove(name)
                    return {
                        "seconds": round(seconds, 3),
                        "aws": aws,
                        "kops_calls": len(steps),
                        "steps": steps,
                        "replaced": {role: after[role] - before[role] for role in after},
                    }

                return side

            def compare(version, hops, tag, count):
                log("upgrade: the upgrade role vs kops reconcile cluster, %s -> %s, HA cluster, %d runs each" % (version, TO, count))
                role_runs, kops_runs = interleaved(count, role_side(version, hops, tag), kops_side(version, hops, tag))
                return summary(version, hops, role_runs, kops_runs, median, spread)

            data = compare(FROM, (), "", runs)
            if multi_runs:
                data["multi"] = compare(MULTI_FROM, MULTI_HOPS, "m", multi_runs)
        finally:
            world.stop()
    return data


def summary(version, hops, role_runs, kops_runs, median, spread):
    """The figures of one comparison (medians, ranges, phases, calls, requests, replacements) and its runs."""
    role_s, kops_s = median([r["seconds"] for r in role_runs]), median([r["seconds"] for r in kops_runs])
    phases = sorted({p for r in role_runs for p in r["phases"]})
    return {
        "runs": len(role_runs),
        "from": version,
        "to": TO,
        "hops": list(hops) + [TO],
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
        "kops_calls": median([r["kops_calls"] for r in kops_runs]),
        "role_replaced": {role: median([r["replaced"][role] for r in role_runs]) for role in ("control-plane", "node")},
        "kops_replaced": {role: median([r["replaced"][role] for r in kops_runs]) for role in ("control-plane", "node")},
        "kops_steps": {s: median([r["steps"][s] for r in kops_runs]) for s in kops_runs[0]["steps"]},
        "role_runs": role_runs,
        "kops_runs": kops_runs,
    }


def _costs(run, phases, fmt):
    """``'task s (kops: command s, ...)'`` for each task of ``run`` in ``phases`` that took 0.5 s or more."""
    lines = []
    for task in run.get("tasks", []):
        if task["phase"] in phases and task["seconds"] >= 0.5:
            kops = ", ".join("`kops %s` %s" % (argv, fmt(s)) for argv, s in task["kops"])
            lines.append("%s %s s%s" % (task["task"].split(" (")[0], fmt(task["seconds"]), " (%s)" % kops if kops else ""))
    return "; ".join(lines)


def _ratio(part, fmt):
    """``'ratio role / kops **R** (N runs each, interleaved); the role's phases (task seconds, median): ...'``."""
    runs = "%d run%s each" % (part["runs"], "" if part["runs"] == 1 else "s")
    phases = ", ".join("%s %s s" % (p, fmt(s)) for p, s in part["role_phases"].items())
    return "ratio role / kops **%s** (%s, interleaved); the role's phases (task seconds, median): %s" % (fmt(part["ratio"], 2), runs, phases)


def render_upgrade(data, fmt):
    """The section's Markdown lines (list of str) from :func:`section_upgrade`'s data."""
    multi = data.get("multi")
    lines = [
        "## 5. Upgrade: the role beside kops reconcile cluster",
        "",
        "An HA cluster (3 control-plane nodes, 2 workers, Route53 DNS) upgraded with a real control plane behind it (the "
        "kube world: validation, cordon and drain for real), made fresh for each run. **role**: `kopsible.kops.upgrade` "
        "with the admin kubeconfig, every setting at its default (kops' rolling-update defaults); **kops**: per version, "
        "`kops edit cluster --set spec.kubernetesVersion=V` then `kops reconcile cluster --yes` with the same kubeconfig "
        "(reconcile takes one minor version at a time). Both end with every kubelet at v%s, read from the API; "
        "replacements are the instances launched during the run (read from EC2, terminated ones included)." % data["to"],
        "",
        "| upgrade | side | wall s (range) | kops calls | AWS requests (kops) | replaced: control plane, workers |",
        "|---|---|---|---|---|---|",
    ]
    for part in [data] + ([multi] if multi else []):
        what = "%s -> %s (%s)" % (part["from"], part["to"], ", ".join(part.get("hops") or [part["to"]]))
        role_replaced = part.get("role_replaced") or {}
        kops_replaced = part.get("kops_replaced") or {}
        lines.append(
            "| %s | role | %s (%s) | %s | %s (%s) | %s, %s |"
            % (
                what,
                fmt(part["role_seconds"]),
                part["role_range"],
                fmt(part["role_kops_calls"], 0),
                fmt(part["role_aws"], 0),
                fmt(part["role_aws_kops"], 0),
                role_replaced.get("control-plane", "-"),
                role_replaced.get("node", "-"),
            )
        )
        lines.append(
            "| %s | kops edit + reconcile | %s (%s) | %s | %s | %s, %s |"
            % (
                what,
                fmt(part["kops_seconds"]),
                part["kops_range"],
                fmt(part.get("kops_calls", 2), 0),
                fmt(part["kops_aws"], 0),
                kops_replaced.get("control-plane", "-"),
                kops_replaced.get("node", "-"),
            )
        )
    lines += [
        "",
        "One minor version (target: 1.10 or less): %s. kops ran %s s of the role's wall time; kops' own side: %s."
        % (_ratio(data, fmt), fmt(data["role_kops_run_seconds"]), ", ".join("%s %s s" % (step, fmt(s)) for step, s in data["kops_steps"].items())),
        "",
    ]
    if data.get("role_runs") and data["role_runs"][0].get("tasks"):
        first = data["role_runs"][0]
        lines += [
            "What the role's own checks and steps cost in its first run (tasks of 0.5 s or more): pre-flight: %s. "
            "Outside the rolls: %s." % (_costs(first, ("pre-flight",), fmt), _costs(first, ("prune", "final validation", "cluster-autoscaler"), fmt)),
            "",
        ]
    if multi:
        lines += [
            "Three minor versions: %s. The role rolls the control plane once per hop and the workers once; chained "
            "reconcile runs roll both every time." % _ratio(multi, fmt),
            "",
        ]
    return lines
