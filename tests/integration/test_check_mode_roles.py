"""Every role in check mode against a populated emulator (delegated subdomain, versioned state store, an applied
HA cluster) with changes to make: the emulator's state (Emulator.snapshot: every resource read through the AWS APIs), the state-store
objects and their versions, and a kubeconfig file are byte-identical before and after."""

import hashlib

import pytest

from conftest import BUCKET, CLUSTER, PARENT, SUBDOMAIN

pytestmark = pytest.mark.kops


def include(role, **variables):
    return {"name": role, "ansible.builtin.include_role": {"name": "kopsible.kops." + role}, "vars": variables}


def test_every_role_in_check_mode_writes_nothing(applied_cluster, cluster_play, tmp_path):
    kops_world, kplay = applied_cluster, cluster_play  # the guide's HA cluster, applied (tests/conftest.py)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")

    kops = dict(kops_state_store="s3://" + BUCKET, kops_binary=kops_world.kops["kops_binary"], kops_env=kops_world.kops["kops_env"])
    roles = [
        # a new subdomain to delegate, a new bucket, a cluster change, a scale-up, an upgrade, a deletion, IAM
        include("subdomain_delegation", subdomain_delegation_name="other." + PARENT, subdomain_delegation_parent_zone=PARENT),
        include("state_store", state_store_bucket="kopsible-new-state"),
        include(
            "cluster",
            cluster_name=CLUSTER,
            cluster_cloud_labels={"team": "platform"},
            cluster_apply=True,
            cluster_export_kubeconfig=True,
            cluster_kubeconfig=str(kubeconfig),
            **kops,
        ),
        include("instancegroups", instancegroups_cluster=CLUSTER, instancegroups_list=[{"name": "nodes-us-east-1a", "min_size": 3, "max_size": 3}], **kops),
        # no control plane runs for this cluster here, so no etcd-manager backs it up: the backup check is off
        include(
            "upgrade",
            upgrade_cluster=CLUSTER,
            upgrade_kubernetes_version="1.35.0",
            upgrade_cloudonly=True,
            upgrade_validate=False,
            upgrade_etcd_backup_max_age="",
            **kops,
        ),
        include("teardown", teardown_cluster=CLUSTER, teardown_dns_zone=SUBDOMAIN, **kops),
        include("kops_iam", kops_iam_group_name="kops-check", kops_iam_user_name="kops-check"),
    ]
    state, store, versions = kops_world.emulator.snapshot(), kops_world.store(), kops_world.store_versions()
    digest = hashlib.sha256(kubeconfig.read_bytes()).hexdigest()

    run = kplay(roles, check=True)
    assert run.rc == 0, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or (run.stdout[-2000:] + run.stderr[-2000:])
    changed = {name.split(" : ")[0] for name, result in run.results if result.get("changed")}
    # each role had something to do, and said so
    for role in ("subdomain_delegation", "state_store", "cluster", "instancegroups", "upgrade", "teardown", "kops_iam"):
        assert any(role in name for name in changed), (role, sorted(changed))

    after = kops_world.emulator.snapshot()
    assert after == state, kops_world.emulator.snapshot_diff(state, after)
    assert kops_world.store() == store and kops_world.store_versions() == versions
    assert hashlib.sha256(kubeconfig.read_bytes()).hexdigest() == digest
