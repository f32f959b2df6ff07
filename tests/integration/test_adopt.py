"""Issue 32, adopt: a cluster made with kops by hand (the guide's HA cluster plus a spot mixed-instances group with
taints and labels and a group with a warm pool) becomes variables and a playbook whose check-mode run changes nothing;
a changed variable gives exactly that change. Everything is read back from kops' own ``kops get`` and the state
store; the adoption writes nothing there."""

import json
import os

import yaml

from conftest import CLUSTER, SUBDOMAIN
from harness import store_factory
from harness.kops_env import UBUNTU_AMI
from harness.playbook import run_playbook

SPOT = store_factory.instance_group_manifest(
    CLUSTER,
    "spot",
    {
        "role": "Node",
        "machineType": "m5.large",
        "minSize": 0,
        "maxSize": 4,
        "subnets": ["us-east-1a", "us-east-1b"],
        "image": UBUNTU_AMI,
        "mixedInstancesPolicy": {
            "instances": ["m5.large", "m5a.large"],
            "onDemandBase": 0,
            "onDemandAboveBase": 0,
            "spotAllocationStrategy": "capacity-optimized",
        },
        "taints": ["dedicated=batch:NoSchedule"],
        "nodeLabels": {"workload": "batch"},
        "cloudLabels": {"team": "data"},
        "rollingUpdate": {"maxSurge": 1},
    },
)
WARM = store_factory.instance_group_manifest(
    CLUSTER,
    "warm",
    {
        "role": "Node",
        "machineType": "t3.medium",
        "minSize": 1,
        "maxSize": 3,
        "subnets": ["us-east-1c"],
        "image": UBUNTU_AMI,
        "warmPool": {"minSize": 1, "maxSize": 2},
        "rootVolumeSize": 40,
    },
    annotations={"example.com/owner": "team-a"},
)


def by_hand(world, tmp_path):
    """The cluster made with kops alone (no module of the collection): create cluster, then the two groups from
    manifests (``kops create -f``), as a person does."""
    key = tmp_path / "id.pub"
    key.write_text(world.ssh_public_key + "\n")
    store = world.kops["state_store"]
    store_factory.run_kops(
        world.emulator,
        store,
        [
            "create", "cluster", "--name", CLUSTER, "--cloud", "aws",
            "--zones", "us-east-1a,us-east-1b,us-east-1c", "--control-plane-zones", "us-east-1a,us-east-1b,us-east-1c",
            "--node-count", "2", "--node-size", "t3.medium", "--control-plane-size", "t3.medium",
            "--dns-zone", SUBDOMAIN, "--kubernetes-version", "1.34.1", "--channel", "none", "--image", UBUNTU_AMI,
            "--ssh-public-key", str(key),
        ],
        dns=world.dns,
    )  # fmt: skip
    for manifest in (SPOT, WARM):
        path = tmp_path / (manifest["metadata"]["name"] + ".yaml")
        path.write_text(yaml.safe_dump(manifest))
        store_factory.run_kops(world.emulator, store, ["create", "-f", str(path)], dns=world.dns)


def kops_groups(world):
    """``{name: InstanceGroup object}`` as ``kops get ig -o json`` prints them."""
    out = store_factory.run_kops(world.emulator, world.kops["state_store"], ["get", "ig", "--name", CLUSTER, "-o", "json"], dns=world.dns).stdout
    return {ig["metadata"]["name"]: ig for ig in json.loads(out)}


def defaults(world):
    """What the generated playbook reads as ``kopsible_defaults``: the emulator's AWS settings and the kops options."""
    env = world.emulator.aws_env()
    aws = {"endpoint_url": world.emulator.url, "region": "us-east-1", "access_key": env["AWS_ACCESS_KEY_ID"], "secret_key": env["AWS_SECRET_ACCESS_KEY"]}
    return dict(aws, **world.kops)


def test_a_cluster_made_by_hand_is_adopted_as_a_proven_no_op(kops_world, tmp_path):
    world = kops_world
    by_hand(world, tmp_path)
    stored = world.store_versions()
    dest = tmp_path / "adopted"
    run = run_playbook(
        [{"name": "adopt", "ansible.builtin.include_role": {"name": "kopsible.kops.adopt"}, "vars": {"adopt_cluster": CLUSTER, "adopt_dest": str(dest)}}],
        emulator=world.emulator,
        kops=world.kops,
    )
    assert not run.failed, [(n, r.get("msg")) for n, r in run.results if r.get("failed")]
    # the role's own proof: the cluster and each of its 8 groups through the modules in check mode, none changed
    cluster_proof = next(r for n, r in run.results if n.endswith("Prove it - the cluster's options change nothing (check mode)"))
    groups = next(r for n, r in run.results if n.endswith("Prove it - each InstanceGroup's options change nothing (check mode)"))["results"]
    assert cluster_proof["changed"] is False and cluster_proof["changes"] == []
    assert len(groups) == 8 and not any(g["changed"] for g in groups), [(g["item"]["name"], g.get("changes")) for g in groups]
    assert world.store_versions() == stored  # read only: no object written, no lock left

    adopted = yaml.safe_load((dest / "vars" / (CLUSTER + ".yml")).read_text())
    by_name = {g["name"]: g for g in adopted["adopted_instance_groups"]}
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    assert sorted(by_name) == sorted(kops_groups(world)) == ["control-plane-" + z for z in zones] + ["nodes-" + z for z in zones] + ["spot", "warm"]
    live = kops_groups(world)
    spot = by_name["spot"]
    assert (spot["machine_type"], spot["min_size"], spot["max_size"], spot["taints"], spot["node_labels"], spot["cloud_labels"]) == (
        "m5.large", 0, 4, ["dedicated=batch:NoSchedule"], {"workload": "batch"}, {"team": "data"}
    )  # fmt: skip
    assert spot["spec"]["mixedInstancesPolicy"] == live["spot"]["spec"]["mixedInstancesPolicy"]
    assert spot["spec"]["rollingUpdate"] == live["spot"]["spec"]["rollingUpdate"]
    assert by_name["warm"]["spec"]["warmPool"] == live["warm"]["spec"]["warmPool"] and by_name["warm"]["spec"]["rootVolumeSize"] == 40
    # the warm group's annotation has no option: named, not dropped silently
    report = next(r for n, r in run.results if n.endswith("Report the adoption"))["msg"]
    assert report["not_expressed"] == ["InstanceGroup warm.metadata.annotations.example.com/owner"]
    assert "example.com/owner" in (dest / "vars" / (CLUSTER + ".yml")).read_text().split("\nadopted_cluster:")[0]
    cluster = json.loads(store_factory.run_kops(world.emulator, world.kops["state_store"], ["get", "cluster", CLUSTER, "-o", "json"], dns=world.dns).stdout)
    assert adopted["adopted_cluster"] == {"name": CLUSTER, "spec": cluster["spec"]}

    # the generated playbook itself, as a user runs it: check mode reports no change for any task
    playbook = str(dest / (CLUSTER + ".yml"))
    check = run_playbook(playbook=playbook, emulator=world.emulator, extra_vars={"kopsible_defaults": defaults(world)}, check=True, diff=True)
    assert not check.failed, check.stdout[-3000:]
    ran = [r for n, r in check.results if "InstanceGroups of" in n or n.endswith("Cluster " + CLUSTER)]
    items = [item for r in ran for item in r.get("results", [r])]
    assert len(items) == 9 and not any(i.get("changed") for i in items), [(i.get("item", {}).get("name"), i.get("changes")) for i in items if i.get("changed")]

    # a changed variable gives exactly that change (check mode, nothing written)
    adopted["adopted_instance_groups"] = [dict(g, max_size=6) if g["name"] == "spot" else g for g in adopted["adopted_instance_groups"]]
    (dest / "vars" / (CLUSTER + ".yml")).write_text(yaml.safe_dump(adopted))
    changed = run_playbook(playbook=playbook, emulator=world.emulator, extra_vars={"kopsible_defaults": defaults(world)}, check=True, diff=True)
    assert not changed.failed, changed.stdout[-3000:]
    items = [item for n, r in changed.results if "InstanceGroups of" in n for item in r.get("results", [])]
    assert [(i["item"]["name"], i["changes"]) for i in items if i.get("changed")] == [("spot", [{"path": "spec.maxSize", "before": 4, "after": 6}])]
    assert world.store_versions() == stored
    assert os.path.exists(playbook)
