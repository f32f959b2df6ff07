"""Issue 26 item 3: several minor versions in one planned run, on the local world (real kops, real control plane).

A cluster at 1.32.13 (one control-plane node, one worker) upgraded by the role to 1.35.0: check mode writes nothing
and prints the whole plan (three control-plane hops, one worker roll, the versions at each point); the real run is
killed (the controller and kops with it) during the second hop's roll; the re-run resumes at that hop and converges,
the worker rolled once, never under an older control plane; a run after the end changes nothing. A hook that fails
after the control-plane phase stops the upgrade with the workers untouched."""

import gzip
import json
import os
import signal
import struct
import threading
import time

import pytest
import yaml

from conftest import BUCKET, CLUSTER, live_world
from harness.kops_env import LIVE_UPGRADE
from harness.kubeworld_runner import wait_for
from harness.process import descendants

pytestmark = pytest.mark.kops
FAST = dict(LIVE_UPGRADE, upgrade_control_plane_interval="1s", upgrade_node_interval="1s")


@pytest.fixture(scope="module")
def small(emulator_session, kops_dns, ssh_public_key, kube_world, tmp_path_factory):
    """One control-plane node and one worker at 1.32.13, applied, with its control plane and a kubeconfig."""
    kubeconfig = str(tmp_path_factory.mktemp("kube") / "config")
    options = dict(zones=["us-east-1a"], control_plane_zones=["us-east-1a"], node_count=1, kubernetes_version="1.32.13")
    world = live_world(emulator_session, kops_dns, ssh_public_key, kube_world, kubeconfig, nodes=2, **options)
    yield world
    emulator_session.reset()


def upgrade(world, **variables):
    """The upgrade role to 1.35.0 over three hops (1.33.12, 1.34.0, 1.35.0), with only the play's module_defaults."""
    settings = dict(FAST, upgrade_cluster=CLUSTER, upgrade_kubernetes_version="1.35.0", upgrade_hop_versions=["1.33.12"], upgrade_kubeconfig=world.kubeconfig)
    settings.update(variables)
    return {"name": "upgrade", "ansible.builtin.include_role": {"name": "kopsible.kops.upgrade"}, "vars": settings}


def kubelets(world):
    """``{'control-plane': [versions], 'node': [versions]}`` of the Nodes now."""
    found = {"control-plane": [], "node": []}
    for node in world.core.list_node().items:
        role = "control-plane" if "node-role.kubernetes.io/control-plane" in (node.metadata.labels or {}) else "node"
        found[role].append(node.status.node_info.kubelet_version)
    return {k: sorted(v) for k, v in found.items()}


def spec_version(world):
    body = world.emulator.client("s3").get_object(Bucket=BUCKET, Key=CLUSTER + "/config")["Body"].read()
    return yaml.safe_load(body)["spec"]["kubernetesVersion"]


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def playbook_processes(pid):
    """The ansible-playbook run started below ``pid`` and every process under it (its modules and their kops, which
    runs in a session of its own), not the emulator or the kube world."""
    roots = [p for p in descendants(pid) if "ansible-playbook" in cmdline(p) or "with-local-dns" in cmdline(p)]
    found = set()
    for root in roots:
        found.add(root)
        found.update(descendants(root))
    return sorted(found)


def test_check_mode_prints_the_whole_plan_and_writes_nothing(small):
    state, store = small.emulator.snapshot(), small.store_versions()
    run = small.play([upgrade(small)], check=True)
    assert not run.failed, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-3000:]
    plan = next(
        r for n, r in run.results if n.endswith("Pre-flight - the plan (hops of one minor version, control plane first, workers once; nothing is written)")
    )
    plan = plan["clusters"][0]["upgrade_plan"]
    assert [(h["version"], h["api_before"], h["api_after"], h["kubelets"]) for h in plan["hops"]] == [
        ("1.33.12", "1.32.13", "1.33.12", "1.32.13"),
        ("1.34.0", "1.33.12", "1.34.0", "1.32.13"),
        ("1.35.0", "1.34.0", "1.35.0", "1.32.13"),
    ]
    assert (plan["control_plane_rolls"], plan["worker_rolls"]) == (3, 1)
    steps = next(r for n, r in run.results if n.endswith("Pre-flight - the plan, step by step"))["msg"]
    assert len(steps) == 4 and steps[0].startswith("hop 1: update and roll the control plane to 1.33.12"), steps
    first_hop = next(r for n, r in run.results if n.endswith("(nothing is written)") and "plan_summary" in r)
    assert {"path": "spec.kubernetesVersion", "before": "1.32.13", "after": "1.33.12"} in first_hop["changes"]
    assert first_hop["plan_summary"] and all("nodes-us-east-1a" not in line for line in first_hop["plan_summary"]), first_hop["plan_summary"]
    after = small.emulator.snapshot()
    assert after == state, small.emulator.snapshot_diff(state, after)
    assert small.store_versions() == store


def test_etcd_backups_read_back_and_a_stale_one_refuses_the_upgrade_writing_nothing(small):
    """Issue 34 item 2: the backups etcd-manager (the world's stand-in) wrote to the state store, as kops_cluster_info
    reads them, against the objects themselves; an upgrade whose newest backup is older than
    upgrade_etcd_backup_max_age stops before anything is written."""
    s3 = small.emulator.client("s3")
    info = {"kopsible.kops.kops_cluster_info": {"name": CLUSTER, "cloud": False, "etcd_backups": True}}
    bad = {"kopsible.kops.kops_cluster_info": {"name": CLUSTER, "cloud": False, "etcd_backup_max_age": "1 day"}, "ignore_errors": True}
    run = small.play([dict(info, name="backups"), dict(bad, name="bad")])
    found = {b["name"]: b for b in run.result("backups")["clusters"][0]["etcd_backups"]}
    assert sorted(found) == ["events", "main"], found
    for name, backups in found.items():
        prefix = "%s/backups/etcd/%s/" % (CLUSTER, name)
        assert backups["backup_store"] == "s3://%s/%s" % (BUCKET, prefix.rstrip("/"))
        keys = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])}
        names = sorted({k[len(prefix) :].split("/")[0] for k in keys if k.endswith("/_etcd_backup.meta")})
        assert backups["count"] == len(names) >= 1 and backups["newest"]["name"] == names[-1], (backups, sorted(keys))
        data_key = prefix + names[-1] + "/etcd.backup.gz"
        assert backups["newest"]["size"] == keys[data_key]
        snapshot = gzip.decompress(s3.get_object(Bucket=BUCKET, Key=data_key)["Body"].read())
        assert struct.unpack_from("<I", snapshot, 16)[0] == 0xED0CDAED  # a bbolt database: etcd's snapshot
        meta = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + names[-1] + "/_etcd_backup.meta")["Body"].read())
        assert backups["newest"]["etcd_version"] == meta["etcdVersion"] and meta["etcdVersion"]
        assert 0 <= backups["newest"]["age_seconds"] < 15 * 60 and backups["stale"] is None
    assert run.result("bad")["msg"] == "etcd_backup_max_age: '1 day' is not a duration such as 24h, 90m or 30s"

    time.sleep(max(0, 2 - min(b["newest"]["age_seconds"] for b in found.values())))
    state, store = small.emulator.snapshot(), small.store_versions()
    refused = small.play([upgrade(small, upgrade_etcd_backup_max_age="1s")])
    failed = [(n, r) for n, r in refused.results if r.get("failed")]
    preflight = "Pre-flight - a recent etcd backup of every etcd cluster (etcd-manager's, kops docs/operations/etcd_backup_restore_encryption.md)"
    assert [n.split(" : ")[-1] for n, _r in failed] == [preflight, "The failure of " + preflight], failed
    msg = failed[0][1]["msg"]
    # the role's failure repeats it without a diagnostics dump: a pre-flight refusal before kops ran takes none
    assert failed[1][1]["msg"] == msg
    assert refused.result("kopsible.kops.upgrade : Diagnostics - kops toolbox dump, secrets redacted, of %s" % CLUSTER)["skipped"]
    assert msg.startswith("upgrade_etcd_backup_max_age: 1s; etcd cluster main: newest backup %s is " % found["main"]["newest"]["name"]), msg
    assert "etcd cluster events: newest backup %s is " % found["events"]["newest"]["name"] in msg and "nothing was written" in msg, msg
    after = small.emulator.snapshot()
    assert after == state, small.emulator.snapshot_diff(state, after)
    assert small.store_versions() == store and spec_version(small) == "1.32.13"


def test_a_kill_in_the_second_hop_then_a_rerun_resumes_there_and_converges(small):
    worker_versions = []
    watching = threading.Event()

    def watch():
        while not watching.is_set():
            try:
                worker_versions.append(kubelets(small)["node"])
            except Exception:
                pass
            watching.wait(0.2)

    me = os.getpid()
    killed = {}

    def second_hop_rolling():
        # kops rolling-update --yes running while the spec says 1.34.0: the second hop's roll has started (kops first
        # validates the cluster, so the control-plane instance is still the first hop's)
        rolling = any("rolling-update" in cmdline(p) and "--yes" in cmdline(p) for p in playbook_processes(me))
        return rolling and spec_version(small) == "1.34.0"

    def killer():
        wait_for(second_hop_rolling, timeout=900, interval=0.1)
        for pid in playbook_processes(me):  # the controller, its module and kops (which runs in its own session)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        killed["at"] = time.monotonic()
        killed["control_plane"] = kubelets(small)["control-plane"]

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    cut = small.play([upgrade(small)], fork=False)  # a process of its own, found by its command line
    thread.join(60)
    assert "at" in killed and cut.failed, (killed, cut.stdout[-2000:])
    assert spec_version(small) == "1.34.0"

    # the re-run (the killed run's lock broken) resumes at the second hop
    again = small.play([upgrade(small)], kops=dict(small.kops, break_lock=True))
    watching.set()
    watcher.join()
    assert not again.failed, [(n, r.get("msg")) for n, r in again.results if r.get("failed")] or again.stdout[-3000:]
    plan = next(r for n, r in again.results if "Pre-flight - the plan (hops" in n)["clusters"][0]["upgrade_plan"]
    assert killed["control_plane"] == ["v1.33.12"], killed
    assert [(h["version"], h["resume"], h["api_before"]) for h in plan["hops"]] == [("1.34.0", True, "1.33.12"), ("1.35.0", False, "1.34.0")], plan["hops"]
    assert kubelets(small) == {"control-plane": ["v1.35.0"], "node": ["v1.35.0"]}
    # the worker never ran anything but the start version and the target: rolled once, at the end
    assert {v for sample in worker_versions for v in sample} <= {"v1.32.13", "v1.35.0"}, sorted({v for s in worker_versions for v in s})
    report = next(r for n, r in again.results if n.endswith("Report the upgrade"))["msg"]
    assert [g["name"] for g in report["groups"] if g["name"].startswith("nodes-")] == ["nodes-us-east-1a"]
    state = small.kube.state()["clusters"][CLUSTER]
    assert state["agent_untraced"] == [] and state["agent_skew_refusals"] == {}, state

    done = small.play([upgrade(small)])
    assert not done.failed and [n for n, r in done.results if r.get("changed")] == [], [n for n, r in done.results if r.get("changed")]


def autoscaler(replicas):
    """A cluster-autoscaler Deployment where kops' addon puts it (kube-system/cluster-autoscaler)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "cluster-autoscaler"}},
            "template": {
                "metadata": {"labels": {"app": "cluster-autoscaler"}},
                "spec": {"containers": [{"name": "cluster-autoscaler", "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0"}]},
            },
        },
    }


def test_a_failing_hook_after_the_control_plane_stops_before_the_workers(small, tmp_path):
    """Also issue 34: the cluster-autoscaler is scaled to 0 for the roll (the hook reads 0 replicas) and its 2 replicas
    are restored when the upgrade fails; the failure leaves a diagnostics dump taken before the restore (the
    autoscaler in it has 0 replicas), named in the role's failure."""
    import kubernetes

    apps = kubernetes.client.AppsV1Api(small.kube.api_client(CLUSTER))
    apps.create_namespaced_deployment("kube-system", autoscaler(2))
    hook = tmp_path / "smoke.yml"
    hook.write_text(
        "- name: Read the cluster-autoscaler\n"
        "  kubernetes.core.k8s_info: {kind: Deployment, namespace: kube-system, name: cluster-autoscaler, kubeconfig: %s}\n"
        "  register: hook_autoscaler\n"
        "- name: Smoke test after the control plane\n  ansible.builtin.fail:\n"
        "    msg: 'smoke test failed; cluster-autoscaler replicas {{ hook_autoscaler.resources[0].spec.replicas }}'\n" % small.kubeconfig
    )
    ec2 = small.emulator.client("ec2")

    def worker_templates():
        return {
            t["LaunchTemplateName"]: t["LatestVersionNumber"]
            for t in ec2.describe_launch_templates()["LaunchTemplates"]
            if t["LaunchTemplateName"].startswith("nodes-")
        }

    before = worker_templates()
    diagnostics = tmp_path / "diagnostics"
    run = small.play(
        [upgrade(small, upgrade_kubernetes_version="1.36.1", upgrade_after_control_plane_tasks=str(hook), upgrade_diagnostics_dir=str(diagnostics))]
    )
    assert run.failed
    failed = [(n, r) for n, r in run.results if r.get("failed")]
    hook_task = "kopsible.kops.upgrade : Smoke test after the control plane"
    assert [n for n, _r in failed] == [hook_task, "kopsible.kops.upgrade : The failure of Smoke test after the control plane"], failed
    assert failed[0][1]["msg"] == "smoke test failed; cluster-autoscaler replicas 0"
    dumps = sorted(diagnostics.iterdir())
    assert len(dumps) == 1 and failed[1][1]["msg"] == "smoke test failed; cluster-autoscaler replicas 0 (diagnostics: %s)" % dumps[0], failed[1][1]["msg"]
    dumped = yaml.safe_load(dumps[0].read_text())
    assert dumped["dump"]["reason"] == "Smoke test after the control plane: smoke test failed; cluster-autoscaler replicas 0"
    paused = [d for d in dumped["kubernetes"]["apps/v1/deployments"] if d["metadata"]["name"] == "cluster-autoscaler"]
    assert [d["spec"]["replicas"] for d in paused] == [0] and dumped["cluster"]["spec"]["kubernetesVersion"] == "1.36.1"
    restored = next(r for n, r in run.results if n.endswith("Cluster-autoscaler - restored to the replicas it had (also when the upgrade failed)"))
    assert restored.get("changed") is True, restored
    deployment = apps.read_namespaced_deployment("cluster-autoscaler", "kube-system")
    assert deployment.spec.replicas == 2 and "kopsible.kops/paused-replicas" not in (deployment.metadata.annotations or {})
    assert kubelets(small) == {"control-plane": ["v1.36.1"], "node": ["v1.35.0"]}
    # the workers untouched: no new version of their launch template, no worker task ran
    assert worker_templates() == before and before, before
    assert not [n for n, _r in run.results if "Workers - " in n], [n for n, _r in run.results]


def test_kops_reconcile_finishes_what_the_hook_stopped(small):
    """upgrade_use_kops_reconcile: kops' own command. After the failed hook the control plane runs 1.36.1 and the
    worker 1.35.0: the plan has no hop left, one worker roll, and kops reconcile cluster --yes does it."""
    run = small.play([upgrade(small, upgrade_kubernetes_version="1.36.1", upgrade_use_kops_reconcile=True)])
    assert not run.failed, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stdout[-3000:]
    reconciled = next(r for n, r in run.results if n.endswith("kOps' order in one kops call (kops reconcile cluster --yes)"))
    assert reconciled["changed"] and any(c["argv"][1:3] == ["reconcile", "cluster"] and "--yes" in c["argv"] for c in reconciled["kops_invocations"])
    assert not [n for n, _r in run.results if "Control plane - " in n or "Workers - " in n], [n for n, _r in run.results]
    assert kubelets(small) == {"control-plane": ["v1.36.1"], "node": ["v1.36.1"]}


def test_prune_deletes_what_kops_defers_and_then_has_nothing_to_prune(small):
    """kops_cluster prune (kops update cluster --prune): an SSH access change leaves the old security-group rule for
    --prune (awstasks/securitygroup.go deleteSecurityGroupRule.DeferDeletion); a plain apply keeps it, the prune deletes
    it (read back from EC2), and a second prune has nothing to do."""
    ec2 = small.emulator.client("ec2")

    def ssh_cidrs():
        cidrs = set()
        for group in ec2.describe_security_groups(Filters=[{"Name": "tag:KubernetesCluster", "Values": [CLUSTER]}])["SecurityGroups"]:
            for rule in group["IpPermissions"]:
                if rule.get("FromPort") == 22:
                    cidrs.update(r["CidrIp"] for r in rule.get("IpRanges", []))
        return cidrs

    assert "0.0.0.0/0" in ssh_cidrs()
    changed = small.play([{"name": "a", "kopsible.kops.kops_cluster": {"name": CLUSTER, "ssh_access": ["10.0.0.0/8"], "apply": True}}]).result("a")
    assert not changed.get("failed"), changed.get("msg")
    assert {"0.0.0.0/0", "10.0.0.0/8"} <= ssh_cidrs()
    left = small.play([{"name": "a", "kopsible.kops.kops_cluster": {"name": CLUSTER, "apply": True}}]).result("a")
    assert left["changed"] is False and left["plan"]["prune"], left["plan"]
    pruned = small.play([{"name": "p", "kopsible.kops.kops_cluster": {"name": CLUSTER, "apply": True, "prune": True}}]).result("p")
    assert pruned["changed"] is True and any(line.startswith("prune SecurityGroupRule") for line in pruned["plan_summary"]), pruned["plan_summary"]
    assert any("--prune" in c["argv"] and "--yes" in c["argv"] for c in pruned["kops_invocations"])
    assert "0.0.0.0/0" not in ssh_cidrs() and "10.0.0.0/8" in ssh_cidrs()
    again = small.play([{"name": "p", "kopsible.kops.kops_cluster": {"name": CLUSTER, "apply": True, "prune": True}}]).result("p")
    assert again["changed"] is False and again["plan"]["prune"] == [], again["plan"]


class EndpointProbe(threading.Thread):
    """Every 0.2 s: the addresses ``api.<cluster>`` holds in Route53 and whether a TCP connection to one on port 443
    is accepted (what a client of the API meets). ``refused`` counts the probes no address accepted."""

    def __init__(self, world):
        super().__init__(daemon=True)
        self.r53, self.zone, self.stop = world.emulator.client("route53"), world.zone_id, threading.Event()
        self.refused = self.accepted = 0
        self.addresses = []

    def run(self):
        import socket

        name = "api.%s." % CLUSTER
        while not self.stop.is_set():
            try:
                records = self.r53.list_resource_record_sets(HostedZoneId=self.zone, StartRecordName=name, StartRecordType="A", MaxItems="1")
                values = [v["Value"] for r in records["ResourceRecordSets"] if r["Name"] == name for v in r.get("ResourceRecords", [])]
                if values and values not in self.addresses:
                    self.addresses.append(values)
                ok = False
                for address in values:
                    try:
                        socket.create_connection((address, 443), timeout=1).close()
                        ok = True
                        break
                    except OSError:
                        pass
                self.accepted += ok
                self.refused += not ok
            except Exception:
                pass
            self.stop.wait(0.2)


def test_a_single_control_plane_roll_has_no_api_while_its_node_is_replaced(small):
    """Issue 30: one API endpoint per control-plane instance (tools/kubeworld/endpoints.py), as on AWS, where each runs
    its own kube-apiserver and dns-controller keeps api.<cluster> at their addresses. Rolling the only control-plane
    node (its replacement joining 20 s after launch): the API refuses connections from the termination until the
    replacement has joined, kops' validation reports it (the module's result carries kops' message) and waits, and the
    cluster validates after, with the record at the new instance's endpoint."""
    group = "control-plane-us-east-1a"
    before = small.kube.state()["clusters"][CLUSTER]["api_endpoints"]
    assert len(before) == 1, before
    probe = EndpointProbe(small)
    probe.start()
    small.kube.knobs(CLUSTER, join_delay={group: 20})
    try:
        options = dict(cluster=CLUSTER, kubeconfig=small.kubeconfig, instance_groups=[group], force=True, control_plane_interval="1s", validate_count=1)
        rolled = small.play([{"name": "r", "kopsible.kops.rolling_update": dict(options, validation_timeout="5m")}]).result("r")
    finally:
        small.kube.knobs(CLUSTER)
        probe.stop.set()
        probe.join()
    assert not rolled.get("failed"), rolled.get("msg")
    [report] = rolled["rolled"]
    assert report["done"] and report["validation_failures"], report
    assert any("connection refused" in m or "has not yet joined" in m for m in report["validation_failures"]), report["validation_failures"]
    after = wait_for(lambda: small.kube.state()["clusters"][CLUSTER]["api_endpoints"] or None)
    assert len(after) == 1 and set(after) != set(before), (before, after)
    assert probe.refused >= 5 and probe.accepted, vars(probe)  # at least a second without an API, then it came back
    assert probe.addresses[0] == sorted(before.values()) and probe.addresses[-1] == sorted(after.values()), probe.addresses
    validated = small.play([{"name": "v", "kopsible.kops.kops_cluster": {"name": CLUSTER, "validate": True, "validation_timeout": "2m"}}]).result("v")
    assert not validated.get("failed") and validated["validation"]["ok"], validated.get("msg")
