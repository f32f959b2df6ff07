"""playbooks/fleet_upgrade.yml over the kopsible.kops.kops inventory: three gossip clusters made with the real
kops in one state store; the canary upgrades, the next cluster fails (its version is newer than the target: a
downgrade, refused before anything is written), the rollout stops there and names it, and the last cluster is not
touched."""

import os
import subprocess
import sys

import pytest
import yaml

from harness import fleet
from harness.playbook import PlaybookRun, ansible_env

pytestmark = pytest.mark.kops
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "fleet-state"
CLUSTERS = {"c0.k8s.local": ("1.34.1", "canary"), "c1.k8s.local": ("1.36.0", "wave1"), "c2.k8s.local": ("1.34.1", "wave1")}


def kops_settings():
    return fleet.kops_settings(BUCKET)


def stored_version(emulator, cluster):
    return fleet.stored_version(emulator, BUCKET, cluster)


def test_fleet_rollout_stops_at_the_failing_cluster(emulator, ssh_public_key, tmp_path):
    fleet.make_fleet(emulator, BUCKET, {name: (version, {"rollout": wave}) for name, (version, wave) in CLUSTERS.items()}, ssh_public_key)

    inventory = fleet.inventory_file(tmp_path / "fleet.kops.yml", emulator, BUCKET, keyed_groups=[{"key": "cloud_labels.rollout", "prefix": "rollout"}])
    extra = dict(
        kops_settings(),
        fleet_kubernetes_version="1.35.0",
        fleet_canary="rollout_canary",
        fleet_batch_size=1,
        aws_endpoint_url=emulator.url,
        aws_region="us-east-1",
        **fleet.CLOUD_ONLY_UPGRADE,
    )
    extra_file = tmp_path / "extra.yml"
    extra_file.write_text(yaml.safe_dump(extra))
    env = ansible_env(emulator, {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i",
            str(inventory),
            "-e",
            "@" + str(extra_file),
            os.path.join(ROOT, "playbooks", "fleet_upgrade.yml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=1500,
    )
    run = PlaybookRun(proc.returncode, proc.stdout, proc.stderr)
    assert run.rc != 0, "the rollout should have failed"
    # the role applies the control plane without a second dry run: its pre-flight step showed the plan
    applied = [r for n, r in run.results if "Control plane - set the version and apply the control-plane groups alone" in n and not r.get("skipped")]
    assert applied and applied[0]["changed"] is True and applied[0]["plan"] is None, applied
    assert [c["argv"][1:3] for c in applied[0]["kops_invocations"] if "--yes" not in c["argv"]].count(["update", "cluster"]) == 0
    summary = run.result("Show the rollout")["fleet_summary"]
    assert summary["c0.k8s.local"]["status"] == "upgraded" and summary["c0.k8s.local"]["version"] == "1.35.0"
    assert summary["c1.k8s.local"]["status"] == "failed"
    error = summary["c1.k8s.local"]["error"]  # in the role's variable names (issue 33 item 11)
    assert "upgrade_kubernetes_version: 1.35.0 is older than the cluster's 1.36.0; downgrades are refused (upgrade_allow_version_skip: true" in error, error
    assert summary["c2.k8s.local"] == {"status": "not started"}
    stopped = run.result("The rollout must not have stopped")
    assert "rollout stopped at cluster c1.k8s.local" in stopped["msg"] and "c2.k8s.local" in stopped["msg"]
    # read back from the state store: only the canary moved
    assert [stored_version(emulator, c) for c in sorted(CLUSTERS)] == ["1.35.0", "1.36.0", "1.34.1"]
