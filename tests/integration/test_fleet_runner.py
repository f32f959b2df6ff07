"""playbooks/fleet_update_run.yml run as AWX runs a job (issue 31): ``ansible-runner run`` with its own private data
directory per job, the job id as ``JOB_ID`` (the run's holder), over six applied gossip clusters of one state store
(the kopsible.kops.kops inventory plugin as the job's inventory source), upgraded cloud-only 1.34.1 -> 1.35.0:

- canary f0, f1 with a soak time, wave1 f2, f3, wave2 f4, f5 behind an approval gate: the first job upgrades the
  canary, waits the soak, upgrades wave1 and stops before wave2, which waits for its approval;
- after the approval (fleet_run ``state: approved``, an AWX workflow's approval node) the second job starts wave2 and
  its controller is killed (SIGKILL to ansible-runner's whole process group, as a crashed AWX node) while wave2 rolls;
- a third job without ``fleet_run_takeover`` is refused while the killed job's lease holds the run, naming it; with
  takeover it resumes: the clusters that were running are checked and continued, the done ones are not touched;
- no cluster is rolled twice: every instance each cluster had before the run was replaced exactly once (read from
  EC2: its original instances are the only terminated ones), each cluster is recorded done once, every cluster ends
  at the target (read from the state store); a fourth job changes nothing.
"""

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import fleet
from harness.execution_environment import JobRun, job_events
from harness.playbook import ansible_env, run_playbook
from harness.process import descendants

pytestmark = pytest.mark.kops
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "fleet-runner-state"
RUN = "upgrade-fleet-1.35"
NAMES = ["f%d.k8s.local" % i for i in range(6)]
PLAN = {
    "change": {"kubernetes_version": "1.35.0"},
    "stages": [
        {"name": "canary", "clusters": NAMES[:2], "soak": "3s"},
        {"name": "wave1", "clusters": NAMES[2:4]},
        {"name": "wave2", "clusters": NAMES[4:], "approval": True},
    ],
}
DONE = "Fleet update run - record the cluster done"
UPGRADE = "Fleet update run - upgrade this cluster"


class Job:
    """One ``ansible-runner run`` of the fleet playbook in its own private data directory, started at once;
    :meth:`wait` returns ``(rc, [(host, task name, result dict)])`` from the job's events (in run order)."""

    def __init__(self, emulator, tmp_path, job_id, **extra_vars):
        self.job_id = job_id  # AWX's job id (an int), the run's holder
        self.ident = ident = "job-%d" % job_id + ("-takeover" if extra_vars.get("fleet_run_takeover") else "")
        self.private = tmp_path / ident
        (self.private / "env").mkdir(parents=True)
        variables = fleet.run_variables(emulator, BUCKET, RUN, PLAN, **extra_vars)
        (self.private / "env" / "extravars").write_text(json.dumps(variables))
        inventory = fleet.inventory_file(tmp_path / "fleet.kops.yml", emulator, BUCKET)
        runner = os.path.join(os.path.dirname(sys.executable), "ansible-runner")
        argv = [
            runner,
            "run",
            str(self.private),
            "--project-dir",
            ROOT,
            "-p",
            "playbooks/fleet_update_run.yml",
            "--ident",
            ident,
            "--inventory",
            str(inventory),
        ]
        env = ansible_env(emulator, {"JOB_ID": str(job_id)})
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(self.private), start_new_session=True)

    def kill(self):
        """SIGKILL to every process of the job, as when the AWX node running it crashes: ansible-runner and all its
        descendants (ansible-runner starts ansible-playbook under a pty, in a session of its own, which a kill of
        ansible-runner's process group does not reach). The tree is frozen first (SIGSTOP: a stopped process forks
        no more), then killed. Returns the pids killed (set)."""
        frozen = set()
        while True:
            found = set(descendants(self.proc.pid)) - frozen
            if not found:
                break
            for pid in found:
                _signal(pid, signal.SIGSTOP)
            frozen |= found
        for pid in frozen | {self.proc.pid}:
            _signal(pid, signal.SIGKILL)
        self.proc.communicate(timeout=60)
        return frozen | {self.proc.pid}

    def wait(self, timeout=900):
        stdout, stderr = self.proc.communicate(timeout=timeout)
        self.stdout = stdout + stderr
        return self.proc.returncode, self.results()

    def results(self):
        """``[(host, task name, result dict)]`` from the job's events, in run order (a killed job's too)."""
        run = JobRun(self.proc.returncode, None, "", "", job_events(str(self.private / "artifacts" / self.ident)))
        return [(host, name, result) for host, (name, result) in zip(run.hosts, run.results)]


def _signal(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _alive(pid):
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def record(emulator):
    return json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/%s.json" % RUN)["Body"].read())


def instances(emulator, cluster, states=("pending", "running")):
    """The ids of ``cluster``'s EC2 instances in ``states`` (set), by the KubernetesCluster tag kops gives them."""
    filters = [{"Name": "tag:KubernetesCluster", "Values": [cluster]}, {"Name": "instance-state-name", "Values": list(states)}]
    reservations = emulator.client("ec2").describe_instances(Filters=filters)["Reservations"]
    return {i["InstanceId"] for r in reservations for i in r["Instances"]}


def where(emulator, cluster):
    """Each instance of ``cluster``: its state, Auto Scaling group (or the one kops detached it from) and launch
    template version (for failure messages)."""
    filters = [{"Name": "tag:KubernetesCluster", "Values": [cluster]}]
    found = {}
    for reservation in emulator.client("ec2").describe_instances(Filters=filters)["Reservations"]:
        for i in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
            found[i["InstanceId"]] = (
                i["State"]["Name"],
                tags.get("aws:autoscaling:groupName"),
                tags.get("kops.k8s.io/detached-from-asg"),
                tags.get("aws:ec2launchtemplate:version"),
            )
    members = {
        m["InstanceId"]: (g["AutoScalingGroupName"], m.get("LaunchTemplate", {}).get("Version"))
        for g in emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
        for m in g["Instances"]
    }
    return {i: (v, members.get(i)) for i, v in found.items()}


def rolls(results, host):
    """What the upgrade role's tasks on ``host`` did (task name -> changed, msg), for failure messages."""
    return [(t, r.get("changed"), r.get("skipped"), str(r.get("msg", ""))[:200]) for h, t, r in results if h == host and t.startswith(("upgrade", "Fleet"))]


def ran(results, task, host):
    """How many times ``task`` ran (not skipped) on ``host``."""
    return len([r for h, t, r in results if h == host and t == task and not r.get("skipped")])


def at(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_killed_controller_mid_wave_is_taken_over_and_no_cluster_is_rolled_twice(emulator, ssh_public_key, tmp_path):
    fleet.make_fleet(emulator, BUCKET, {name: ("1.34.1", None) for name in NAMES}, ssh_public_key)
    applied = run_playbook(
        [{"name": n, "kopsible.kops.kops_cluster": {"name": n, "apply": True}} for n in NAMES], emulator=emulator, kops=fleet.kops_settings(BUCKET)
    )
    assert applied.rc == 0, applied.stdout[-3000:]
    original = {n: instances(emulator, n) for n in NAMES}
    assert all(len(ids) == 2 for ids in original.values()), original  # a control-plane node and a worker each

    # job 1: the canary, its soak, wave1; wave2 waits for its approval
    job1 = Job(emulator, tmp_path, 101)
    rc, first = job1.wait()
    assert rc == 0, job1.stdout[-5000:]
    state = record(emulator)
    assert {c: e["state"] for c, e in state["clusters"].items()} == dict(dict.fromkeys(NAMES[:4], "done"), **dict.fromkeys(NAMES[4:], "pending"))
    why = {h: r["ansible_facts"]["fleet_run_note"] for h, t, r in first if t == "Fleet update run - not started, and why" and not r.get("skipped")}
    assert sorted(why) == NAMES[4:] and all("approval" in m and "wave2" in m for m in why.values()), why
    canary_done = max(at(e["at"]) for e in state["events"] if e["event"] == "done" and e["cluster"] in NAMES[:2])
    wave1_start = min(at(e["at"]) for e in state["events"] if e["event"] == "start" and e["cluster"] in NAMES[2:4])
    assert (wave1_start - canary_done).total_seconds() >= 3, (canary_done, wave1_start)  # the canary's soak
    for name in NAMES:
        now = instances(emulator, name)
        assert (now & original[name]) == (set() if name in NAMES[:4] else original[name]), (name, now, original[name])
    assert state["holder"] is None

    # the approval of wave2, as an AWX workflow's approval node gives it
    approval = run_playbook(
        [{"name": "approve", "kopsible.kops.fleet_run": {"bucket": BUCKET, "run": RUN, "state": "approved", "stage": "wave2", "holder": "approver"}}],
        emulator=emulator,
    ).result("approve")
    assert approval["changed"] is True, approval
    approved = record(emulator)
    assert approved["approved"] == ["wave2"] and approved["holder"] is None  # approving does not hold the run
    assert {k: v for k, v in approved["events"][-1].items() if k != "at"} == {"event": "approved", "stage": "wave2", "by": "approver"}

    # job 2 starts wave2; its controller is killed while wave2 rolls (an instance of f4 or f5 already replaced)
    job2 = Job(emulator, tmp_path, 102)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and job2.proc.poll() is None:
        if any(original[n] - instances(emulator, n) for n in NAMES[4:]):
            break
        time.sleep(0.5)
    assert job2.proc.poll() is None, "job 102 ended before wave2 replaced an instance: %s" % job2.proc.communicate()[0][-3000:]
    killed_pids = job2.kill()
    assert len(killed_pids) > 2, killed_pids  # ansible-runner, ansible-playbook and what they were running
    time.sleep(1)
    assert [p for p in killed_pids if _alive(p)] == []  # nothing of job 102 goes on behind the next job's back
    killed = record(emulator)
    assert killed["holder"]["id"] == "102", killed["holder"]
    running = sorted(c for c in NAMES[4:] if killed["clusters"][c]["state"] == "running")
    assert running, killed["clusters"]
    assert {c: killed["clusters"][c]["state"] for c in NAMES[:4]} == dict.fromkeys(NAMES[:4], "done")

    # the state-store locks job 102's killed kops modules left (a kill between two kops calls leaves none)
    stale = sorted(o["Key"] for o in emulator.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=".kopsible-locks/").get("Contents", []))

    # job 3 without takeover: refused while job 102's lease holds the run, naming it; nothing written
    job3 = Job(emulator, tmp_path, 103)
    rc, refused = job3.wait()
    assert rc != 0
    msg = next(r["msg"] for h, t, r in refused if t == "Fleet update run - the run's record (made, or resumed with the same plan)")
    assert "102" in msg, msg
    assert record(emulator) == killed

    # job 3 again with takeover: the running clusters are checked and continued, the others left as they are
    job3 = Job(emulator, tmp_path, 103, fleet_run_takeover=True)
    rc, resumed = job3.wait()
    assert rc == 0, job3.stdout[-5000:]
    final = record(emulator)
    # the taken-over clusters' kops runs broke the locks the killed job left; every run released its own
    broken = {h for h, t, r in resumed if ((r.get("state_store_safety") or {}).get("lock") or {}).get("broken")}
    assert {k.rsplit("/", 1)[-1][: -len(".json")] for k in stale} <= broken, (stale, broken)
    assert emulator.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=".kopsible-locks/").get("KeyCount") == 0
    assert {c: e["state"] for c, e in final["clusters"].items()} == dict.fromkeys(NAMES, "done")
    assert [fleet.stored_version(emulator, BUCKET, n) for n in NAMES] == ["1.35.0"] * 6
    for name in NAMES:
        # each instance the cluster had was replaced once: its originals are the only terminated instances
        assert instances(emulator, name, states=("shutting-down", "terminated")) == original[name], "%s\n%s\n%s" % (
            name,
            json.dumps(where(emulator, name), indent=1),
            json.dumps(rolls(resumed, name), indent=1),
        )
        assert len(instances(emulator, name)) == 2 and not instances(emulator, name) & original[name], name
    results = first + refused + resumed + job2.results()
    assert {n: ran(results, DONE, n) for n in NAMES} == dict.fromkeys(NAMES, 1), [(h, t) for h, t, r in results if t == DONE]
    assert {n: ran(results, UPGRADE, n) for n in NAMES[:4]} == dict.fromkeys(NAMES[:4], 1)
    assert ran(resumed, UPGRADE, NAMES[0]) == 0 and all(ran(resumed, UPGRADE, n) == 1 for n in NAMES[4:])

    # job 4: every cluster is done; nothing starts, nothing is rolled
    members = {n: instances(emulator, n) for n in NAMES}
    job4 = Job(emulator, tmp_path, 104)
    rc, again = job4.wait()
    assert rc == 0, job4.stdout[-5000:]
    claims = [r for h, t, r in again if t == "Fleet update run - may this cluster start now?"]
    assert len(claims) == 6 and all(not c["proceed"] and c["why"].startswith("done at ") for c in claims), claims
    assert not [t for h, t, r in again if t in (UPGRADE, DONE) and not r.get("skipped")]
    assert {n: instances(emulator, n) for n in NAMES} == members
    assert record(emulator)["clusters"] == final["clusters"]
