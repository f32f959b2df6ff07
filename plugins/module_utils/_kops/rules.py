# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input rules checked before kops runs, so that a bad option fails fast, names its field and writes nothing.

Each rule mirrors a kops rule and cites the kops v1.36.2 file it comes from. Every function raises
:class:`RuleError` (a ValueError) whose message starts with the option name.
"""

import re

GOSSIP_SUFFIX = ".k8s.local"
_REGION = r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+"  # AWS region names: ASCII digits (Python's \d would take any Unicode digit)
_ZONE_RE = re.compile(r"^(?P<region>%s)(?P<letter>[a-z])$" % _REGION)
_REGION_RE = re.compile(_REGION)


class RuleError(ValueError):
    """A rule was broken; ``str(err)`` starts with the option name."""


# k8s.io/apimachinery/pkg/util/validation/validation.go (the version kops v1.36.2 builds with): dns1123SubdomainFmt
# and DNS1123SubdomainMaxLength, the rule of IsDNS1123Subdomain. No limit per label: that function has none.
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_RE = re.compile(r"%s(\.%s)*" % (_DNS1123_LABEL, _DNS1123_LABEL))
DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def cluster_name(value, field="name"):
    """A cluster name exactly as kops takes it (pkg/apis/kops/validation/validation.go newValidateCluster): a
    lowercase RFC 1123 subdomain (k8s.io/apimachinery ``IsDNS1123Subdomain``: at most 253 characters of a-z, 0-9,
    '-' and '.', each dot-separated part starting and ending with a letter or digit) holding a dot ("Cluster Name
    must be a fully-qualified DNS name"), either a gossip name ending in ``.k8s.local`` or a name under a DNS zone.

    Nothing is folded: kops stores a cluster under its name as given (``NAME/config``, case-sensitive), so
    ``K1.Example.org`` is not ``k1.example.org`` to kops (``kops create cluster`` refuses it, ``kops get``/``delete``
    find no such cluster), and silently lowercasing it would address another cluster. Uppercase, a trailing dot
    and surrounding blanks are refused, naming the lowercase form. Returns the name (str) unchanged.
    ``field`` is the option named in errors (``name`` or ``cluster``)."""
    if not isinstance(value, str) or not value.strip():
        raise RuleError("%s: a DNS name is required, got %r" % (field, value))
    if value != value.strip().lower().rstrip(".") and DNS1123_SUBDOMAIN_RE.fullmatch(value.strip().lower().rstrip(".")):
        raise RuleError(
            "%s: cluster name %r must be written %r: kops takes a cluster name as a lowercase RFC 1123 subdomain "
            "(pkg/apis/kops/validation/validation.go, IsDNS1123Subdomain) and finds a stored cluster by its exact name, "
            "so it is not folded here" % (field, value, value.strip().lower().rstrip("."))
        )
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        raise RuleError(
            "%s: cluster name %r is %d characters long; kops' limit is %d (IsDNS1123Subdomain)" % (field, value, len(value), DNS1123_SUBDOMAIN_MAX_LENGTH)
        )
    if not DNS1123_SUBDOMAIN_RE.fullmatch(value):
        raise RuleError(
            "%s: cluster name %r must be a lowercase RFC 1123 subdomain: a-z, 0-9, '-' and '.', each part starting and "
            "ending with a letter or digit (kops: pkg/apis/kops/validation/validation.go, IsDNS1123Subdomain)" % (field, value)
        )
    if "." not in value:
        raise RuleError("%s: a cluster name must be a fully qualified DNS name such as mycluster01.example.org or mycluster.k8s.local, got %r" % (field, value))
    long_labels = [label for label in value.split(".") if len(label) > 63]
    if long_labels and not is_gossip(value):
        # kops' rule has no per-label limit, but the records kops writes under a DNS name (api.<name>...) are Route53's,
        # whose names take labels of at most 63 characters (RFC 1035; Route53 DomainNameFormat)
        raise RuleError(
            "%s: cluster name %r has a label of %d characters; a cluster under a DNS zone gets Route53 records under its "
            "name, whose labels are at most 63 characters (a gossip name ending in .k8s.local has no such records)" % (field, value, len(long_labels[0]))
        )
    return value


def is_gossip(name):
    """True for a gossip cluster name (``*.k8s.local``), which needs no hosted zone."""
    return name.endswith(GOSSIP_SUFFIX)


def region_of_zone(zone):
    """``us-east-1a`` -> ``us-east-1``; None when ``zone`` is not an AWS availability zone name."""
    match = _ZONE_RE.fullmatch(zone) if isinstance(zone, str) else None
    return match.group("region") if match else None


def aws_region(value, field):
    """``value`` must be an AWS region name such as ``us-east-1`` (the form kops' zone rules derive
    regions in, upup/pkg/fi/cloudup/awsup/aws_utils.go). Returns it; raises RuleError naming ``field``."""
    if not isinstance(value, str) or not _REGION_RE.fullmatch(value):
        raise RuleError("%s: %r is not an AWS region name such as us-east-1" % (field, value))
    return value


def zones(values, field="zones", region=None):
    """Availability zones, all in one region (kops derives the cluster's region from its subnets' zones and
    refuses subnets in another one: pkg/apis/kops/validation/validation.go:663 "clusters cannot span regions").

    :param values: list of str. :param region: when given, every zone must be in it.
    :returns: the region (str). :raises RuleError: empty list, a malformed zone, several regions.
    """
    if not values:
        raise RuleError("%s: at least one availability zone is required" % field)
    regions = {}
    for zone in values:
        found = region_of_zone(zone)
        if not found:
            raise RuleError("%s: %r is not an availability zone name such as us-east-1a" % (field, zone))
        regions.setdefault(found, []).append(zone)
    if len(regions) > 1:
        raise RuleError("%s: all zones must be in one region, got %s" % (field, "; ".join("%s: %s" % (r, ", ".join(z)) for r, z in sorted(regions.items()))))
    found = next(iter(regions))
    if region and region != found:
        raise RuleError("%s: zones are in %s but the region option is %s" % (field, found, region))
    if len(set(values)) != len(values):
        raise RuleError("%s: zones are listed more than once: %s" % (field, ", ".join(values)))
    return found


def control_plane_zones(values, node_zones):
    """Control-plane zones: an odd count for etcd quorum (upup/pkg/fi/cloudup/populate_cluster_spec.go:158 and
    pkg/apis/kops/validation/validation.go:1532-1535 validateEtcdClusterSpec: "Should be an odd number of
    control-plane-zones for quorum"), in the region of the node zones (validation.go:663)."""
    if not values:
        return
    if len(values) % 2 == 0:
        raise RuleError(
            "control_plane_zones: %d zones given (%s); etcd needs an odd number of control-plane "
            "zones for quorum (1, 3 or 5)" % (len(values), ", ".join(values))
        )
    region = zones(values, "control_plane_zones")
    node_region = region_of_zone(node_zones[0]) if node_zones else None
    if node_region and node_region != region:
        raise RuleError("control_plane_zones: zones are in %s but zones are in %s" % (region, node_region))


def partition_of(region):
    """The AWS partition of ``region`` (``us-east-1`` -> ``aws``, ``cn-north-1`` -> ``aws-cn``,
    ``us-gov-west-1`` -> ``aws-us-gov``), from botocore's endpoint data (the partitions' region patterns), the
    same table the SDKs use; None for a region no partition claims or no region."""
    if not region:
        return None
    import botocore.session  # only the modules need botocore; the pure rules above do not

    try:
        return botocore.session.get_session().get_partition_for_region(region)
    except Exception:  # botocore's UnknownRegionError (its class moved between versions)
        return None


def arn_partitions(value, region, field):
    """Every ARN (a string starting with ``arn:``) anywhere in ``value`` (nested dicts and lists) must be in the
    partition of ``region`` and, when it names a region, in ``region`` itself: IAM, Auto Scaling and ELB refuse a
    policy, role or target group of another partition or region (an ARN of ``aws`` in ``cn-north-1`` is not
    found), but kops stores such a spec and fails only when it applies it. ``field`` is the option named in
    errors (sub-paths appended). Does nothing when the region's partition is unknown.
    :raises RuleError: naming the path, the ARN and the partition (or region) expected."""
    partition = partition_of(region)
    if partition is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            arn_partitions(item, region, "%s.%s" % (field, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            arn_partitions(item, region, "%s[%d]" % (field, index))
    elif isinstance(value, str) and value.startswith("arn:"):
        parts = value.split(":", 5)
        if len(parts) < 6 or parts[1] != partition:
            raise RuleError("%s: %r is not an ARN of partition %s, the partition of %s (arn:%s:...)" % (field, value, partition, region, partition))
        if parts[3] and parts[3] != region:
            raise RuleError("%s: %r is in region %s; the cluster is in %s" % (field, value, parts[3], region))


def non_negative(value, field):
    """``value`` (a number or None) must be 0 or more. Raises RuleError naming ``field``."""
    if value is not None and value < 0:
        raise RuleError("%s: must be 0 or more, got %s" % (field, value))


def positive(value, field):
    """``value`` (a number or None) must be 1 or more. Raises RuleError naming ``field``."""
    if value is not None and value < 1:
        raise RuleError("%s: must be 1 or more, got %s" % (field, value))


def cidr(value, field):
    """An IPv4 CIDR such as 172.20.0.0/16."""
    import ipaddress

    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise RuleError("%s: %r is not a network in CIDR form (%s)" % (field, value, exc)) from exc


# upup/pkg/fi/cloudup/new_cluster.go setupNetworking (:1316 "unknown networking mode"): the --networking values kops accepts.
NETWORKING_MODES = (
    "kubenet",
    "external",
    "cni",
    "kopeio-vxlan",
    "kopeio",
    "flannel",
    "flannel-vxlan",
    "flannel-udp",
    "calico",
    "kube-router",
    "amazonvpc",
    "amazon-vpc-routed-eni",
    "cilium",
    "cilium-etcd",
    "cilium-eni",
    "gcp",
    "gce",
    "kindnet",
)
# pkg/apis/kops/channel.go CloudProviderID values.
CLOUDS = ("aws", "digitalocean", "gce", "hetzner", "openstack", "azure", "scaleway", "linode", "metal")
_DURATION_RE = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$", re.ASCII)  # Go time.ParseDuration: ASCII digits
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_MACHINE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
# Key types golang.org/x/crypto/ssh ParseAuthorizedKey knows (kops reads the key with it:
# upup/pkg/fi/clientset_castore.go AddSSHPublicKey, "error parsing SSH public key").
SSH_KEY_TYPES = (
    "ssh-rsa",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-dss",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


def one_of(value, allowed, field):
    """``value`` must be one of ``allowed`` (tuple of str). Returns it; raises RuleError naming ``field``."""
    if value not in allowed:
        raise RuleError("%s: %r is not one of %s" % (field, value, ", ".join(allowed)))
    return value


def duration_seconds(value, field):
    """Seconds (float) in a Go duration such as ``24h``, ``90s`` or ``1h30m`` (time.ParseDuration, as kops'
    duration flags and fields take them; no sign, ``0`` alone needs no unit). Raises RuleError naming ``field``."""
    text = str(value)
    if text == "0":
        return 0.0
    if not _DURATION_RE.fullmatch(text):
        raise RuleError("%s: %r is not a duration such as 24h, 90m or 30s" % (field, value))
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, dummy, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text, re.ASCII))
    if not seconds <= _DURATION_MAX:  # time.ParseDuration: "invalid duration" past int64 nanoseconds (inf included)
        raise RuleError("%s: %r is out of range; a Go duration is at most 2562047h47m16.854775807s (time.ParseDuration)" % (field, value))
    return seconds


# the longest Go duration in seconds (time.Duration is int64 nanoseconds)
_DURATION_MAX = (2**63 - 1) / 1e9


def admin_lifetime(value, field="admin"):
    """The lifetime of the exported admin credential (``kops export kubecfg --admin=DURATION``), a Go duration
    that is not 0: kops issues the admin certificate only when the duration is not 0
    (pkg/kubeconfig/create_kubecfg.go:169), so ``0``/``0s`` exports a context whose user has no credential.
    Returns the seconds (float); raises RuleError naming ``field``."""
    seconds = duration_seconds(value, field)
    if seconds == 0:
        raise RuleError("%s: %r is no lifetime; kops would export a kubeconfig whose user has no credential. Give a duration such as 18h" % (field, value))
    return seconds


def control_plane_count(count, control_plane_zones):
    """``control_plane_count`` (int or None): 1 or more and odd, since each control-plane node is an etcd
    member (pkg/apis/kops/validation/validation.go:1532-1535 validateEtcdClusterSpec: "Should be an odd number of
    control-plane-zones for quorum"), and not below the number of control-plane zones
    (upup/pkg/fi/cloudup/new_cluster.go:944-946 setupControlPlane: "If specifying both, the count should match")."""
    if count is None:
        return
    positive(count, "control_plane_count")
    if count % 2 == 0:
        raise RuleError("control_plane_count: %d; etcd needs an odd number of control-plane nodes for quorum (1, 3 or 5)" % count)
    if control_plane_zones and count < len(control_plane_zones):
        raise RuleError("control_plane_count: %d is less than the %d control_plane_zones; give at least one node per zone" % (count, len(control_plane_zones)))


def machine_types(value, field):
    """An instance type such as ``t3.medium`` (kops also takes a comma-separated list: pkg/apis/kops/validation/
    aws.go awsValidateInstanceTypeAndImage splits on ','). Checks the form only; kops asks EC2 whether it exists."""
    if not isinstance(value, str) or not all(_MACHINE_TYPE_RE.fullmatch(part) for part in value.split(",")):
        raise RuleError("%s: %r is not an instance type such as t3.medium (family.size, lowercase)" % (field, value))
    return value


def ssh_public_key(value, field="ssh_public_key"):
    """One OpenSSH public key line, ``TYPE BASE64 [comment]`` (RFC 4253 section 6.6 blob whose first
    string is TYPE). A private key is refused with a message that does not repeat it. Raises RuleError."""
    import base64
    import binascii
    import struct

    text = value.strip() if isinstance(value, str) else ""
    if "PRIVATE KEY" in text:
        raise RuleError("%s: this is a private key; give the public key (the .pub file, one line starting with ssh-rsa or ssh-ed25519)" % field)
    parts = text.split()
    problem = None
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        problem = "it must start with one of %s followed by the key" % ", ".join(SSH_KEY_TYPES[:3])
    else:
        try:
            blob = base64.b64decode(parts[1], validate=True)
            length = struct.unpack(">I", blob[:4])[0]
            if blob[4 : 4 + length].decode("ascii") != parts[0]:
                problem = "the key data is not a %s key" % parts[0]
        except (binascii.Error, struct.error, UnicodeDecodeError, ValueError):
            problem = "the key data is not base64 of an SSH public key"
    if problem:
        raise RuleError("%s: not an OpenSSH public key line (%s)" % (field, problem))
    return text


def instance_group_name(value, field="name"):
    """An InstanceGroup name: a lowercase DNS subdomain (kops names the Auto Scaling group ``<ig>.<cluster>`` and
    stores the group under ``instancegroup/<ig>``; k8s.io/apimachinery IsDNS1123Subdomain, as for every object name).
    Returns it; raises RuleError naming ``field``."""
    name = value if isinstance(value, str) else ""
    if len(name) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        raise RuleError("%s: %r has %d characters; an InstanceGroup name is at most 253 (a DNS subdomain)" % (field, value, len(name)))
    if not DNS1123_SUBDOMAIN_RE.fullmatch(name):
        raise RuleError("%s: %r must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit" % (field, value))
    return name


def text(value, field):
    """``value`` must be a string; returns it. Raises RuleError naming ``field``."""
    if value is not None and not isinstance(value, str):
        raise RuleError("%s: %r must be a string" % (field, value))
    return value
