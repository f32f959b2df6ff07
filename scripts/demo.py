#!/usr/bin/env python3
"""`make demo`: the kOps guide's lifecycle on the local AWS emulator with the real kops binary.

Starts the emulator (a moto server on loopback) and its DNS face, creates example.org as the parent
zone a user already has, and runs playbooks/lifecycle.yml against it exactly as against AWS with
examples/vars/us-east-1-ha.yml: only the endpoint, test credentials and the kops offline settings
(tools/harness/kops_env.py) differ. Then prints what each step did, read back from the results.
"""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from harness.kops_env import lifecycle_overrides  # noqa: E402
from harness.local_world import LocalWorld  # noqa: E402
from harness.playbook import run_playbook  # noqa: E402
from harness.ports import AddressTaken  # noqa: E402

PARENT = "example.org"
VARS_FILE = os.path.join(ROOT, "examples", "vars", "us-east-1-ha.yml")


def ssh_key():
    path = os.path.join(ROOT, ".cache", "demo", "id_rsa")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", path], check=True)
    with open(path + ".pub") as handle:
        return handle.read().strip()


def task(run, suffix):
    """The result of the first task whose name ends with ``suffix``, or whose own name (after the role's
    ``ROLE : ``) begins with it (a task name that gained a parenthesis still matches)."""
    for name, result in run.results:
        if name.endswith(suffix) or name.split(" : ", 1)[-1].startswith(suffix):
            return result
    return {}


def main(argv=None):
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dns-address",
        default=os.environ.get("DEMO_DNS", "127.0.0.1"),
        help="loopback address of the emulator's DNS face, port 53 (default 127.0.0.1; env DEMO_DNS)",
    )
    args = parser.parse_args(argv)
    kubeconfig = os.path.join(ROOT, ".cache", "demo", "kubeconfig")
    if os.path.exists(kubeconfig):
        os.unlink(kubeconfig)
    local = LocalWorld(
        args.dns_address,
        hint="Stop it (a `make sandbox` is stopped with `make sandbox-stop`), or run the demo on another loopback address: make demo DEMO_DNS=127.0.0.2",
    )
    try:
        local.start()
    except AddressTaken as exc:
        raise SystemExit("demo: refused: %s" % exc) from exc
    try:
        print("emulator: %s (moto server, patched where kops needs AWS behaviour: docs/emulator.md)" % local.emulator.url)
        print("DNS: %s:53 answers from the emulator's Route53 (kops resolves its zone's NS records)" % local.dns.address)
        print(
            "Kubernetes: each applied cluster gets a real control plane on %s.N:443 (etcd, kube-apiserver, "
            "kube-controller-manager, kube-scheduler v1.35.4) and a node agent for its instances; logs in %s"
            % (local.world.prefix, os.path.relpath(local.world.state_dir, ROOT))
        )
        run, example, elapsed = lifecycle(local, kubeconfig, yaml)
    finally:
        local.stop()
    print("\ndemo: done in %.0fs (emulator and control planes stopped)" % elapsed)


def zone_lines(record):
    """A record as zone-file text (list of str, one line per value: ``NAME. TTL IN TYPE VALUE``), from a route53_info
    record set (snake_case: ``name``, ``ttl``, ``resource_records`` [{``value``}], ``alias_target``) or a
    kops_cluster ``dns_records_left`` item (``name``, ``ttl``, ``values``). An alias has no TTL or value of its own in
    a zone file; it is shown as a comment naming its target, as Route 53's console export does."""
    name = record["name"].rstrip(".") + "."
    alias = record.get("alias_target") or {}
    values = [v["value"] if isinstance(v, dict) else v for v in record.get("resource_records") or record.get("values") or []]
    if alias or any(str(v).startswith("ALIAS ") for v in values):
        target = alias.get("dns_name") or str(values[0])[len("ALIAS ") :]
        return ["%s IN %s ; alias to %s" % (name, record["type"], target.rstrip(".") + ".")]
    return ["%s %s IN %s %s" % (name, record.get("ttl"), record["type"], value) for value in values]


def upgrade_line(report, roll):
    """The upgrade's summary line, from the upgrade role's report (its ``msg``) and ``upgrade_roll``."""
    return "%s in %d hop(s) (%s): %d control-plane roll(s), %d worker roll(s), %d groups rolled%s" % (
        report.get("version"),
        len(report.get("hops") or []),
        ", ".join(report.get("hops") or []) or "none",
        int(report.get("control_plane_rolls") or 0),
        int(report.get("worker_rolls") or 0),
        len(roll.get("replaced", {})),
        "" if not roll.get("rolled") else ", drained for real in %.0fs" % (roll.get("roll_seconds") or 0),
    )


def phase_lines(phases, roles):
    """One line per phase of the upgrade role's report: its groups, seconds and the kubelets of the control plane and
    of the workers after it (``roles``: node name -> ``control-plane`` or ``node``)."""
    lines = []
    for phase in phases or []:
        kubelets = phase.get("kubelets") or {}
        by_role = {}
        for node, version in kubelets.items():
            by_role.setdefault(roles.get(node, "node"), set()).add(version)
        lines.append(
            "   phase %-26s %d group(s) in %.0fs; kubelets after it: control plane %s, workers %s"
            % (
                phase["phase"] + ":",
                len(phase.get("groups") or []),
                float(phase.get("seconds") or 0),
                ", ".join(sorted(by_role.get("control-plane", []))) or "?",
                ", ".join(sorted(by_role.get("node", []))) or "?",
            )
        )
    return lines


def lifecycle(local, kubeconfig, yaml):
    """Create the parent zone and run playbooks/lifecycle.yml in ``local`` (a started LocalWorld); returns
    (run, example vars, seconds)."""
    emu, dns, world = local.emulator, local.dns, local.world
    with open(VARS_FILE) as handle:
        example = yaml.safe_load(handle)
    local.create_parent_zone(PARENT)
    print("parent zone %s created (the zone a user already has)\n" % PARENT)

    extra = lifecycle_overrides(dns, ssh_key(), kubeconfig=kubeconfig)
    start = time.monotonic()
    print("running playbooks/lifecycle.yml -e @examples/vars/us-east-1-ha.yml (each task's result as it ends; the summary follows) ...", flush=True)
    run = run_playbook(
        playbook=os.path.join(ROOT, "playbooks", "lifecycle.yml"),
        emulator=emu,
        extra_vars=dict(example, **extra),
        resolv_conf=dns.resolv_conf,
        progress=sys.stdout,
    )
    elapsed = time.monotonic() - start
    report(run, example, elapsed, world)
    if run.failed:
        for name, result in run.results:
            if result.get("failed"):
                print("FAILED %s: %s" % (name, result.get("msg")))
        print(run.stderr[-3000:])
        raise SystemExit("demo: the lifecycle failed")
    return run, example, elapsed


def report(run, example, elapsed, world=None):
    delegation = task(run, "for DNS to answer SOA and NS) - " + example["subdomain"])
    bucket = task(run, "State store bucket " + example["state_store_bucket"])
    created = [r for n, r in run.results if n.endswith("is present") and "kops_invocations" in r]
    deleted = [r for n, r in run.results if n.endswith("Delete the cluster (kops delete cluster --yes)") and "kops_invocations" in r]
    records = task(run, "Read the records kops made").get("resource_record_sets", [])
    groups = task(run, "Read the Auto Scaling groups").get("results", [])
    final = task(run, "Only NS and SOA may remain")

    print("\n== 1. delegation: %s" % example["subdomain"])
    print("   zone %s, name servers %s" % (delegation.get("zone_id"), ", ".join(delegation.get("name_servers", []))))
    print(
        "   parent %s NS record: %s (ttl %s); verified through DNS: %s"
        % (
            delegation.get("parent_zone"),
            ", ".join(delegation.get("delegation", {}).get("values", [])),
            delegation.get("delegation", {}).get("ttl"),
            delegation.get("verified"),
        )
    )
    print(
        "\n== 2. state store: s3://%s versioning=%s encryption=%s"
        % (
            example["state_store_bucket"],
            bucket.get("versioning", {}).get("Versioning") if isinstance(bucket.get("versioning"), dict) else bucket.get("versioning"),
            bucket.get("encryption"),
        )
    )
    if created:
        c = created[0]
        print("\n== 3. cluster %s created and applied (kubernetes %s)" % (c["name"], c["cluster"]["kubernetes_version"]))
        print("   kops: %s" % "; ".join("%s (%.1fs)" % (" ".join(i["argv"][:3]), i["seconds"]) for i in c["kops_invocations"]))
        print("   plan: %d resources created" % len((c.get("plan") or {}).get("create", [])))
        print("   records kops made in %s:" % example["cluster_dns_zone"])
        for rr in records:
            for line in zone_lines(rr):
                print("      %s" % line)
        print("   Auto Scaling groups (min/max/desired, instances):")
        for g in sorted(groups, key=lambda g: g["auto_scaling_group_name"]):
            print(
                "      %-60s %d/%d/%d  %s"
                % (
                    g["auto_scaling_group_name"],
                    g["min_size"],
                    g["max_size"],
                    g["desired_capacity"],
                    ", ".join("%s@%s" % (i["instance_id"], i["availability_zone"]) for i in g.get("instances", [])),
                )
            )
    validation = (created[0].get("validation") if created else None) or {}
    nodes = task(run, "List the nodes through the exported kubeconfig").get("resources", [])
    if validation:
        print(
            "\n   kops validate cluster: %s (%d attempt(s))"
            % ("passed: the cluster is ready" if validation.get("ok") else "FAILED: %s" % validation.get("problems"), validation.get("attempts", 0))
        )
        by_group = {}
        for n in nodes:
            by_group.setdefault(n["metadata"]["labels"].get("kops.k8s.io/instancegroup"), []).append(n)
        print("   nodes read through the exported kubeconfig (%s):" % os.path.relpath(created[0].get("kubeconfig", {}).get("path") or "", ROOT))
        for group, members in sorted(by_group.items()):
            for n in members:
                ready = [c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready"]
                print(
                    "      %-26s %-34s Ready=%s kubelet %s %s"
                    % (
                        group,
                        n["metadata"]["name"],
                        ready[0] if ready else "?",
                        n["status"]["nodeInfo"]["kubeletVersion"],
                        n["spec"]["providerID"].rsplit("/", 1)[-1],
                    )
                )
    scale = task(run, "Plan and apply the cluster once")
    if scale:
        print("\n== 4. scale-up (playbooks/scale_cluster.yml): %s" % ("changed" if scale.get("changed") else "unchanged"))
        for line in scale.get("plan_summary", []):
            print("   %s" % line)
    roll = task(run, "Rolling update - what the roll did, as one result").get("ansible_facts", {}).get("upgrade_roll")
    upgrade_report = task(run, "Report the upgrade").get("msg") or {}
    if roll:
        print("\n== 5. upgrade (playbooks/upgrade_cluster.yml), control plane first: %s" % upgrade_line(upgrade_report, roll))
        node_roles = {
            n["metadata"]["name"]: "control-plane" if "node-role.kubernetes.io/control-plane" in n["metadata"].get("labels", {}) else "node"
            for n in task(run, "List the nodes after the upgrade").get("resources", []) + list(nodes)
        }
        for line in phase_lines(upgrade_report.get("phases"), node_roles):
            print(line)
        print("   prune (kops update cluster --prune --yes): %s" % ("; ".join(upgrade_report.get("pruned") or []) or "nothing kops deferred was left"))
        for group in roll.get("rolled") or []:
            print(
                "   %-26s %s  drained %d node(s), %d pod(s) evicted%s, %d validation(s) %.0fs, %.0fs"
                % (
                    group["name"],
                    ", ".join("%s -> %s" % (i["old"], i["new"]) for i in group["instances"]),
                    len(group["nodes_drained"]),
                    group["pods_evicted"],
                    " (%d eviction(s) refused by a PodDisruptionBudget and retried)" % group["evictions_refused"] if group["evictions_refused"] else "",
                    group["validations"],
                    group["validation_seconds"],
                    group["seconds"] or 0,
                )
            )
        if not roll.get("rolled"):
            for group, ids in sorted(roll.get("replaced", {}).items()):
                print("   %-28s %s -> %s" % (group, ", ".join(ids["before"]), ", ".join(ids["after"])))
        after = task(run, "List the nodes after the upgrade").get("resources", [])
        if after:
            before_versions = sorted({n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes})
            after_versions = sorted({n["status"]["nodeInfo"]["kubeletVersion"] for n in after})
            print(
                "   node kubelet versions: before %s (%d nodes), after %s (%d nodes)"
                % (", ".join(before_versions), len(nodes), ", ".join(after_versions), len(after))
            )
        pods = task(run, "List the workload's pods after the upgrade").get("resources", [])
        if pods:
            print(
                "   workload default/web (PDB minAvailable 4): %d pods Running after the roll, on %s"
                % (sum(1 for p in pods if p["status"].get("phase") == "Running"), ", ".join(sorted({p["spec"]["nodeName"] for p in pods})))
            )
        validated_after = task(run, "Validate the upgraded cluster").get("validation")
        if validated_after:
            print(
                "   kops validate cluster after the roll: %s"
                % ("passed: the cluster is ready" if validated_after.get("ok") else "FAILED %s" % validated_after.get("problems"))
            )
    if deleted:
        d = deleted[0]
        left = [line for r in d.get("dns_records_left") or [] for line in zone_lines(r)]
        print(
            "\n== 6. cluster deleted: %d cloud resources; records left under its name: %s" % (len(d.get("deleted_resources", [])), "none" if not left else "")
        )
        for line in left:
            print("      %s" % line)
    print("   %s" % (final.get("msg") or "subdomain check did not run"))
    summary = {
        "elapsed_seconds": round(elapsed, 1),
        "rc": run.rc,
        "stats": run.stats,
        "delegation": {k: delegation.get(k) for k in ("zone_id", "name_servers", "verified")},
        "cluster_created": bool(created),
        "cluster_deleted": bool(deleted),
        "validation": {
            "ok": validation.get("ok"),
            "attempts": validation.get("attempts"),
            "nodes": validation.get("nodes"),
            "failures": validation.get("failures"),
        }
        if validation
        else None,
        "nodes_via_kubeconfig": [
            {
                "name": n["metadata"]["name"],
                "group": n["metadata"]["labels"].get("kops.k8s.io/instancegroup"),
                "instance": n["spec"]["providerID"].rsplit("/", 1)[-1],
                "kubelet": n["status"]["nodeInfo"]["kubeletVersion"],
            }
            for n in nodes
        ],
        "scale_plan": scale.get("plan_summary", []) if scale else [],
        "upgrade_phases": upgrade_report.get("phases", []) if roll else [],
        "upgrade_hops": upgrade_report.get("hops", []) if roll else [],
        "upgrade_replaced": roll.get("replaced", {}) if roll else {},
        "upgrade_rolled": roll.get("rolled", []) if roll else [],
        "upgrade_validation": task(run, "Validate the upgraded cluster").get("validation"),
        "nodes_after_upgrade": [
            {"name": n["metadata"]["name"], "kubelet": n["status"]["nodeInfo"]["kubeletVersion"]}
            for n in task(run, "List the nodes after the upgrade").get("resources", [])
        ],
        "records_seen": [(r["name"], r["type"]) for r in records],
        "groups_seen": {g["auto_scaling_group_name"]: g["desired_capacity"] for g in groups},
    }
    path = os.path.join(ROOT, "out", "demo-summary.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(summary, handle, indent=2)
    print("\nsummary (JSON): %s" % os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
