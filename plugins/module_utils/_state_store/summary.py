# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host variables of a stored cluster (the inventory plugin's and the info modules' view), from the Cluster and
InstanceGroup objects :mod:`.reader` returns. Pure functions on plain data: unit tests need no AWS."""

import hashlib
import json
import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import CONTROL_PLANE_ROLES, instance_group_zones, region_of_spec, subnet_topology


def kubernetes_minor(version):
    """``'1.34'`` for ``'1.34.1'``/``'v1.34.1'`` (str), or None when the version has no ``MAJOR.MINOR``
    (kops also accepts a URL to a build; those give None)."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.|$|-|\+)", str(version or "").strip())
    return "%s.%s" % match.groups() if match else None


def spec_fingerprint(record):
    """What a change of the cluster's stored state would change (dict, JSON-serialisable): ``config`` and
    ``instancegroup/<name>`` each the first 16 hex digits of the SHA-256 of the object's canonical JSON (sorted keys),
    and ``kops-version.txt`` the kops version of the last apply (None when never applied). Two readings are equal
    exactly when nobody wrote the Cluster, an InstanceGroup (added, removed or changed) or applied with another kops
    in between (a fleet run's approved plan: _fleet.approval)."""

    def digest(obj):
        return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]

    found = {"config": digest(record.get("cluster")), "kops-version.txt": record.get("kops_version")}
    for ig in record.get("instance_groups") or []:
        found["instancegroup/%s" % ((ig.get("metadata") or {}).get("name") or "")] = digest(ig)
    return found


def summarize_cluster(record):
    """Host variables for one cluster record from :func:`read_stores` (dict, JSON-serialisable).

    Keys: ``cluster_name``, ``state_store``, ``config_base``, ``cloud_provider``, ``kubernetes_version``,
    ``kubernetes_minor`` ('1.34'), ``region``, ``zones`` (subnet zones, sorted), ``control_plane_zones``
    (zones of the ControlPlane/Master groups, sorted), ``subnets`` (``name``/``zone``/``type``/``cidr``),
    ``topology`` ('private' when any subnet is Private or DualStack, kops' ``--topology private``;
    else 'public'), ``dns_type`` (``spec.topology.dns.type``; 'Public' when unset, kops' default in
    pkg/apis/kops/v1alpha2/defaults.go),
    ``dns_zone``, ``cloud_labels`` (dict), ``networking`` (the CNI's key, e.g. 'cilium'),
    ``instance_groups`` (list of ``name``/``role``/``min_size``/``max_size``/``machine_type``/``zones``/
    ``subnets``/``image``), ``node_count_min``/``node_count_max`` (sums over Node groups), ``kops_version_applied`` (the kops
    version that last applied the cluster, from its ``kops-version.txt``; None when never applied), ``spec_fingerprint``
    (:func:`spec_fingerprint`).
    """
    cluster = record["cluster"] or {}
    spec = cluster.get("spec") or {}
    subnets = spec.get("subnets") or []
    subnet_zones = {s.get("name"): s.get("zone") for s in subnets if s.get("zone")}
    groups = []
    for ig in record.get("instance_groups") or []:
        ig_spec = ig.get("spec") or {}
        groups.append(
            {
                "name": (ig.get("metadata") or {}).get("name"),
                "role": ig_spec.get("role"),
                "min_size": ig_spec.get("minSize"),
                "max_size": ig_spec.get("maxSize"),
                "machine_type": ig_spec.get("machineType"),
                "zones": instance_group_zones(ig_spec, subnets),
                "subnets": list(ig_spec.get("subnets") or []),
                "image": ig_spec.get("image"),
            }
        )
    control_plane = [g for g in groups if g["role"] in CONTROL_PLANE_ROLES]
    nodes = [g for g in groups if g["role"] == "Node"]
    networking = spec.get("networking") or {}
    version = spec.get("kubernetesVersion")
    return {
        "cluster_name": (cluster.get("metadata") or {}).get("name") or record["name"],
        "state_store": record["store"],
        "config_base": spec.get("configBase"),
        "cloud_provider": spec.get("cloudProvider") or next(iter(spec.get("cloudConfig") or {}), None),
        "kubernetes_version": str(version) if version is not None else None,
        "kubernetes_minor": kubernetes_minor(version),
        "region": region_of_spec(spec),
        "zones": sorted(set(subnet_zones.values())),
        "control_plane_zones": sorted({z for g in control_plane for z in g["zones"]}),
        "subnets": [{"name": s.get("name"), "zone": s.get("zone"), "type": s.get("type"), "cidr": s.get("cidr")} for s in subnets],
        "topology": subnet_topology(subnets) or "public",
        "dns_type": ((spec.get("topology") or {}).get("dns") or {}).get("type") or "Public",
        "dns_zone": spec.get("dnsZone"),
        "cloud_labels": dict(spec.get("cloudLabels") or {}),
        "networking": next((k for k in sorted(networking) if k not in ("subnets", "topology") and isinstance(networking[k], dict)), None)
        if isinstance(networking, dict)
        else None,
        "instance_groups": groups,
        "node_count_min": sum(g["min_size"] or 0 for g in nodes),
        "node_count_max": sum(g["max_size"] or 0 for g in nodes),
        "kops_version_applied": record.get("kops_version"),
        "spec_fingerprint": spec_fingerprint(record),
    }
