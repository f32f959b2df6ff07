"""State-store safety with the real kops against the emulator: the per-cluster lock (two concurrent runs, a
stale lock broken explicitly, a spec changed while waiting), previous object versions for roll-back, the
versioning warning, allowed_account_ids, and the protection label on deletion."""

import json
import os
import threading
import time

import pytest
import yaml

from conftest import BUCKET, CLUSTER

pytestmark = pytest.mark.kops
NODES = "nodes-us-east-1a"
LOCK_KEY = ".kopsible-locks/%s.json" % CLUSTER
ACCOUNT = "123456789012"  # the emulator's account (moto's default)


def ig_task(label="ig", **options):
    options.setdefault("cluster", CLUSTER)
    options.setdefault("name", NODES)
    return {"name": label, "kopsible.kops.kops_instancegroup": options, "ignore_errors": True}


def stored_size(world, name=NODES):
    body = world.emulator.client("s3").get_object(Bucket=BUCKET, Key="%s/instancegroup/%s" % (CLUSTER, name))["Body"].read()
    spec = yaml.safe_load(body)["spec"]
    return spec["minSize"], spec["maxSize"]


def wait_for_process(words, endpoint, timeout=120):
    """Block until a process whose command line holds all ``words`` and whose environment names ``endpoint`` (the
    emulator's URL, which the modules give kops as S3_ENDPOINT) has started and exited (read from /proc). The endpoint
    tells this test's kops from the kops of the tests other workers run at the same time on the same cluster name (a
    full run saw another worker's ``kops get all`` end the wait before this test's run had read the spec)."""
    marker = ("S3_ENDPOINT=" + endpoint).encode()

    def running():
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    argv = handle.read().decode(errors="replace").split("\0")
                if not all(w in argv for w in words):
                    continue
                with open("/proc/%s/environ" % pid, "rb") as handle:
                    if marker in handle.read().split(b"\0"):
                        return True
            except (IOError, OSError):
                continue
        return False

    deadline = time.monotonic() + timeout
    while not running():
        assert time.monotonic() < deadline, "no process %s appeared" % words
        time.sleep(0.05)
    while running():
        assert time.monotonic() < deadline, "process %s did not end" % words
        time.sleep(0.05)


def lock_exists(world):
    s3 = world.emulator.client("s3")
    return bool(s3.list_objects_v2(Bucket=BUCKET, Prefix=LOCK_KEY).get("KeyCount"))


@pytest.fixture
def protected(kops_world, kplay):
    options = kops_world.cluster_options(apply=True, cloud_labels={"kopsible.io/protected": "true", "team": "platform"})
    result = kplay([{"name": "c", "kopsible.kops.kops_cluster": options}]).result("c")
    assert not result.get("failed"), result.get("msg")
    return kops_world


def test_lock_versions_accounts_and_protection(protected, kplay):
    world = protected
    s3 = world.emulator.client("s3")

    # previous_versions: the version a replace overwrote, and it restores the old spec
    key = "%s/instancegroup/%s" % (CLUSTER, NODES)
    before_version = s3.head_object(Bucket=BUCKET, Key=key)["VersionId"]
    scaled = kplay([ig_task(min_size=2, max_size=2)]).result("ig")
    assert not scaled.get("failed"), scaled.get("msg")
    assert scaled["previous_versions"] == {"s3://%s/%s" % (BUCKET, key): before_version}
    assert scaled["state_store_safety"]["versioning_warning"] is None
    assert scaled["state_store_safety"]["lock"]["url"] == "s3://%s/%s" % (BUCKET, LOCK_KEY)
    assert not lock_exists(world)  # released
    assert stored_size(world) == (2, 2)
    old = s3.get_object(Bucket=BUCKET, Key=key, VersionId=before_version)["Body"].read()
    assert yaml.safe_load(old)["spec"]["minSize"] == 1

    # a no-op run takes no lock and writes nothing
    versions = world.store_versions()
    noop = kplay([ig_task(min_size=2, max_size=2)]).result("ig")
    assert noop["changed"] is False and noop["state_store_safety"]["lock"] is None and noop["previous_versions"] == {}
    assert world.store_versions() == versions

    # two concurrent runs on one cluster: one waits for the other's lock, gives up after lock_timeout, names it
    results = {}

    def run(label, size):
        results[label] = kplay([ig_task(label, min_size=size, max_size=size, apply=True, lock_timeout=1)]).result(label)

    threads = [threading.Thread(target=run, args=("a", 3)), threading.Thread(target=run, args=("b", 4))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [label for label, r in results.items() if r.get("failed")]
    assert len(failed) == 1, {k: r.get("msg") for k, r in results.items()}
    loser, winner = failed[0], ({"a", "b"} - set(failed)).pop()
    assert "is held by kopsible.kops.kops_instancegroup (cluster %s)" % CLUSTER in results[loser]["msg"]
    assert "lock_timeout" in results[loser]["msg"] and "break_lock" in results[loser]["msg"]
    assert stored_size(world) == ((3, 3) if winner == "a" else (4, 4))
    assert not lock_exists(world)

    # a waiting run whose spec was changed by the holder fails before writing (it planned from a spec that is gone)
    holder = {"owner": "kops_instancegroup (cluster %s)" % CLUSTER, "token": "someone-else", "since": "2026-11-30T00:00:00Z"}
    s3.put_object(Bucket=BUCKET, Key=LOCK_KEY, Body=json.dumps(holder).encode())

    def other_run_finishes():
        # once the waiting run's `kops get` has come and gone it has read the spec and waits for the lock
        wait_for_process(["get", "all", "--name", CLUSTER], world.emulator.url)
        time.sleep(1)
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode().replace("maxSize: %d" % stored_size(world)[1], "maxSize: 7")
        s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
        s3.delete_object(Bucket=BUCKET, Key=LOCK_KEY)

    read_max = stored_size(world)[1]
    finisher = threading.Thread(target=other_run_finishes)
    finisher.start()
    waited = kplay([ig_task("w", min_size=5, max_size=5, lock_timeout=60)]).result("w")
    finisher.join()
    # it planned again on the new spec under the lock (issue 16 item 15), and the other run changed a field it sets
    assert waited.get("failed") and "another run changed fields this run sets" in waited["msg"], waited.get("msg")
    assert waited["conflicting_fields"] == ["spec.maxSize (was %d when this run read it, now 7; this run sets 5)" % read_max]
    assert waited["state_store_safety"]["lock"]["replanned"] is True
    assert stored_size(world)[1] == 7 and stored_size(world)[0] != 5
    assert not lock_exists(world)

    # a crashed run's stale lock: fails after lock_timeout naming the holder; break_lock removes it
    stale = {"owner": "crashed pipeline #41", "token": "dead", "since": "2026-11-29T23:00:00Z"}
    s3.put_object(Bucket=BUCKET, Key=LOCK_KEY, Body=json.dumps(stale).encode())
    blocked = kplay([ig_task("s", min_size=1, max_size=1, lock_timeout=2)]).result("s")
    assert blocked.get("failed") and "crashed pipeline #41" in blocked["msg"], blocked.get("msg")
    assert blocked["lock_holder"]["owner"] == "crashed pipeline #41"
    broken = kplay([ig_task("s", min_size=1, max_size=1, lock_timeout=2, break_lock=True)]).result("s")
    assert not broken.get("failed"), broken.get("msg")
    assert broken["state_store_safety"]["lock"]["broken"]["owner"] == "crashed pipeline #41"
    assert stored_size(world) == (1, 1) and not lock_exists(world)

    # allowed_account_ids: the wrong account fails before anything is written, in every kops module
    versions = world.store_versions()
    wrong = kplay(
        [
            ig_task("i", min_size=2, max_size=2, allowed_account_ids=["111111111111"]),
            {
                "name": "r",
                "kopsible.kops.rolling_update": {"cluster": CLUSTER, "cloudonly": True, "allowed_account_ids": ["111111111111"]},
                "ignore_errors": True,
            },
            {
                "name": "d",
                "kopsible.kops.kops_cluster": {"name": CLUSTER, "state": "absent", "force": True, "allowed_account_ids": ["111111111111"]},
                "ignore_errors": True,
            },
        ]
    )
    for label in ("i", "r", "d"):
        result = wrong.result(label)
        assert result.get("failed") and "account %s, which is not one of 111111111111" % ACCOUNT in result["msg"], result.get("msg")
        assert not result.get("kops_invocations")
    assert world.store_versions() == versions and stored_size(world) == (1, 1)
    right = kplay([ig_task("i", min_size=2, max_size=2, allowed_account_ids=[ACCOUNT, "111111111111"])]).result("i")
    assert not right.get("failed") and right["state_store_safety"]["account"] == ACCOUNT

    # the protection label: deletion refused (nothing deleted) unless force
    groups, versions = world.groups(), world.store_versions()
    refused = kplay([{"name": "d", "kopsible.kops.kops_cluster": {"name": CLUSTER, "state": "absent"}, "ignore_errors": True}]).result("d")
    assert refused.get("failed") and "protected by its cloud label kopsible.io/protected=true" in refused["msg"]
    assert world.groups() == groups and world.store_versions() == versions  # no object deleted (no delete marker)
    assert not [c for c in refused["kops_invocations"] if c["argv"][1] == "delete"]
    forced = kplay([{"name": "d", "kopsible.kops.kops_cluster": {"name": CLUSTER, "state": "absent", "force": True}, "ignore_errors": True}]).result("d")
    assert not forced.get("failed"), forced.get("msg")
    assert forced["changed"] is True and world.groups() == {}


def test_versioning_off_is_a_warning(kops_world, kplay):
    s3 = kops_world.emulator.client("s3")
    s3.create_bucket(Bucket="kopsible-plain")
    run = kplay([{"name": "a", "kopsible.kops.kops_cluster": {"name": CLUSTER, "state": "absent", "state_store": "s3://kopsible-plain"}}]).result("a")
    assert run["changed"] is False
    assert "versioning of bucket kopsible-plain is off" in run["state_store_safety"]["versioning_warning"]
    assert any("versioning of bucket kopsible-plain" in w for w in run.get("warnings", []))
    assert s3.list_objects_v2(Bucket="kopsible-plain").get("KeyCount") == 0


def test_concurrent_runs_on_one_cluster_both_succeed(applied_cluster, cluster_play):
    """Issue 16 item 15: two playbooks at once on one cluster, one changing cloud_labels with kops_cluster, the other
    scaling an InstanceGroup with kops_instancegroup, both apply: true. A lock held by the test until both have read
    the spec makes them meet: the one that waits re-reads the spec under the lock, plans again on it and applies;
    both succeed, the end state holds both changes, a third identical run is changed=false."""
    kops_world, kplay = applied_cluster, cluster_play  # the guide's HA cluster, applied (tests/conftest.py)
    s3 = kops_world.emulator.client("s3")
    holder = {"owner": "the test, until both runs have read the spec", "token": "test", "since": "2026-12-01T00:00:00Z"}
    s3.put_object(Bucket=BUCKET, Key=LOCK_KEY, Body=json.dumps(holder).encode())

    labels = {"name": "labels", "kopsible.kops.kops_cluster": {"name": CLUSTER, "cloud_labels": {"cost-center": "42"}, "apply": True}, "ignore_errors": True}
    scale = ig_task("scale", min_size=2, max_size=2, apply=True)
    results = {}
    readers = [
        threading.Thread(target=wait_for_process, args=(words, kops_world.emulator.url))
        for words in (["get", "cluster", CLUSTER], ["get", "all", "--name", CLUSTER])
    ]
    for reader in readers:
        reader.start()
    plays = [threading.Thread(target=lambda t=t: results.update({t["name"]: kplay([t]).result(t["name"])})) for t in (labels, scale)]
    for play in plays:
        play.start()
    for reader in readers:
        reader.join()
    time.sleep(1)
    s3.delete_object(Bucket=BUCKET, Key=LOCK_KEY)
    for play in plays:
        play.join()

    for name, result in results.items():
        assert not result.get("failed"), (name, result.get("msg"))
        assert result["changed"] is True
    replanned = [n for n, r in results.items() if r["state_store_safety"]["lock"]["replanned"]]
    assert len(replanned) == 1, {n: r["state_store_safety"] for n, r in results.items()}
    # the end state holds both changes: the spec in the state store, and the cloud
    config = yaml.safe_load(s3.get_object(Bucket=BUCKET, Key="%s/config" % CLUSTER)["Body"].read())
    assert config["spec"]["cloudLabels"] == {"cost-center": "42"}
    assert stored_size(kops_world) == (2, 2)
    group = kops_world.emulator.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=["%s.%s" % (NODES, CLUSTER)])["AutoScalingGroups"][0]
    assert (group["MinSize"], group["MaxSize"], len(group["Instances"])) == (2, 2, 2)
    assert {"Key": "cost-center", "Value": "42"} in [{"Key": t["Key"], "Value": t["Value"]} for t in group["Tags"]]
    assert not lock_exists(kops_world)

    third = kplay([labels, scale])
    for name in ("labels", "scale"):
        assert third.result(name)["changed"] is False, (name, third.result(name).get("plan_summary"))


def test_state_store_lifecycle_rule_read_back_idempotent_and_refused_below_one_day(emulator):
    """Issue 34: the state_store role's lifecycle rule as S3 reports it, unchanged by a second run; NoncurrentDays
    below 1, which S3 refuses (S3 API Reference, NoncurrentVersionExpiration), is refused before anything is written."""
    from harness.playbook import run_playbook

    def role(**variables):
        variables = dict(state_store_bucket="kopsible-lifecycle", **variables)
        return {"name": "state store", "ansible.builtin.include_role": {"name": "kopsible.kops.state_store"}, "vars": variables}

    refused = run_playbook([role(state_store_noncurrent_version_days=0)], emulator=emulator)
    assert refused.rc != 0 and refused.failed, refused.stdout[-2000:]
    message = next(r for n, r in refused.results if r.get("failed"))["msg"]
    assert "state_store_noncurrent_version_days: 0 is not a whole number of days of 1 or more (S3 refuses NoncurrentDays below 1" in message, message
    assert "kopsible-lifecycle" not in [b["Name"] for b in emulator.client("s3").list_buckets()["Buckets"]]

    first = run_playbook([role(state_store_noncurrent_version_days=30)], emulator=emulator)
    assert first.rc == 0, first.stdout[-2000:]
    [rule] = emulator.client("s3").get_bucket_lifecycle_configuration(Bucket="kopsible-lifecycle")["Rules"]
    assert rule["ID"] == "kopsible-state-store-versions" and rule["Status"] == "Enabled"
    assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30 and rule["Expiration"]["ExpiredObjectDeleteMarker"] is True
    assert rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] == 7
    again = run_playbook([role(state_store_noncurrent_version_days=30)], emulator=emulator)
    assert again.rc == 0 and [n for n, r in again.results if r.get("changed")] == [], [n for n, r in again.results if r.get("changed")]
