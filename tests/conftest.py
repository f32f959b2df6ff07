"""Shared fixtures: the local AWS emulator (one moto server process per test session, reset
between tests), and helpers to run real playbooks against it."""

import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
# Unit tests import plugin code as ansible_collections.kopsible.kops.plugins...
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))
# Harness tuning of the Go runtime, not of what is tested: kops and the control plane's Go binaries collect garbage
# half as often (GOGC=200; Go's default is 100). A kops dry run on the emulator measured 0.87 -> 0.74 CPU-s (median
# of 8 interleaved runs, issue 28); kops' behaviour and output are the same. A caller's own GOGC is kept.
os.environ.setdefault("GOGC", "200")
# Harness tuning of the Python processes, not of what is tested (issue 28): harness.playbook.run_playbook runs each
# playbook in a child forked from a warm ansible-playbook (tools/harness/forkserver.py: the same entry point, command
# line, environment and output; a 2-task playbook 1.4 -> 0.8 CPU-s), and the module processes keep the bytecode of
# their AnsiballZ payloads (tools/harness/bytecode_cache/sitecustomize.py) and hand them to a warm Python that has
# imported boto3 (tools/harness/module_server.py: the same payload, standard streams, environment and exit status).
# `make demo`, `make bench` and the rehearsal run ansible-playbook as a user does. KOPSIBLE_FORKSERVER=0,
# KOPSIBLE_MODULE_FORKSERVER=0 or an empty KOPSIBLE_BYTECODE_CACHE turns each off.
os.environ.setdefault("KOPSIBLE_FORKSERVER", "1")
os.environ.setdefault("KOPSIBLE_MODULE_FORKSERVER", "1")
os.environ.setdefault("KOPSIBLE_BYTECODE_CACHE", os.path.join(ROOT, ".cache", "bytecode"))
# kops' state-store key of a shell that sourced the sandbox's sandbox.env (S3_*): the modules keep a caller's
# S3_ACCESS_KEY_ID/S3_SECRET_ACCESS_KEY (plugins/module_utils/_kops/runner.py), which would sign the tests' kops runs
# with the sandbox's key instead of each test's own credentials.
for _name in ("S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_REGION"):
    os.environ.pop(_name, None)

from harness.emulator import Emulator  # noqa: E402
from harness.kops_env import UBUNTU_AMI, KopsDNS, make_delegated_world, module_options  # noqa: E402
from harness.kubeworld_runner import KubeWorldProcess, prefix_for  # noqa: E402
from harness.playbook import run_playbook  # noqa: E402

PARENT = "example.org"
SUBDOMAIN = "kopsclustertest.example.org"
CLUSTER = "mycluster01.kopsclustertest.example.org"
BUCKET = "kopsible-state"


@pytest.fixture(scope="session")
def emulator_session(tmp_path_factory):
    """The test worker's emulator (one per worker), logging to its own file (``emu.log_path``) so that
    :func:`emulator_answered_no_500` reads this worker's requests only. The log holds errors, not a line per answered
    request (nobody reads those here, and writing them cost 8 % of the emulator's time)."""
    emu = Emulator(log_path=str(tmp_path_factory.getbasetemp() / "emulator.log"), access_log=False)
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture(autouse=True)
def emulator_answered_no_500(request):
    """Fail a test (at teardown) during which the worker's emulator raised an unhandled error (werkzeug's "Error on
    request" and a traceback: an HTTP 500 where AWS answers, a bug of moto or of tools/emulator_patches to patch,
    never a case to test around). Tests that never start the emulator are not touched."""
    if "emulator_session" not in request.fixturenames:
        yield
        return
    emu = request.getfixturevalue("emulator_session")
    start = os.path.getsize(emu.log_path)
    yield
    with open(emu.log_path, "rb") as handle:
        handle.seek(start)
        written = handle.read().decode(errors="replace")
    if "Error on request:" in written:
        error = written[written.index("Error on request:") :]
        last = re.search(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*$", error, re.M)  # the traceback's last line
        error = error[: last.end()] if last else error[:4000]
        count = written.count("Error on request:")
        pytest.fail("the emulator answered %d request(s) with an unhandled error (HTTP 500); the first: %s" % (count, error[-4000:]), pytrace=False)


@pytest.fixture
def emulator(emulator_session):
    """The emulator, emptied before the test."""
    emulator_session.reset()
    return emulator_session


@pytest.fixture
def play(emulator):
    """``play(tasks, **kw)`` runs ``tasks`` through ansible-playbook against the emulator."""

    def _play(tasks, **kwargs):
        return run_playbook(tasks, emulator=emulator, **kwargs)

    return _play


# A parametrized bad-input test runs every SAMPLE_EVERY-th case (by its index, the first included) through
# ansible-playbook and the others through the module's main() in process (harness.in_process, issue 28).
SAMPLE_EVERY = 4


@pytest.fixture
def sampled_run(request, emulator):
    """``sampled_run(task, kops=None)``: the result of one harness task (``{"name": ..., "kopsible.kops.<module>": ...}``)
    of a parametrized bad-input test: case 0, SAMPLE_EVERY, ... (the index of the test's first parameter) through
    ``ansible-playbook`` (module_defaults, the action group and the controller stay proven; its output must hold no
    traceback), the others through the module's real ``main()`` in this process with the arguments the play's
    module_defaults would give (the same argument spec, rules and ``fail_json``, without a controller per input)."""
    from harness import in_process

    index = list(request.node.callspec.indices.values())[0]

    def _run(task, kops=None):
        if index % SAMPLE_EVERY == 0:
            run = run_playbook([dict(task, ignore_errors=True)], emulator=emulator, kops=kops)
            assert "Traceback" not in run.stdout + run.stderr, run.stderr[-3000:]
            return run.result(task["name"])
        return in_process.run_task(task, emulator, kops=kops)

    return _run


@pytest.fixture(scope="session")
def kops_dns(emulator_session):
    """A DNS server on port 53 answering for the emulator's zones (kops resolves its zone's NS records):
    127.0.0.1, or 127.0.0.(53+N) for pytest-xdist worker gwN, so that parallel workers do not collide.
    ``KOPSIBLE_DNS_BASE=K`` shifts the worker addresses to 127.0.K.(53+N) (127.0.K.53 without xdist), so that
    several test runs (separate checkouts) can share one machine."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    base = os.environ.get("KOPSIBLE_DNS_BASE")
    index = int(worker[2:]) if worker.startswith("gw") else None
    if base:
        address = "127.0.%d.%d" % (int(base), 53 + (index or 0))
    else:
        address = "127.0.0.%d" % (53 + index) if index is not None else "127.0.0.1"
    dns = KopsDNS(emulator_session, address=address, names=_world_names)
    dns.start()
    yield dns
    dns.stop()


_WORLD = {}


def _world_names():
    """The kube world's load-balancer names for the DNS face (none before the world starts)."""
    world = _WORLD.get("world")
    return world.names() if world is not None else {}


@pytest.fixture(scope="session")
def kube_world_process(emulator_session, kops_dns):
    """`python -m kubeworld` (tools/kubeworld/) watching this worker's emulator, paused (no control plane) between the tests
    that ask for it: the tests of other files prove "check mode writes nothing" on the emulator's state,
    which the kube world's dns-controller stand-in would change under them."""
    world = KubeWorldProcess(emulator_session, prefix_for(kops_dns.address)).start(paused=True)
    _WORLD["world"] = world
    yield world
    _WORLD.pop("world", None)
    world.stop()


@pytest.fixture(scope="module")
def kube_world(kube_world_process):
    """The Kubernetes half of the local world for the tests of one file: every cluster applied in the emulator
    gets a real control plane and node agent (control planes on 127.X.Y.N, per worker); paused afterwards. Fails
    at teardown naming each error the world's loops or node agents counted meanwhile (a kubelet stand-in that
    silently failed a pass would make a proof pass for the wrong reason)."""
    with kube_world_process.serving():
        yield kube_world_process


@pytest.fixture(scope="session")
def execution_environment(tmp_path_factory):
    """The execution environment's contents in a fresh virtualenv (tools/harness/execution_environment.py), built once
    per test run under the run's shared temporary root and reused by every file and pytest-xdist worker that runs
    jobs in it (test_lifecycle, test_awx_runner)."""
    from harness.execution_environment import ExecutionEnvironment

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's root, shared by the workers (each has its own basetemp below it)
    return ExecutionEnvironment(root / "execution-environment").build_once()


@pytest.fixture(scope="session")
def ssh_public_key(tmp_path_factory):
    import subprocess

    path = tmp_path_factory.mktemp("ssh") / "id_rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(path)], check=True)
    return (path.parent / "id_rsa.pub").read_text().strip()


class KopsWorld:
    """An emptied emulator with example.org, the delegated subdomain and a versioned state-store bucket."""

    def __init__(self, emulator, dns, ssh_public_key):
        self.emulator, self.dns, self.ssh_public_key = emulator, dns, ssh_public_key
        self.zone_id = make_delegated_world(emulator, dns, PARENT, SUBDOMAIN, BUCKET)
        self.kops = dict(module_options(dns), state_store="s3://" + BUCKET)

    def cluster_options(self, **overrides):
        """The kOps guide's HA cluster: 3 control-plane zones, 2 workers, Route53 DNS."""
        options = {
            "name": CLUSTER,
            "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
            "control_plane_zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
            "node_count": 2,
            "node_size": "t3.medium",
            "control_plane_size": "t3.medium",
            "dns_zone": SUBDOMAIN,
            "kubernetes_version": "1.34.1",
            "channel": "none",
            "image": UBUNTU_AMI,
            "ssh_public_key": self.ssh_public_key,
        }
        options.update(overrides)
        return options

    def store(self):
        """State-store objects as ``{key: etag}`` (versions ignored)."""
        s3 = self.emulator.client("s3")
        objects = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            for obj in page.get("Contents", []):
                objects[obj["Key"]] = obj["ETag"]
        return objects

    def store_versions(self):
        """Every object version and delete marker in the bucket, ``{(key, version id): etag}`` (``'delete marker'``
        for a marker): every write adds a version and every deletion a marker, so equal values mean nothing
        was written or deleted."""
        s3 = self.emulator.client("s3")
        versions = {}
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
            for version in page.get("Versions", []):
                versions[(version["Key"], version["VersionId"])] = version["ETag"]
            for marker in page.get("DeleteMarkers", []):
                versions[(marker["Key"], marker["VersionId"])] = "delete marker"
        return versions

    def records(self):
        r53 = self.emulator.client("route53")
        return [(r["Name"].rstrip("."), r["Type"]) for r in r53.list_resource_record_sets(HostedZoneId=self.zone_id)["ResourceRecordSets"]]

    def groups(self):
        """Auto Scaling groups as ``{name: {'min', 'max', 'desired', 'zones', 'instances'}}``."""
        asg = self.emulator.client("autoscaling")
        groups = {}
        for group in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
            groups[group["AutoScalingGroupName"]] = {
                "min": group["MinSize"],
                "max": group["MaxSize"],
                "desired": group["DesiredCapacity"],
                "zones": sorted(group["AvailabilityZones"]),
                "instances": sorted((i["InstanceId"], i["AvailabilityZone"]) for i in group["Instances"]),
            }
        return groups


def live_world(emulator, dns, ssh_public_key, kube_world, kubeconfig, nodes, **cluster_options):
    """A :class:`KopsWorld` on the emptied ``emulator`` whose cluster (``KopsWorld.cluster_options`` with
    ``cluster_options``) is created, applied and running on the kube world, with an admin kubeconfig exported to
    ``kubeconfig`` (a path): ``world.play(tasks, kops=None, **kw)`` runs playbooks through the local DNS (kops settings
    ``kops`` instead of the world's, e.g. with break_lock), ``world.core`` is a CoreV1Api of the cluster, ``world.kube``
    the kube world. Waits until ``nodes`` Nodes are registered."""
    import kubernetes

    emulator.reset()
    world = KopsWorld(emulator, dns, ssh_public_key)
    world.kube, world.kubeconfig = kube_world, kubeconfig
    world.play = lambda tasks, kops=None, **kw: run_playbook(tasks, emulator=world.emulator, kops=kops or world.kops, resolv_conf=world.dns.resolv_conf, **kw)
    created = world.play(
        [
            {"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True, **cluster_options)},
            {"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": kubeconfig}},
        ]
    )
    assert not created.failed, created.stdout[-3000:]
    kube_world.wait_cluster(CLUSTER, timeout=120, nodes=nodes)
    world.core = kubernetes.client.CoreV1Api(kube_world.api_client(CLUSTER))
    return world


@pytest.fixture
def kops_world(emulator, kops_dns, ssh_public_key):
    return KopsWorld(emulator, kops_dns, ssh_public_key)


class SavedWorld:
    """A :class:`KopsWorld` made once and saved whole in the emulator (``Emulator.save_state``), so that many tests
    start from it at the cost of a restore (a fraction of a second) instead of making it again with kops."""

    def __init__(self, world, name):
        self.world, self.name = world, name

    def restore(self):
        """The world as it was saved (every test that restores it gets the same state, ids included)."""
        self.world.emulator.restore_state(self.name)
        return self.world


@pytest.fixture(scope="session")
def saved_applied_cluster(emulator_session, kops_dns, ssh_public_key):
    """The kOps guide's HA cluster (``KopsWorld.cluster_options``) created and applied by ``kops_cluster`` with the
    real kops, once per test worker, and saved in the emulator: see :func:`applied_cluster`."""
    emulator_session.reset()
    world = KopsWorld(emulator_session, kops_dns, ssh_public_key)
    created = run_playbook([{"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True)}], emulator=emulator_session, kops=world.kops).result(
        "c"
    )
    assert not created.get("failed") and created["changed"] is True, created.get("msg")
    emulator_session.save_state("applied-cluster")
    yield SavedWorld(world, "applied-cluster")
    emulator_session.drop_state("applied-cluster")


@pytest.fixture
def applied_cluster(saved_applied_cluster):
    """A :class:`KopsWorld` whose emulator holds the guide's HA cluster as ``kops_cluster`` applied it (made once per
    worker, restored for each test). A test using it runs its playbooks with :func:`cluster_play`, not ``kplay``
    (whose ``kops_world`` empties the emulator)."""
    return saved_applied_cluster.restore()


@pytest.fixture
def cluster_play(applied_cluster):
    """``cluster_play(tasks, **kw)``: ``kplay`` on the :func:`applied_cluster` world."""

    def _play(tasks, **kwargs):
        return run_playbook(tasks, emulator=applied_cluster.emulator, kops=applied_cluster.kops, **kwargs)

    return _play


@pytest.fixture
def kplay(kops_world):
    """``kplay(tasks, **kw)``: a playbook against the emulator with the kops options set for kops modules."""

    def _play(tasks, **kwargs):
        return run_playbook(tasks, emulator=kops_world.emulator, kops=kops_world.kops, **kwargs)

    return _play


# A file not in tests/file_costs.json yet (new since the last refresh) counts as this many seconds.
UNKNOWN_FILE_COST = 60


def pytest_collection_modifyitems(session, config, items):
    """Order the test files longest first (seconds from tests/file_costs.json, written by tools/test_costs.py),
    keeping the order of the tests inside each file. With ``--dist loadfile`` pytest-xdist hands the files out in
    this order (pytest.ini turns off its own reordering by test count, which put the many short unit files first
    and the few longest integration files last, leaving one worker idle at the end)."""
    path = os.path.join(ROOT, "tests", "file_costs.json")
    if not os.path.exists(path):
        return
    with open(path) as handle:
        costs = json.load(handle)

    def cost(item):
        return costs.get(os.path.relpath(str(item.path), ROOT), UNKNOWN_FILE_COST)

    items.sort(key=lambda item: -cost(item))


# Every skip the suite may report, in one place, with its reason (issue 29 item 11): {test file: words of the skip
# reason}. Any other skip (a missing tool, a probe that failed) fails the run, so breakage cannot hide as a skip.
ALLOWED_SKIPS = {
    "tests/integration/test_kops_faults.py": "lost answers to kops' creates take about 5 minutes a case; KOPSIBLE_LOST_FAULTS=1 runs them",
}
_SKIPS = []


def skip_reason(report):
    """The reason of a skipped test report (str): pytest keeps ``(path, line, 'Skipped: reason')``."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report):
    """Note each skip that :data:`ALLOWED_SKIPS` does not list (xdist replays the workers' reports here)."""
    if report.skipped and not hasattr(report, "wasxfail"):
        path, reason = report.nodeid.split("::", 1)[0], skip_reason(report)
        if ALLOWED_SKIPS.get(path) is None or ALLOWED_SKIPS[path] not in reason:
            _SKIPS.append("%s: %s" % (report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    """Fail the run (exit status 1) when a test was skipped for a reason :data:`ALLOWED_SKIPS` does not list."""
    if _SKIPS and not hasattr(session.config, "workerinput"):
        session.config.get_terminal_writer().line(
            "skips not listed in tests/conftest.py ALLOWED_SKIPS (each fails the run):\n  " + "\n  ".join(_SKIPS), red=True
        )
        if session.exitstatus == 0:
            session.exitstatus = 1
