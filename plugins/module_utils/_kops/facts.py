# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts kops derives from a stored cluster spec, and the names it gives AWS resources: each rule once, as
kops v1.36.2 has it (the source is named on each). Pure functions on plain data (v1alpha2 dicts, str)."""

CONTROL_PLANE_ROLES = ("ControlPlane", "Master")

# Subnet types without public addresses: kops' private topology. pkg/model/awsmodel/network.go (NAT routes,
# :161 and :352) and autoscalinggroup.go:255 treat DualStack as Private (pkg/apis/kops/cluster.go:769-770).
PRIVATE_SUBNET_TYPES = ("Private", "DualStack")

# pkg/model/names.go AutoscalingGroupName: the infix after the InstanceGroup name, by role.
_ASG_INFIX = {"ControlPlane": ".masters", "Master": ".masters", "APIServer": ".apiservers", "Node": "", "Bastion": ""}


def subnet_topology(subnets):
    """``'private'`` when any of ``subnets`` (a spec's ``subnets`` list of dicts) is Private or DualStack (kops'
    ``--topology private``; see PRIVATE_SUBNET_TYPES), ``'public'`` otherwise; None for no subnets."""
    if not subnets:
        return None
    return "private" if any(s.get("type") in PRIVATE_SUBNET_TYPES for s in subnets) else "public"


def region_of_spec(spec):
    """The region (str) of a cluster spec (v1alpha2 ``spec``: its ``subnets``), or None when no subnet tells it.

    A subnet's own ``region`` wins (kops' ClusterSubnetSpec.Region, set for GCE); otherwise kops' AWS rule,
    upup/pkg/fi/cloudup/awsup/aws_utils.go FindRegion: a zone without its last letter (zones of 2 characters or
    fewer are invalid there and tell nothing here).
    """
    for subnet in (spec or {}).get("subnets") or []:
        if subnet.get("region"):
            return subnet["region"]
        zone = subnet.get("zone") or ""
        if isinstance(zone, str) and len(zone) > 2:
            return zone[:-1]
    return None


def instance_group_zones(ig_spec, subnets):
    """The zones (sorted list of str) an InstanceGroup's machines are placed in: the zones of the cluster subnets its
    ``spec.subnets`` name (pkg/model/context.go GatherSubnets; ``subnets`` is the cluster spec's list), else its
    ``spec.zones`` (GCE-style regional subnets have no zone), else the subnet names themselves (a subnet the spec
    does not hold: kops refuses it, "subnet not found"; the name is all there is to report)."""
    ig_spec = ig_spec or {}
    zone_of = {s.get("name"): s.get("zone") for s in subnets or [] if s.get("zone")}
    named = list(ig_spec.get("subnets") or [])
    zones = [zone_of[n] for n in named if n in zone_of] or list(ig_spec.get("zones") or []) or named
    return sorted(set(zones))


def asg_name(cluster, ig):
    """The Auto Scaling group name kops gives InstanceGroup ``ig`` (dict) of ``cluster`` (str), or None for an
    unknown role (pkg/model/names.go AutoscalingGroupName: ``<ig>.masters.<cluster>`` for the control plane,
    ``<ig>.apiservers.<cluster>`` for API servers, ``<ig>.<cluster>`` for nodes and bastions)."""
    name = (ig.get("metadata") or {}).get("name")
    infix = _ASG_INFIX.get((ig.get("spec") or {}).get("role"))
    if infix is None:
        return None
    return "%s%s.%s" % (name, infix, cluster)


def instance_group_of_asg(asg, cluster):
    """The InstanceGroup name (str) of Auto Scaling group ``asg`` of ``cluster``, the inverse of :func:`asg_name`;
    None when ``asg`` is not named for ``cluster``."""
    suffix = "." + cluster
    if not cluster or not asg.endswith(suffix):
        return None
    name = asg[: -len(suffix)]
    for infix in (".masters", ".apiservers"):
        if name.endswith(infix):
            return name[: -len(infix)]
    return name


def cluster_facts(cluster):
    """Key facts of a Cluster manifest (dict) for results and inventories."""
    spec = (cluster or {}).get("spec") or {}
    subnets = spec.get("subnets") or []
    members = []
    for etcd in spec.get("etcdClusters") or []:
        if etcd.get("name") == "main":
            members = [m.get("instanceGroup", "") for m in etcd.get("etcdMembers") or []]
    return {
        "kubernetes_version": spec.get("kubernetesVersion"),
        "dns_zone": spec.get("dnsZone"),
        "zones": sorted({s.get("zone") for s in subnets if s.get("zone")}),
        "control_plane_groups": members,
        "cloud_labels": spec.get("cloudLabels") or {},
        "topology": subnet_topology(subnets),
        "subnet_types": sorted({s.get("type") for s in subnets if s.get("type")}),
        "network_cidr": spec.get("networkCIDR"),
        "api_name": spec.get("masterPublicName"),
    }
