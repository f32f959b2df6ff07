#!/usr/bin/env python3
"""Re-capture the kops output fixtures of the unit tests (tests/unit/fixtures/kops-1.36.2) from the real kops.

Runs the real kops binary (``KOPS_BINARY`` or .cache/bin/kops) against a fresh local emulator and its DNS face,
through the life of the kOps guide's HA cluster (create, apply, scale, upgrade, roll cloud-only, delete), and
writes each command's stdout (and stderr where a fixture is an error) into ``--out`` under the fixture's name.
tests/unit/fixtures/README.md lists every fixture with its command; ``--only NAME`` captures a few.

    .venv/bin/python tools/capture_fixtures.py --out /tmp/captures [--dns-address 127.0.20.53]

Then compare with ``diff -r /tmp/captures tests/unit/fixtures/kops-1.36.2`` and copy what should change: ids
(instances, launch templates, VPCs) and timestamps differ on every capture, so the unit tests' expectations
must be updated with a fixture. Not captured here: ``rolling_update_drain.*`` (needs the kube world and a
workload under a PodDisruptionBudget; README gives the command and how it was made).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from harness.emulator import Emulator  # noqa: E402
from harness.kops_env import UBUNTU_AMI, KopsDNS, artifact_mirror, kops_binary, make_delegated_world  # noqa: E402

PARENT = "example.org"
SUBDOMAIN = "kopsclustertest.example.org"
CLUSTER = "mycluster01.kopsclustertest.example.org"
BUCKET = "kopsible-state"
ZONES = "us-east-1a,us-east-1b,us-east-1c"


class Kops(object):
    """The real kops with the emulator's environment; ``run`` returns (rc, stdout, stderr)."""

    def __init__(self, emulator, dns):
        self.env = dict(os.environ)
        self.env.update(emulator.aws_env())
        self.env.update(
            KOPS_STATE_STORE="s3://" + BUCKET,
            S3_ENDPOINT=emulator.url,
            S3_REGION="us-east-1",
            S3_ACCESS_KEY_ID=self.env["AWS_ACCESS_KEY_ID"],
            S3_SECRET_ACCESS_KEY=self.env["AWS_SECRET_ACCESS_KEY"],
            KOPS_BASE_URL=artifact_mirror(),
            KOPS_FEATURE_FLAGS="-ImageDigest",
            KOPSIBLE_KOPS=kops_binary(),
            KOPSIBLE_RESOLV_CONF=dns.resolv_conf,
            KUBECONFIG=os.path.join(tempfile.mkdtemp(prefix="kopsible-capture-"), "kubeconfig"),
        )

    def run(self, args, local_dns=True, stdin=None):
        """``local_dns=False`` runs kops with the machine's resolver, where the cluster's names do not resolve."""
        binary = os.path.join(ROOT, "tools", "kops-with-local-dns") if local_dns else kops_binary()
        proc = subprocess.run([binary] + args, env=self.env, capture_output=True, text=True, input=stdin, timeout=1200)
        return proc.returncode, proc.stdout, proc.stderr


def world(emulator, dns):
    """example.org, the delegated subdomain and a versioned state-store bucket (as tests/conftest.py's KopsWorld)."""
    make_delegated_world(emulator, dns, PARENT, SUBDOMAIN, BUCKET)


def edit(kops, kind_args, change):
    """``kops get <kind_args> -o yaml``, ``change(manifest)``, ``kops replace -f -``."""
    rc, out, err = kops.run(["get"] + kind_args + ["-o", "yaml"])
    if rc:
        raise RuntimeError(err)
    manifest = yaml.safe_load(out)
    change(manifest)
    rc, out, err = kops.run(["replace", "-f", "-"], stdin=yaml.safe_dump(manifest))
    if rc:
        raise RuntimeError(err)


def steps(kops, ssh_key):
    """``(fixture name or None, argv, options, want_rc)`` in the order they run; None runs a step not kept."""
    create = [
        "create",
        "cluster",
        "--name",
        CLUSTER,
        "--cloud",
        "aws",
        "--zones",
        ZONES,
        "--control-plane-zones",
        ZONES,
        "--node-count",
        "2",
        "--node-size",
        "t3.medium",
        "--control-plane-size",
        "t3.medium",
        "--kubernetes-version",
        "1.34.1",
        "--dns-zone",
        SUBDOMAIN,
        "--image",
        UBUNTU_AMI,
        "--channel",
        "none",
        "--ssh-public-key",
        ssh_key,
    ]
    scale = lambda m: m["spec"].update(minSize=3, maxSize=3)  # noqa: E731
    upgrade = lambda m: m["spec"].update(kubernetesVersion="1.35.0")  # noqa: E731
    return [
        ("get_cluster_missing", ["get", "cluster", "nosuch.example.org"], {}, 1),
        ("delete_missing", ["delete", "cluster", "--name", CLUSTER], {}, 1),
        ("create_cluster_preview", create, {}, 0),
        ("get_cluster", ["get", "cluster", CLUSTER, "-o", "json"], {}, 0),
        ("get_clusters", ["get", "clusters", "-o", "json"], {}, 0),
        ("get_ig", ["get", "ig", "--name", CLUSTER, "-o", "yaml"], {}, 0),
        ("get_ig_table", ["get", "ig", "--name", CLUSTER], {}, 0),
        ("update_yes_first", ["update", "cluster", "--name", CLUSTER, "--yes"], {}, 0),
        ("update_no_changes", ["update", "cluster", "--name", CLUSTER], {}, 0),
        ("rolling_update_none", ["rolling-update", "cluster", "--name", CLUSTER, "--cloudonly"], {}, 0),
        ("rolling_update_needs_nodes", ["rolling-update", "cluster", "--name", CLUSTER], {"local_dns": False}, 1),
        ("validate_no_api", ["validate", "cluster", "--name", CLUSTER, "-o", "json"], {"local_dns": False}, 1),
        (None, lambda: edit(kops, ["ig", "--name", CLUSTER, "nodes-us-east-1a"], scale), {}, 0),
        ("update_plan_scale", ["update", "cluster", "--name", CLUSTER], {}, 0),
        # the upgrade is planned with the scale-up still pending: one plan holding both kinds of change
        (None, lambda: edit(kops, ["cluster", CLUSTER], upgrade), {}, 0),
        ("update_plan_upgrade", ["update", "cluster", "--name", CLUSTER], {}, 0),
        ("update_yes_later", ["update", "cluster", "--name", CLUSTER, "--yes"], {}, 0),
        ("rolling_update_needs", ["rolling-update", "cluster", "--name", CLUSTER, "--cloudonly"], {}, 0),
        (
            "rolling_update_yes",
            ["rolling-update", "cluster", "--name", CLUSTER, "--cloudonly", "--yes", "--control-plane-interval", "1s", "--node-interval", "1s"],
            {},
            0,
        ),
        ("delete_preview", ["delete", "cluster", "--name", CLUSTER], {}, 0),
        ("delete_yes", ["delete", "cluster", "--name", CLUSTER, "--yes"], {}, 0),
    ]


# Fixtures whose stdout is the fixture (``.txt``/``.json``/``.yaml``), and those whose stderr is kept too.
EXTENSIONS = {"get_cluster": ".json", "get_clusters": ".json", "get_ig": ".yaml", "validate_no_api": ".json"}
WITH_STDERR = ("get_cluster_missing", "delete_missing", "rolling_update_needs_nodes", "validate_no_api")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the captures")
    parser.add_argument("--dns-address", default="127.0.0.1", help="loopback address for the emulator's DNS face")
    parser.add_argument("--only", action="append", help="capture only these fixtures (the others still run)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    keydir = tempfile.mkdtemp(prefix="kopsible-capture-key-")
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", os.path.join(keydir, "id_rsa")], check=True)
    print(subprocess.run([kops_binary(), "version"], capture_output=True, text=True).stdout.strip())
    with Emulator() as emulator:
        dns = KopsDNS(emulator, address=args.dns_address)
        dns.start()
        try:
            world(emulator, dns)
            kops = Kops(emulator, dns)
            for name, argv, options, want in steps(kops, os.path.join(keydir, "id_rsa.pub")):
                if callable(argv):
                    argv()
                    continue
                rc, out, err = kops.run(argv, **options)
                print("%-28s rc=%d  kops %s" % (name or "-", rc, " ".join(argv)))
                if rc != want:
                    raise SystemExit("kops %s: exit %d (expected %d)\n%s" % (" ".join(argv), rc, want, err[-3000:]))
                if name is None or (args.only and name not in args.only):
                    continue
                with open(os.path.join(args.out, name + EXTENSIONS.get(name, ".txt")), "w") as handle:
                    handle.write(out)
                if name in WITH_STDERR:
                    with open(os.path.join(args.out, name + ".stderr"), "w") as handle:
                        handle.write(err)
        finally:
            dns.stop()


if __name__ == "__main__":
    main()
