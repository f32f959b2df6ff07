"""What the real kops binary needs to run against the local emulator, offline (see docs/emulator.md).

- :func:`artifact_mirror`: a local ``KOPS_BASE_URL`` tree. kops reads the sha256 of nodeup,
  protokube and (for control-plane nodes) its container images at update time
  (pkg/nodemodel/wellknownassets/kopsassets.go, pkg/nodemodel/nodeupconfigbuilder.go); Kubernetes'
  own hashes are built into kops (pkg/assets/assetdata). The emulator's instances never boot, so
  each artifact is a small placeholder file and its ``.sha256`` is that file's real hash.
- :class:`KopsDNS`: a DNS server on 127.0.0.1:53 answering from the emulator's Route53 live, and a
  resolv.conf that points at it, used through tools/kops-with-local-dns.
- :func:`module_options`: the kops options (binary, extra environment) for module_defaults.
"""

import hashlib
import os
import re

from .emulator import ROOT
from .route53_dns import Route53DNS

KOPS_VERSION = "1.36.2"
ARCHES = ("amd64", "arm64")
BINARIES = ("nodeup", "protokube", "channels")
IMAGES = ("kops-utils-cp", "kops-controller", "kops-channels", "dns-controller", "kube-apiserver-healthcheck")
# The Ubuntu 24.04 image of the kops v1.36 channel, loaded into the emulator (tools/emulator_amis.json).
UBUNTU_AMI = "ami-0a1b2c3d4e5f60001"


# The upgrade role on a live cluster of the local world, quickly: 2 s between nodes, one validation pass, drains and
# validation bounded at 5 minutes (the role's defaults wait 15 s between nodes and validate for up to 15 minutes).
LIVE_UPGRADE = dict(
    upgrade_control_plane_interval="2s",
    upgrade_node_interval="2s",
    upgrade_bastion_interval="2s",
    upgrade_validate_count="1",
    upgrade_validation_timeout="5m",
    upgrade_drain_timeout="5m",
    upgrade_post_drain_delay="1s",
)


def artifact_mirror(root=None, version=KOPS_VERSION):
    """Build the placeholder artifact tree (idempotent); returns its ``file://`` URL (str).

    The URL's last path element is the kops version: kops takes it as its artifact version.
    """
    root = root or os.path.join(ROOT, ".cache", "kops-artifacts")
    base = os.path.join(root, version)
    files = ["linux/%s/%s" % (arch, name) for arch in ARCHES for name in BINARIES]
    files += ["images/%s-%s.tar.gz" % (name, arch) for arch in ARCHES for name in IMAGES]
    for rel in files:
        path = os.path.join(base, rel)
        if os.path.exists(path + ".sha256"):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        content = ("kopsible placeholder for kops %s %s: the emulator's instances never boot\n" % (version, rel)).encode()
        with open(path, "wb") as handle:
            handle.write(content)
        with open(path + ".sha256", "w") as handle:
            handle.write(hashlib.sha256(content).hexdigest() + "\n")
    return "file://" + base


class KopsDNS:
    """The emulator's DNS face (:class:`route53_dns.Route53DNS`) on ``address``:53, and a resolv.conf
    pointing at it for tools/kops-with-local-dns. Answers follow the emulator's zones live."""

    def __init__(self, emulator, address="127.0.0.1", names=None):
        self.emulator = emulator
        self.address = address
        self.names = names
        self.server = None
        # one resolv.conf per address: parallel test workers each serve DNS on their own loopback address
        suffix = "" if address == "127.0.0.1" else "-" + address
        self.resolv_conf = os.path.join(ROOT, ".cache", "kops-resolv%s.conf" % suffix)

    def start(self):
        os.makedirs(os.path.dirname(self.resolv_conf), exist_ok=True)
        with open(self.resolv_conf, "w") as handle:
            handle.write("nameserver %s\noptions attempts:3 timeout:5\n" % self.address)
        self.server = Route53DNS(self.emulator, self.address, 53, names=self.names).start()
        return self

    def sync(self):
        """Nothing to do: answers are read from the emulator at query time (kept for callers)."""

    def stop(self):
        if self.server:
            self.server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def kops_binary():
    """The real kops (str): ``KOPS_BINARY``, else .cache/bin/kops, else ``kops`` on PATH."""
    candidate = os.environ.get("KOPS_BINARY") or os.path.join(ROOT, ".cache", "bin", "kops")
    if os.path.exists(candidate):
        return candidate
    import shutil

    found = shutil.which("kops")
    if not found:
        raise RuntimeError("no kops binary: run scripts/ensure_kops.sh")
    return found


def module_options(dns):
    """``kops_binary`` and ``kops_env`` for modules run against the emulator (dict)."""
    return {
        "kops_binary": os.path.join(ROOT, "tools", "kops-with-local-dns"),
        "kops_env": {
            "KOPSIBLE_KOPS": kops_binary(),
            "KOPSIBLE_RESOLV_CONF": dns.resolv_conf,
            "KOPS_BASE_URL": artifact_mirror(),
            "KOPS_FEATURE_FLAGS": "-ImageDigest",
        },
    }


def lifecycle_overrides(dns, ssh_public_key, kubeconfig=None):
    """Variables that run playbooks/lifecycle.yml with examples/vars/us-east-1-ha.yml on the emulator
    (dict): kops' offline settings, the emulator's Ubuntu image and channel ``none``, DNS
    verification against the emulator's DNS face, and a cloud-only roll.

    With ``kubeconfig`` (a path; the kube world must run, tools/harness/kubeworld_runner.py), the create step
    validates the cluster for real (``kops validate cluster`` against its control plane) and exports the
    admin kubeconfig there, the report lists the nodes read through it, a Deployment of 6 pods with a
    PodDisruptionBudget (minAvailable 4) is deployed, and the upgrade rolls for real: validation, cordon,
    drain through the eviction API, 1 s for pods to settle after it, one validation after each node
    (intervals 2 s: the node agent registers a new instance within about a second, a kubelet in AWS within a
    minute or two)."""
    overrides = dict(
        module_options(dns),
        cluster_ssh_public_key=ssh_public_key,
        cluster_image=UBUNTU_AMI,
        cluster_channel="none",
        verify_dns=True,
        dns_nameservers=[dns.address],
        upgrade_cloudonly=True,
        upgrade_validate=False,
        upgrade_control_plane_interval="1s",
        upgrade_node_interval="1s",
        upgrade_bastion_interval="1s",
    )
    if kubeconfig:
        overrides.update(
            cluster_validate=True,
            cluster_validation_timeout="5m",
            cluster_export_kubeconfig=True,
            cluster_kubeconfig=kubeconfig,
            lifecycle_workload=True,
            upgrade_cloudonly=False,
            upgrade_validate=True,
            upgrade_kubeconfig=kubeconfig,
            **dict(LIVE_UPGRADE, upgrade_validation_timeout="10m"),
        )
    return overrides


# kops' own notices that the offline world's settings provoke in every `kops update cluster` (a user of the same
# settings sees them too; issue 16 item 10 routes them into the modules' warnings): KOPS_BASE_URL pointing at the local
# artifacts (pkg/nodemodel/wellknownassets/kopsassets.go:66) and `channel: none`, a channel without kops or Kubernetes
# versions (upup/pkg/fi/cloudup/apply_cluster.go:920 and 1043). tests/integration/test_no_warnings.py proves an
# idempotent re-run warns of nothing else.
OFFLINE_KOPS_WARNINGS = re.compile(
    r'^kops update cluster: (Using base url from env var: KOPS_BASE_URL="(file://|http://127\.0\.0\.1:\d+/)[^"]*/1\.36\.2"'
    r'|unable to find version information for (kops|kubernetes) version "[0-9.]+" in channel)$'
)


def user_warnings(result):
    """The warnings of a module result (list of str) without :data:`OFFLINE_KOPS_WARNINGS`."""
    return [w for w in result.get("warnings") or [] if not OFFLINE_KOPS_WARNINGS.match(w)]


def make_delegated_world(emulator, dns, parent, subdomain, bucket):
    """What every kops test starts from: ``parent`` and ``subdomain`` hosted zones with the NS delegation, and a
    versioned state-store ``bucket``; the emulator warmed first and the DNS face synced after. Returns the
    subdomain's hosted zone id (str, without ``/hostedzone/``)."""
    emulator.warm()
    r53 = emulator.client("route53")
    parent_id = r53.create_hosted_zone(Name=parent + ".", CallerReference="parent")["HostedZone"]["Id"]
    child = r53.create_hosted_zone(Name=subdomain + ".", CallerReference="child")
    r53.change_resource_record_sets(
        HostedZoneId=parent_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "UPSERT",
                    "ResourceRecordSet": {
                        "Name": subdomain + ".",
                        "Type": "NS",
                        "TTL": 300,
                        "ResourceRecords": [{"Value": v} for v in child["DelegationSet"]["NameServers"]],
                    },
                }
            ]
        },
    )
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    dns.sync()
    return child["HostedZone"]["Id"].split("/")[-1]


def kops_operator(emulator, **role_vars):
    """Role kopsible.kops.kops_iam run by the administrator (the harness' own key) with ``kops_iam_access_key: true`` and
    ``role_vars``: the group, the user ``kops`` and its access key. Returns the user's credentials as environment
    variables, ``{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}``. Raises RuntimeError naming the failed run."""
    import json
    import tempfile

    from .playbook import run_playbook

    with tempfile.TemporaryDirectory(prefix="kopsible-operator-") as workdir:
        saved = os.path.join(workdir, "operator.json")
        tasks = [
            {"name": "iam", "ansible.builtin.include_role": {"name": "kopsible.kops.kops_iam"}, "vars": dict(role_vars, kops_iam_access_key=True)},
            {"name": "save", "ansible.builtin.copy": {"content": "{{ kops_iam_credentials | to_json }}", "dest": saved, "mode": "0600"}, "no_log": True},
        ]
        run = run_playbook(tasks, emulator=emulator)
        if run.rc != 0:
            raise RuntimeError("role kops_iam failed (%s): %s" % (run.rc, run.stdout[-3000:]))
        with open(saved) as handle:
            credentials = json.load(handle)
    return {"AWS_ACCESS_KEY_ID": credentials["access_key_id"], "AWS_SECRET_ACCESS_KEY": credentials["secret_access_key"]}
