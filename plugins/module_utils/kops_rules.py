# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input rules checked before kops runs, so that a bad option fails fast, names its field and writes nothing.

Each rule mirrors a kops rule and cites the kops v1.36.2 file it comes from. Every function raises
:class:`RuleError` (a ValueError) whose message starts with the option name.
"""
import re

from ansible_collections.kopsible.kops.plugins.module_utils.dns_names import DNSNameError, is_subdomain, normalize_dns_name

GOSSIP_SUFFIX = ".k8s.local"
_ZONE_RE = re.compile(r"^(?P<region>[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d+)(?P<letter>[a-z])$")
_VERSION_RE = re.compile(r"^v?(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)(?P<pre>[-+][0-9A-Za-z.+-]+)?$")


class RuleError(ValueError):
    """A rule was broken; ``str(err)`` starts with the option name."""


def cluster_name(value, field="name"):
    """A cluster name: a DNS name (pkg/apis/kops/validation/validation.go validateClusterName), either a
    gossip name ending in ``.k8s.local`` or a name under a DNS zone. Returns it normalised (str).
    ``field`` is the option named in errors (``name`` or ``cluster``)."""
    try:
        name = normalize_dns_name(value, field)
    except DNSNameError as exc:
        raise RuleError(str(exc))
    if "." not in name:
        raise RuleError("%s: a cluster name must be a fully qualified DNS name such as "
                        "mycluster01.example.org or mycluster.k8s.local, got %r" % (field, name))
    return name


def is_gossip(name):
    """True for a gossip cluster name (``*.k8s.local``), which needs no hosted zone."""
    return name.endswith(GOSSIP_SUFFIX)


def region_of_zone(zone):
    """``us-east-1a`` -> ``us-east-1``; None when ``zone`` is not an AWS availability zone name."""
    match = _ZONE_RE.fullmatch(zone) if isinstance(zone, str) else None
    return match.group("region") if match else None


def zones(values, field="zones", region=None):
    """Availability zones, all in one region (kops derives the region from them: upup/pkg/fi/cloudup/
    populate_cluster_spec.go; pkg/commands/... new_cluster.go rejects mixed regions).

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
        raise RuleError("%s: all zones must be in one region, got %s" % (
            field, "; ".join("%s: %s" % (r, ", ".join(z)) for r, z in sorted(regions.items()))))
    found = next(iter(regions))
    if region and region != found:
        raise RuleError("%s: zones are in %s but the region option is %s" % (field, found, region))
    if len(set(values)) != len(values):
        raise RuleError("%s: zones are listed more than once: %s" % (field, ", ".join(values)))
    return found


def control_plane_zones(values, node_zones):
    """Control-plane zones: an odd count for etcd quorum (pkg/apis/kops/validation/validation.go
    validateEtcdClusterSpec: "Should be an odd number of control-plane-zones for quorum"), in the
    region of the node zones."""
    if not values:
        return
    if len(values) % 2 == 0:
        raise RuleError("control_plane_zones: %d zones given (%s); etcd needs an odd number of control-plane "
                        "zones for quorum (1, 3 or 5)" % (len(values), ", ".join(values)))
    region = zones(values, "control_plane_zones")
    node_region = region_of_zone(node_zones[0]) if node_zones else None
    if node_region and node_region != region:
        raise RuleError("control_plane_zones: zones are in %s but zones are in %s" % (region, node_region))


def kubernetes_version(value, field="kubernetes_version"):
    """A Kubernetes version ``X.Y.Z`` or ``vX.Y.Z`` (pkg/apis/kops/util/versions.go ParseKubernetesVersion).
    Returns ``(major, minor, patch)`` ints."""
    match = _VERSION_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise RuleError("%s: %r is not a version such as 1.34.1 or v1.34.1" % (field, value))
    return int(match.group("major")), int(match.group("minor")), int(match.group("patch"))


def dns_zone_encloses(zone, name):
    """``dns_zone`` must be the cluster's own name or enclose it (upup/pkg/fi/cloudup/utils.go FindDNSHostedZone)."""
    try:
        zone = normalize_dns_name(zone, "dns_zone")
    except DNSNameError as exc:
        raise RuleError(str(exc))
    if zone != name and not is_subdomain(name, zone):
        raise RuleError("dns_zone: %s does not enclose the cluster name %s; the cluster's DNS records are "
                        "written under its name, so the zone must be a suffix of it" % (zone, name))
    return zone


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
        raise RuleError("%s: %r is not a network in CIDR form (%s)" % (field, value, exc))
