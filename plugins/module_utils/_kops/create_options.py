# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops_cluster's create-only options (the ``kops create cluster`` flags that only shape a new cluster): which they are,
what they were for a stored cluster (read back from its Cluster and InstanceGroups), and which given ones differ. Pure
functions on plain data (v1alpha2 dicts); compared, never written."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import instance_group_zones, subnet_topology
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import CLUSTER_FIELDS, get_path, normalize_role

# kops_cluster's --networking values -> the v1alpha2 spec.networking key kops stores them under
# (upup/pkg/fi/cloudup/new_cluster.go setupNetworking).
_NETWORKING_KEYS = {
    "kube-router": "kuberouter",
    "flannel-vxlan": "flannel",
    "flannel-udp": "flannel",
    "cilium-etcd": "cilium",
    "cilium-eni": "cilium",
    "kopeio-vxlan": "kopeio",
    "amazon-vpc-routed-eni": "amazonvpc",
    "gce": "gcp",
}


def _key_text(key):
    parts = (key or "").split()
    return " ".join(parts[:2])


def stored_create_options(cluster, groups, ssh_keys=None):
    """What the create-only options of kops_cluster were for a stored cluster: ``{option: value}`` in the
    options' own form (sets for zones), read from the Cluster and its InstanceGroups (v1alpha2 dicts) and
    ``ssh_keys`` (``kops get sshpublickeys -o json`` items, or None when not read)."""
    spec = (cluster or {}).get("spec") or {}
    subnets = spec.get("subnets") or []
    by_role = {"ControlPlane": [], "Node": []}
    for group in (groups or {}).values():
        gspec = group.get("spec") or {}
        by_role.setdefault(normalize_role(gspec.get("role")), []).append(gspec)
    cp, nodes = by_role["ControlPlane"], by_role["Node"]
    lb = get_path(spec, ("api", "loadBalancer")) or {}
    stored = {
        "zones": set(s.get("zone") for s in subnets if s.get("zone") and s.get("type") != "Utility"),
        "control_plane_zones": set(z for g in cp for z in instance_group_zones(g, subnets)),
        "control_plane_count": sum(g.get("minSize") or 0 for g in cp),
        "node_count": sum(g.get("minSize") or 0 for g in nodes),
        "node_size": set(g.get("machineType") for g in nodes),
        "control_plane_size": set(g.get("machineType") for g in cp),
        "networking": set((spec.get("networking") or {}).keys()),
        "topology": subnet_topology(subnets) or "public",
        "dns": str(get_path(spec, ("topology", "dns", "type")) or "").lower() or None,
        "dns_zone": (spec.get("dnsZone") or "").rstrip(".").lower() or None,
        "control_plane_image": set(g.get("image") for g in cp),
        "node_image": set(g.get("image") for g in nodes),
        "image": set(g.get("image") for g in cp + nodes),
        "vpc": spec.get("networkID"),
        "network_cidr": spec.get("networkCIDR"),
        "subnets": set(s.get("id") for s in subnets if s.get("id") and s.get("type") != "Utility"),
        "utility_subnets": set(s.get("id") for s in subnets if s.get("id") and s.get("type") == "Utility"),
        "api_loadbalancer_type": str(lb.get("type") or "").lower() or None,
        "additional_network_cidrs": list(spec.get("additionalNetworkCIDRs") or []),
        "egress": set(s.get("egress") for s in subnets if s.get("type") != "Utility"),
        "node_security_groups": set(sg for g in nodes for sg in g.get("additionalSecurityGroups") or []),
        "control_plane_security_groups": set(sg for g in cp for sg in g.get("additionalSecurityGroups") or []),
        # kops keeps the documents under a directory named after the cluster (new_cluster.go:392-399)
        "discovery_store": _parent_store(get_path(spec, ("serviceAccountIssuerDiscovery", "discoveryStore")), get_path(cluster, ("metadata", "name"))),
    }
    if ssh_keys is not None:
        stored["ssh_public_key"] = set(_key_text(k.get("publicKey")) for k in ssh_keys)
    return stored


def create_only_differences(params, stored):
    """The create-only options given that differ from the stored cluster (``stored`` from
    :func:`stored_create_options`): list of ``"option (given X; the cluster has Y)"``, in CREATE_ONLY order.
    An option kops derives from others is compared the way kops applies it: ``image`` to the groups that have no
    O(control_plane_image)/O(node_image) of their own, ``control_plane_count`` defaulting to one per
    control-plane zone is not guessed (only a given count is compared)."""
    differ = []

    def note(option, given, have):
        shown = sorted(have) if isinstance(have, set) else have
        differ.append("%s (given %s; the cluster has %s)" % (option, given, shown))

    for option in CREATE_ONLY:
        given = params.get(option)
        if given in (None, [], "") or option not in stored:
            continue
        have = stored[option]
        if option in ("zones", "control_plane_zones", "subnets", "utility_subnets", "node_security_groups", "control_plane_security_groups"):
            same = set(given) == have
        elif option in ("node_size", "control_plane_size", "node_image", "control_plane_image"):
            same = have <= {given}
        elif option == "image":
            targets = set()
            if not params.get("control_plane_image"):
                targets |= stored["control_plane_image"]
            if not params.get("node_image"):
                targets |= stored["node_image"]
            same = targets <= {given}
            have = targets
        elif option == "networking":
            same = _NETWORKING_KEYS.get(given, given) in have
        elif option == "egress":
            same = have == {given}
        elif option == "discovery_store":
            same = given.rstrip("/") == have
        elif option == "dns_zone":
            same = given.rstrip(".").lower() == have
        elif option == "ssh_public_key":
            same = _key_text(given) in have
            given, have = "a key", "%d other key(s)" % len(have)
        else:
            same = given == have
        if not same:
            note(option, given, have)
    return differ


# Options of kops_cluster that only shape a new cluster (kops create cluster flags); compared, never written.
CREATE_ONLY = (
    "zones",
    "control_plane_zones",
    "control_plane_count",
    "node_count",
    "node_size",
    "control_plane_size",
    "networking",
    "topology",
    "dns",
    "dns_zone",
    "ssh_public_key",
    "image",
    "control_plane_image",
    "node_image",
    "vpc",
    "network_cidr",
    "subnets",
    "utility_subnets",
    "api_loadbalancer_type",
    "additional_network_cidrs",
    "egress",
    "node_security_groups",
    "control_plane_security_groups",
    "discovery_store",
)


def _parent_store(path, name):
    """``s3://b/x/<name>`` -> ``s3://b/x`` (the store given to kops); None stays None."""
    if not path:
        return None
    path = path.rstrip("/")
    return path[: -len(name) - 1] if name and path.endswith("/" + name) else path


def requested_options(params):
    """What a kops_cluster run was asked, apart from what kops reports: ``{option: value}`` for each option that
    shapes the cluster and was given (the create-only options, the convergeable fields of
    ``kops_spec.CLUSTER_FIELDS``, ``cloud``, ``bastion``, ``spec``). Check mode reports kops' own dry run in
    ``spec``; this is the other half, so that a value kops did not take shows as a difference."""
    names = CREATE_ONLY + tuple(CLUSTER_FIELDS) + ("cloud", "bastion", "spec")
    return dict((name, params[name]) for name in names if params.get(name) not in (None, [], "", {}, False))
