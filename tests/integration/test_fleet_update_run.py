"""playbooks/fleet_update_run.yml over the kopsible.kops.kops inventory (issue 31): four gossip clusters made with the
real kops in one state store, a run of three stages (canary c0; then the other clusters with the cloud label tier=prod
in waves of two, chosen from the inventory: wave1 c1 and c2 after a 2 s soak, wave2 c3), the upgrade role per cluster
(cloud-only: these clusters have no control plane), the record in S3.

The canary fails (its version is newer than the target: a downgrade, refused before anything is written) and the run
halts before any wave starts, naming why for each cluster. After the fix (the canary's version set back, as a person
would with kops), a check-mode run plans every cluster per stage and publishes the plans with set_stats, writing
nothing; an approved run refuses to start while a cluster differs from the approved plan (named), and once it holds
again the same run resumes: the canary is tried again, then the waves; every cluster ends at the target, read back
from the state store. A third run changes nothing: every cluster is done, none is upgraded twice."""

import datetime
import json
import os
import time

import pytest
import yaml

from harness import fleet
from harness.kops_env import KOPS_VERSION, UBUNTU_AMI
from harness.playbook import run_playbook
from harness.store_factory import run_kops

pytestmark = pytest.mark.kops
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "fleet-run-state"
CLUSTERS = {"c0.k8s.local": "1.36.0", "c1.k8s.local": "1.34.1", "c2.k8s.local": "1.34.1", "c3.k8s.local": "1.34.1"}
PLAN = {
    "change": {"kubernetes_version": "1.35.0"},
    "stages": [
        {"name": "canary", "clusters": ["c0.k8s.local"], "soak": "2s"},
        # the other clusters labelled tier=prod (c1, c2, c3), two a wave: the record's stages wave1 (c1, c2), wave2 (c3)
        {"name": "wave", "select": {"labels": {"tier": "prod"}}, "wave_size": 2},
    ],
}


def stored_version(emulator, cluster):
    return fleet.stored_version(emulator, BUCKET, cluster)


def record(emulator):
    return json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/upgrade-1.35.json")["Body"].read())


def run_fleet(emulator, tmp_path, holder, check=False, **more):
    more.setdefault("fleet_run_name", "upgrade-1.35")
    more.setdefault("fleet_run_plan", PLAN)
    return fleet.run_update(emulator, tmp_path, BUCKET, more.pop("fleet_run_name"), more.pop("fleet_run_plan"), holder, check=check, **more)


def test_a_failed_canary_halts_the_run_and_the_approved_rerun_after_the_fix_resumes_it(emulator, ssh_public_key, tmp_path):
    fleet.make_fleet(emulator, BUCKET, {name: (version, {"tier": "prod"}) for name, version in CLUSTERS.items()}, ssh_public_key)
    s3 = emulator.client("s3")

    first = run_fleet(emulator, tmp_path, "job-1")
    assert first.rc != 0, first.stdout[-3000:]
    state = record(emulator)
    assert state["clusters"]["c0.k8s.local"]["state"] == "failed"
    assert "downgrades are refused" in state["clusters"]["c0.k8s.local"]["reason"], state["clusters"]["c0.k8s.local"]
    assert {c: state["clusters"][c]["state"] for c in ("c1.k8s.local", "c2.k8s.local", "c3.k8s.local")} == dict.fromkeys(
        ("c1.k8s.local", "c2.k8s.local", "c3.k8s.local"), "pending"
    )
    where = first.result("Fleet update run - where each cluster stands")["msg"]
    assert "c1.k8s.local: not started: the run halted: 1 cluster(s) failed (c0.k8s.local), more than max_failures 0" in where, where
    assert "the run has failed clusters: c0.k8s.local" in first.result("Fleet update run - no cluster failed")["msg"]
    assert state["holder"] is None  # given up at the end: the next run needs no takeover
    assert [stored_version(emulator, c) for c in sorted(CLUSTERS)] == ["1.36.0", "1.34.1", "1.34.1", "1.34.1"]

    # the fix, as a person makes it with kops: the canary's version set back
    config = yaml.safe_load(s3.get_object(Bucket=BUCKET, Key="c0.k8s.local/config")["Body"].read())
    config["spec"]["kubernetesVersion"] = "1.34.1"
    manifest = tmp_path / "c0.yaml"
    manifest.write_text(yaml.safe_dump(config))
    run_kops(emulator, "s3://" + BUCKET, ["replace", "-f", str(manifest)])

    # plans before action: the check-mode run plans every cluster, whatever its stage's gates, and writes nothing
    before = emulator.snapshot()
    preview = run_fleet(emulator, tmp_path, "job-2", check=True)
    assert preview.rc == 0, preview.stdout[-3000:]
    assert emulator.snapshot() == before, emulator.snapshot_diff(before, emulator.snapshot())
    plans = preview.custom_stats["fleet_run_preflight"]
    assert {c: p["stage"] for c, p in plans.items()} == {"c0.k8s.local": "canary", "c1.k8s.local": "wave1", "c2.k8s.local": "wave1", "c3.k8s.local": "wave2"}
    assert all(any("1.35.0" in step for step in p["steps"]) for p in plans.values()), plans
    shown = preview.result("Fleet update run - every cluster's plan, per stage (check mode)")["msg"]
    assert [line.split(":")[0] for line in shown] == ["canary c0.k8s.local", "wave1 c1.k8s.local", "wave1 c2.k8s.local", "wave2 c3.k8s.local"], shown
    approved = preview.custom_stats["fleet_run_approved_plan"]
    assert sorted(approved) == sorted(CLUSTERS) and approved["c3.k8s.local"]["state_store"] == "s3://" + BUCKET

    # someone changes c3 after the approval: the approved run refuses, naming it and what changed, and writes nothing
    ig_key = next(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="c3.k8s.local/instancegroup/")["Contents"])
    original = s3.get_object(Bucket=BUCKET, Key=ig_key)["Body"].read()
    group = yaml.safe_load(original)
    group["spec"]["maxSize"] = group["spec"]["maxSize"] + 1
    s3.put_object(Bucket=BUCKET, Key=ig_key, Body=yaml.safe_dump(group).encode())
    stored = record(emulator)
    refused = run_fleet(emulator, tmp_path, "job-2", fleet_run_approved_plan=approved)
    assert refused.rc != 0
    msg = refused.result("Fleet update run - the run's record (made, or resumed with the same plan)")["msg"]
    assert "the approved plan no longer holds, so no cluster starts: c3.k8s.local: %s changed" % ig_key[len("c3.k8s.local/") :] in msg, msg
    assert record(emulator) == stored
    s3.put_object(Bucket=BUCKET, Key=ig_key, Body=original)  # changed back: the approved plan holds again

    second = run_fleet(emulator, tmp_path, "job-2", fleet_run_approved_plan=approved)
    assert second.rc == 0, second.stdout[-3000:]
    state = record(emulator)
    assert {c: (e["state"], e["attempts"]) for c, e in state["clusters"].items()} == {
        "c0.k8s.local": ("done", 2),
        "c1.k8s.local": ("done", 1),
        "c2.k8s.local": ("done", 1),
        "c3.k8s.local": ("done", 1),
    }
    starts = [e["cluster"] for e in state["events"] if e["event"] == "start"]
    assert starts[0] == "c0.k8s.local" and starts[1] == "c0.k8s.local" and starts[-1] == "c3.k8s.local", starts  # stage order
    canary_done = next(e["at"] for e in state["events"] if e["event"] == "done" and e["cluster"] == "c0.k8s.local")
    first_wave = next(e["at"] for e in state["events"] if e["event"] == "start" and e["cluster"] in ("c1.k8s.local", "c2.k8s.local"))
    assert first_wave > canary_done  # the soak after the canary (ISO times in UTC compare as text)
    assert [stored_version(emulator, c) for c in sorted(CLUSTERS)] == ["1.35.0"] * 4

    third = run_fleet(emulator, tmp_path, "job-3")
    assert third.rc == 0, third.stdout[-3000:]
    claims = [r for n, r in third.results if n == "Fleet update run - may this cluster start now?"]
    assert len(claims) == 4 and all(not c["proceed"] and c["why"].startswith("done at ") for c in claims), claims
    assert not [n for n, r in third.results if "upgrade this cluster" in n and not r.get("skipped")]  # nothing rolled twice
    assert record(emulator)["clusters"] == state["clusters"]


# the newer Ubuntu 24.04 image of the emulator's catalogue (tools/emulator_amis.json; the clusters start on UBUNTU_AMI)
NEW_IMAGE = "ami-0a1b2c3d4e5f60003"
WAVE = {"stages": [{"name": "canary", "clusters": ["i0.k8s.local"]}, {"name": "wave1", "clusters": ["i1.k8s.local"]}]}


def group_instances(emulator, cluster):
    """``{Auto Scaling group name: [(instance id, image id)]}`` of ``cluster``, read from the emulator's EC2."""
    groups = emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    ec2 = emulator.client("ec2")
    out = {}
    for group in groups:
        if not group["AutoScalingGroupName"].endswith("." + cluster):
            continue
        ids = sorted(i["InstanceId"] for i in group["Instances"])
        images = {i["InstanceId"]: i["ImageId"] for r in ec2.describe_instances(InstanceIds=ids)["Reservations"] for i in r["Instances"]} if ids else {}
        out[group["AutoScalingGroupName"]] = [(i, images[i]) for i in ids]
    return out


def kops_version_applied(emulator, cluster):
    return emulator.client("s3").get_object(Bucket=BUCKET, Key=cluster + "/kops-version.txt")["Body"].read().decode().strip()


def test_an_image_wave_rolls_the_chosen_groups_and_a_kops_bump_refuses_a_downgrade_before_any_write(emulator, ssh_public_key, tmp_path):
    names = ["i0.k8s.local", "i1.k8s.local"]
    fleet.make_fleet(emulator, BUCKET, {name: ("1.35.0", None) for name in names}, ssh_public_key)
    applied = run_playbook(
        [{"name": n, "kopsible.kops.kops_cluster": {"name": n, "apply": True}} for n in names], emulator=emulator, kops=fleet.kops_settings(BUCKET)
    )
    assert applied.rc == 0, applied.stdout[-3000:]
    before = {n: group_instances(emulator, n) for n in names}
    assert all(image == UBUNTU_AMI for n in names for members in before[n].values() for _, image in members), before

    # plans before action: check mode plans the image wave of every cluster and writes nothing
    image_wave = dict(WAVE, change={"image": {"image": NEW_IMAGE}})
    snapshot = emulator.snapshot()
    preview = run_fleet(emulator, tmp_path, "job-image", check=True, fleet_run_name="image-wave", fleet_run_plan=image_wave)
    assert preview.rc == 0, preview.stdout[-3000:]
    assert emulator.snapshot() == snapshot, emulator.snapshot_diff(snapshot, emulator.snapshot())
    plans = preview.custom_stats["fleet_run_preflight"]
    assert {c: p["steps"][0] for c, p in plans.items()} == {n: "image %s on nodes-us-east-1a" % NEW_IMAGE for n in names}, plans
    assert all(any("LaunchTemplate/nodes-us-east-1a" in line for line in p["cloud_plan"]) for p in plans.values()), plans
    assert sorted(preview.custom_stats["fleet_run_approved_plan"]) == names

    # the image wave: the Node groups (the default roles) get the new image, are applied and rolled, a cluster a stage
    wave = run_fleet(emulator, tmp_path, "job-image", fleet_run_name="image-wave", fleet_run_plan=image_wave)
    assert wave.rc == 0, wave.stdout[-3000:]
    state = json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/image-wave.json")["Body"].read())
    assert {c: (e["state"], e["attempts"]) for c, e in state["clusters"].items()} == {n: ("done", 1) for n in names}
    for name in names:
        after = group_instances(emulator, name)
        nodes, control_plane = "nodes-us-east-1a." + name, "control-plane-us-east-1a.masters." + name
        assert after[control_plane] == before[name][control_plane]  # not chosen: the same instance, the old image
        assert [image for _, image in after[nodes]] == [NEW_IMAGE] and after[nodes][0][0] != before[name][nodes][0][0], (before[name], after)
        stored = yaml.safe_load(emulator.client("s3").get_object(Bucket=BUCKET, Key=name + "/instancegroup/nodes-us-east-1a")["Body"].read())
        assert stored["spec"]["image"] == NEW_IMAGE
    rolled = [r["rolled"] for n, r in wave.results if n.startswith("Fleet change - roll what the change replaced")]
    assert [[g["name"] for g in r] for r in rolled] == [["nodes-us-east-1a"], ["nodes-us-east-1a"]], rolled

    # a maintenance window that closes mid-run: the window is the minute (UTC) the run starts in, 25 s before its end.
    # The canary starts inside it and finishes after it closed (kops waits the 30 s node interval after replacing its
    # node); wave1's claim comes after that: i1 does not start, and the run reports it waiting for the window (which
    # opens again tomorrow at that minute)
    image_back = dict(WAVE, change={"image": {"image": UBUNTU_AMI}})
    time.sleep((35 - time.time() % 60) % 60)
    opens = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    closes = opens + datetime.timedelta(minutes=1)
    image_back["window"] = {"start": opens.strftime("%H:%M"), "end": closes.strftime("%H:%M"), "timezone": "UTC"}
    windowed = run_fleet(emulator, tmp_path, "job-window", fleet_run_name="image-back", fleet_run_plan=image_back, upgrade_node_interval="30s")
    assert windowed.rc == 0, windowed.stdout[-3000:]  # waiting for a window is not a failure
    state = json.loads(emulator.client("s3").get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/image-back.json")["Body"].read())
    assert {c: e["state"] for c, e in state["clusters"].items()} == {"i0.k8s.local": "done", "i1.k8s.local": "pending"}, windowed.stdout[-3000:]
    [canary_start] = [e["at"] for e in state["events"] if e["event"] == "start"]  # i1 never started
    [canary_done] = [e["at"] for e in state["events"] if e["event"] == "done"]
    assert canary_start < closes.isoformat().replace("+00:00", "Z") <= canary_done, (canary_start, closes, canary_done)
    where = windowed.result("Fleet update run - where each cluster stands")["msg"]
    tomorrow = (opens + datetime.timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert "i1.k8s.local: not started: waiting for the maintenance window (opens %s)" % tomorrow in where, where
    assert [image for members in group_instances(emulator, "i0.k8s.local").values() for _, image in members] == [UBUNTU_AMI] * 2
    i1 = group_instances(emulator, "i1.k8s.local")
    assert i1["nodes-us-east-1a.i1.k8s.local"][0][1] == NEW_IMAGE  # wave1 untouched

    # a kops bump with a binary older than the kops that last applied i1 is refused before anything is written
    bump = dict(WAVE, change={"kops_version": KOPS_VERSION})
    s3 = emulator.client("s3")
    s3.put_object(Bucket=BUCKET, Key="i1.k8s.local/kops-version.txt", Body=b"1.37.0")  # what kops 1.37.0's apply leaves
    snapshot = emulator.snapshot()
    refused = run_fleet(emulator, tmp_path, "job-bump", fleet_run_name="kops-bump", fleet_run_plan=bump)
    assert refused.rc != 0
    msg = refused.result("Fleet update run - the run's record (made, or resumed with the same plan)")["msg"]
    assert "kops %s is older than the kops that last applied i1.k8s.local (1.37.0)" % KOPS_VERSION in msg, msg
    assert emulator.snapshot() == snapshot, emulator.snapshot_diff(snapshot, emulator.snapshot())
    # a plan for another kops than the play's binary is refused the same way
    other = run_fleet(emulator, tmp_path, "job-bump", fleet_run_name="kops-bump", fleet_run_plan=dict(WAVE, change={"kops_version": "1.36.9"}))
    assert other.rc != 0 and emulator.snapshot() == snapshot
    assert "the play runs kops %s, not 1.36.9" % KOPS_VERSION in other.stdout, other.stdout[-3000:]

    # clusters last applied with kops 1.35.1 (as that kops leaves kops-version.txt): the bump applies, rolls and
    # records them with the play's kops
    for name in names:
        s3.put_object(Bucket=BUCKET, Key=name + "/kops-version.txt", Body=b"1.35.1")
    bumped = run_fleet(emulator, tmp_path, "job-bump", fleet_run_name="kops-bump", fleet_run_plan=bump)
    assert bumped.rc == 0, bumped.stdout[-3000:]
    assert [kops_version_applied(emulator, n) for n in names] == [KOPS_VERSION] * 2
    state = json.loads(s3.get_object(Bucket=BUCKET, Key="kopsible-fleet-runs/kops-bump.json")["Body"].read())
    assert {c: e["state"] for c, e in state["clusters"].items()} == dict.fromkeys(names, "done")
    applies = [r for n, r in bumped.results if n.startswith("Fleet change - apply the cluster with this kops") and not r.get("skipped")]
    assert [r["invocation"]["module_args"]["name"] for r in applies] == names, applies
