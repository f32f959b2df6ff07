"""Every AWS call a module makes itself, refused in turn: no traceback, a clean failure naming the AWS
operation, and nothing written that the failure does not report.

Each scenario runs once through the counting fault proxy (tools/fault_proxy.py) to learn which AWS
operations the module's own boto3 client makes (the ``botocore`` client of the proxy's counters; kops'
calls come from the Go SDK and are left alone: kops' errors are covered by the kops tests). Then, for each
of those operations, the scenario runs again from the same start with every call of that operation
answered ``denied`` (403 ``AccessDenied``, ``UnauthorizedOperation`` for EC2: what AWS answers a caller
without the permission, never retried). The operations are found by the run, not listed here, so a new
AWS call in a module is covered the day it is added. The first denied run of a scenario goes through
``ansible-playbook``; the others run the module's real ``main()`` in this process (harness.in_process: the same module
code, without a controller and a module process per operation; a crash shows as ``Module failed`` and its traceback).
"""

import json

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import LOCK_FOLDER
from conftest import CLUSTER, SUBDOMAIN
from harness import in_process, snapshot
from harness.faults import faulty
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops
NODES = "nodes-us-east-1a"


def module_task(module, **options):
    return {"name": "step", "kopsible.kops.%s" % module: options, "ignore_errors": True}


def botocore_operations(stats):
    """The ``service:Operation`` names (sorted list) the modules' boto3 clients called in a counted run."""
    return sorted(op for op, entry in stats["operations"].items() if entry.get("clients", {}).get("botocore"))


def snapshot_and_store(world):
    """The emulator's whole state (AWS APIs) and every state-store object version: what a run may write."""
    return world.emulator.snapshot(), world.store_versions()


def assert_clean_failure(result, output, operation, before, after, world):
    """The failed run (``result``, the module's, and ``output``, what the run printed): a module failure (not an
    exception), its message naming ``operation``, no traceback anywhere in the output, and every write the emulator
    shows reported in the result."""
    text = json.dumps(result)
    assert result.get("failed") is True, (operation, result)
    assert "Traceback" not in output and "MODULE FAILURE" not in output, (operation, output[-3000:])
    service, name = operation.split(":")
    assert name in result["msg"], (operation, result["msg"])
    # the error AWS gave (a HEAD answer has no body: botocore then names the status, "(403) ... Forbidden")
    assert any(code in text for code in ("AccessDenied", "UnauthorizedOperation", "(403)")), (operation, result["msg"])
    written = result.get("written")
    assert isinstance(written, list), (operation, sorted(result))
    snapshot_before, store_before = before
    snapshot_after, store_after = after
    store_writes = sorted(set(store_after) - set(store_before))
    unreported = unreported_writes(snapshot_before, snapshot_after, store_writes, written)
    assert unreported == [], (operation, written, unreported)


def unreported_writes(snapshot_before, snapshot_after, store_writes, written):
    """Each write the emulator shows that no entry of ``written`` reports (list of str, empty when all are), one by
    one: a Route53 change needs an entry naming its hosted zone's id (``... (Z...)``, route53_subdomain's
    ``module.wrote``); a state-store object under the lock folder a ``lock ...`` entry (_state_store/guard.py); any
    other state-store object, and any other AWS resource, a kops command that writes (``kops ...``,
    KopsRunner.writes)."""
    kops = [w for w in written if w.startswith("kops ")]
    locks = [w for w in written if w.startswith("lock ")]
    found = []
    for line in snapshot.diff(json.loads(snapshot_before), json.loads(snapshot_after), limit=None):
        kind, change = line.split(": ", 1)
        ident = change[1:].split(" ", 1)[0]  # a record set's key starts with its zone's id
        service = kind.split("/", 1)[-1].split(".", 1)[0]  # '<partition or region>/<service>.<what>'
        if service == "route53":
            reported = kops or [w for w in written if "(%s)" % ident in w]
        elif service == "s3" and kind.endswith(".objects") and "/%s/" % LOCK_FOLDER in "/" + ident.split("/", 1)[-1]:
            reported = locks
        else:
            reported = kops
        if not reported:
            found.append(line[:300])
    for key, version in store_writes:
        if not (locks if key.split("/")[0] == LOCK_FOLDER or "/%s/" % LOCK_FOLDER in key else kops):
            found.append("state store %s@%s" % (key, version))
    return found


class Scenario:
    """One module run from a start state: ``prepare(world, kplay)`` makes the start, ``tasks()`` the run."""

    def __init__(self, name, prepare, task, check=False):
        self.name, self.prepare, self.task, self.check = name, prepare, task, check


def fresh(world, kplay):
    """Nothing but the kops world (parent zone, delegated subdomain, versioned bucket)."""


def created(world, kplay):
    result = kplay([{"name": "c", "kopsible.kops.kops_cluster": world.cluster_options()}]).result("c")
    assert not result.get("failed"), result.get("msg")


def applied(world, kplay):
    result = kplay([{"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True)}]).result("c")
    assert not result.get("failed"), result.get("msg")


SCENARIOS = [
    Scenario("route53_subdomain present", fresh, lambda w: module_task("route53_subdomain", name="team." + SUBDOMAIN, parent_zone=SUBDOMAIN)),
    Scenario("route53_subdomain absent", fresh, lambda w: module_task("route53_subdomain", name=SUBDOMAIN, parent_zone="example.org", state="absent")),
    Scenario("kops_cluster create", fresh, lambda w: module_task("kops_cluster", **w.cluster_options())),
    Scenario("kops_instancegroup edit", created, lambda w: module_task("kops_instancegroup", cluster=CLUSTER, name=NODES, min_size=2, max_size=2)),
    Scenario("kops_cluster delete", created, lambda w: module_task("kops_cluster", name=CLUSTER, state="absent")),
    Scenario("rolling_update preview", applied, lambda w: module_task("rolling_update", cluster=CLUSTER, cloudonly=True, force=True), check=True),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_aws_call_refused_in_turn(kops_world, scenario, request):
    world = kops_world

    def play(tasks, emulator=None, **kwargs):
        return run_playbook(tasks, emulator=emulator or world.emulator, kops=world.kops, **kwargs)

    scenario.prepare(world, play)
    start_state = "aws-call-failures:" + scenario.name
    world.emulator.save_state(start_state)  # the scenario's start, restored after each run that wrote (tests/conftest.py)
    request.addfinalizer(lambda: world.emulator.drop_state(start_state))
    with faulty(world.emulator) as counted:
        baseline = play([scenario.task(world)], emulator=counted, check=scenario.check)
        operations = botocore_operations(counted.proxy.stats())
    assert not baseline.result("step").get("failed"), baseline.result("step").get("msg")
    assert operations, "the module made no AWS call of its own"
    print("%s: %d operations: %s" % (scenario.name, len(operations), ", ".join(operations)))
    problems = []
    if not scenario.check:  # the counted run did the work: start again from the scenario's start
        world.emulator.restore_state(start_state)
    start = snapshot_and_store(world)
    for operation in operations:
        before = snapshot_and_store(world)
        if before != start:  # the last denied run left writes (reported): back to the start
            world.emulator.restore_state(start_state)
            before = snapshot_and_store(world)
            assert before == start
        with faulty(world.emulator, rate=1.0, mix={"denied": 1}, operations=[operation], clients=["botocore"]) as denied:
            if operation == operations[0]:  # the first through ansible-playbook (the controller's part), the rest in process
                run = play([scenario.task(world)], emulator=denied, check=scenario.check)
                result, output = run.result("step"), run.stdout + run.stderr
            else:
                result = in_process.run_task(scenario.task(world), denied, kops=world.kops, check_mode=scenario.check)
                output = json.dumps(result)
            faults = denied.proxy.stats()["operations"].get(operation, {}).get("faults", 0)
        after = snapshot_and_store(world)
        print("  %s denied %d times: %s" % (operation, faults, (result.get("msg") or "")[:200]))
        if not faults:
            continue  # the operation was only called on a path this run did not take (e.g. after a retry)
        try:
            assert_clean_failure(result, output, operation, before, after, world)
        except AssertionError as exc:
            problems.append("%s: %s" % (operation, str(exc)[:1500]))
    assert problems == [], "\n".join(problems)
