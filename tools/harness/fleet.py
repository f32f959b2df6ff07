"""A fleet of small gossip clusters in one state store, made with the real kops through kops_cluster (not applied:
no control plane runs for them), and the variables that upgrade them cloud-only with the upgrade role: what the
fleet playbooks' tests start from (test_fleet_upgrade, test_fleet_update_run)."""

import os

import yaml

from .emulator import ROOT
from .kops_env import UBUNTU_AMI, artifact_mirror, kops_binary
from .playbook import run_playbook

# upgrade role variables for clusters without a control plane: a cloud-only roll at 1 s intervals, no validation,
# no etcd backup check (no etcd-manager backs them up)
CLOUD_ONLY_UPGRADE = {
    "upgrade_cloudonly": True,
    "upgrade_validate": False,
    "upgrade_etcd_backup_max_age": "",
    "upgrade_control_plane_interval": "1s",
    "upgrade_node_interval": "1s",
    "upgrade_bastion_interval": "1s",
}


def kops_settings(bucket):
    """The kops options of the fleet's plays (dict; the binary is found when a test runs, so collecting needs no kops)."""
    return {
        "kops_binary": kops_binary(),
        "kops_env": {"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest"},
        "state_store": "s3://" + bucket,
    }


def make_fleet(emulator, bucket, clusters, ssh_public_key):
    """A versioned ``bucket`` and, in it, one cluster per ``clusters`` entry ``{name: (kubernetes version, cloud
    labels dict)}``: one zone, one control-plane node and one worker. Raises AssertionError when kops fails."""
    emulator.warm()
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    create = []
    for name, (version, labels) in sorted(clusters.items()):
        options = {
            "name": name,
            "zones": ["us-east-1a"],
            "node_count": 1,
            "node_size": "t3.medium",
            "control_plane_size": "t3.medium",
            "kubernetes_version": version,
            "channel": "none",
            "image": UBUNTU_AMI,
            "ssh_public_key": ssh_public_key,
        }
        if labels:
            options["cloud_labels"] = labels
        create.append({"name": name, "kopsible.kops.kops_cluster": options})
    made = run_playbook(create, emulator=emulator, kops=kops_settings(bucket))
    assert made.rc == 0, made.stdout[-3000:]


def stored_version(emulator, bucket, cluster):
    """The Kubernetes version in ``cluster``'s stored spec (str), read from the state store."""
    body = emulator.client("s3").get_object(Bucket=bucket, Key=cluster + "/config")["Body"].read()
    return yaml.safe_load(body)["spec"]["kubernetesVersion"]


def inventory_file(path, emulator, bucket, **options):
    """Write a ``*.kops.yml`` inventory source of the kopsible.kops.kops plugin for ``bucket`` to ``path``; returns it."""
    config = dict({"plugin": "kopsible.kops.kops", "state_stores": ["s3://" + bucket], "endpoint_url": emulator.url, "region": "us-east-1"}, **options)
    path.write_text(yaml.safe_dump(config))
    return path


def run_variables(emulator, bucket, run, plan, **more):
    """The extra variables of a playbooks/fleet_update_run.yml run (dict): the fleet's kops settings, the run's name,
    bucket and plan, the emulator as AWS, the cloud-only upgrade settings, then ``more``."""
    variables = dict(
        kops_settings(bucket),
        fleet_run_name=run,
        fleet_run_bucket=bucket,
        fleet_run_plan=plan,
        aws_endpoint_url=emulator.url,
        aws_region="us-east-1",
        **CLOUD_ONLY_UPGRADE,
    )
    variables.update(more)
    return variables


def run_update(emulator, workdir, bucket, run, plan, holder, check=False, resolv_conf=None, **more):
    """Run playbooks/fleet_update_run.yml as a user does (``ansible-playbook -i <the fleet's inventory file>``), with
    :func:`run_variables` (``more`` on top), the ansible.posix.json callback and ``set_stats`` shown; ``workdir`` (a
    pathlib.Path) gets the inventory file. With ``resolv_conf``, under tools/with-local-dns (live clusters' API names
    resolve through the emulator's DNS face). Returns a :class:`PlaybookRun`."""
    return run_playbook(
        playbook=os.path.join(ROOT, "playbooks", "fleet_update_run.yml"),
        inventory=inventory_file(workdir / "fleet.kops.yml", emulator, bucket),
        emulator=emulator,
        extra_vars=run_variables(emulator, bucket, run, plan, fleet_run_holder=holder, **more),
        check=check,
        resolv_conf=resolv_conf,
        stdout_callback="ansible.posix.json",
        env={"ANSIBLE_SHOW_CUSTOM_STATS": "1"},
        timeout=1500,
    )
