"""Rehearse a change to an existing cluster offline (issue 32): the cluster's twin in the local world, a user's playbook
run against the twin, and a report of what the change would do to the real cluster (scripts/rehearse.py is the
command; docs/rehearsal.md says what the twin models and what it cannot).

The source (the real cluster) is only read: its state store through :class:`ReadOnlyS3`, which refuses every call
but reads before anything is sent, and its API (optional) through a kubeconfig whose Nodes, Pods and
PodDisruptionBudgets are listed. Everything is written to the twin: the local world's emulator (the twin's state
store, hosted zone, Auto Scaling groups) and its kube world (the twin's control plane, nodes, and the imported
budgets and pods).

Pure parts, unit-tested without the world: :func:`unhostable` (what the local world cannot host, named),
:func:`twin_objects` (the source's objects with the names the twin must change, and the mapping),
:func:`pods_to_import` (the live budgets' pods, placed on the twin's nodes) and :func:`report` (from the playbook's
results).
"""

import copy
import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.pdb import selector_matches
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import diff_paths, get_path
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import parse_store_url

INSTANCE_GROUP_LABEL = "kops.k8s.io/instancegroup"

# kops' rolling-update defaults (cmd/kops/rolling-update_cluster.go NewCmdRollingUpdateCluster): the pause after each
# control-plane node / worker / bastion, and after a drain, in seconds. The rolling_update module passes kops' defaults
# unless a task sets its own.
KOPS_INTERVALS = {"ControlPlane": 15, "APIServer": 15, "Node": 15, "Bastion": 15}
KOPS_POST_DRAIN_DELAY = 5

# Calls of a boto3 S3 client that only read (the S3 API's Get*/List*/Head* of objects and buckets).
READ_CALLS = frozenset(["get_object", "head_object", "list_objects_v2", "head_bucket", "get_bucket_location", "get_bucket_versioning"])
READ_PAGINATORS = frozenset(["list_objects_v2"])


class RehearsalError(Exception):
    """A rehearsal that stopped: ``str(exc)`` names what, and says that nothing was written to the source."""


class Unhostable(RehearsalError):
    """The source's spec uses what the local world cannot host. ``fields``: list of ``(field, why)``."""

    def __init__(self, fields):
        self.fields = fields
        super(Unhostable, self).__init__(
            "the local world cannot host %s; nothing was written (to the source or the twin)" % "; ".join("%s (%s)" % (field, why) for field, why in fields)
        )


class ReadOnlyS3(object):
    """A boto3 S3 client that only reads: any call but :data:`READ_CALLS` (and paginators but
    :data:`READ_PAGINATORS`) raises :class:`RehearsalError` before a request is made, so the source's store is safe
    even from a bug of the rehearsal. The source's credentials should be read-only too (docs/rehearsal.md)."""

    def __init__(self, client):
        self._client = client

    def get_paginator(self, operation):
        if operation not in READ_PAGINATORS:
            raise RehearsalError("the source's state store is read only: paginator %s refused" % operation)
        return self._client.get_paginator(operation)

    def __getattr__(self, name):
        if name not in READ_CALLS:
            raise RehearsalError("the source's state store is read only: S3 %s refused" % name)
        return getattr(self._client, name)


def _is_zone_id(value):
    """A Route53 hosted zone id (``Z0123...`` or ``/hostedzone/Z0123...``), as kops tells an id from a name
    (dns-controller/pkg/dns/dnscontroller.go, pkg/resources/aws: a dnsZone without a dot is an id)."""
    return "." not in value.strip(".")


# Fields whose value is an existing resource of the source's AWS account that the twin does not have: kops uses them
# as found, so the twin cannot be applied with them (pkg/apis/kops/v1alpha2/cluster.go, instancegroup.go).
CLUSTER_UNHOSTABLE = (
    (("networkID",), "an existing VPC of the source account (kops' shared VPC, docs/networking/run-in-existing-vpc.md)"),
    (("api", "loadBalancer", "sslCertificate"), "an ACM certificate of the source account"),
    (("api", "loadBalancer", "securityGroupOverride"), "a security group of the source account"),
    (("api", "loadBalancer", "additionalSecurityGroups"), "security groups of the source account"),
    (("iam", "permissionsBoundary"), "an IAM policy of the source account"),
    (("externalPolicies",), "IAM policies of the source account"),
)
GROUP_UNHOSTABLE = (
    (("additionalSecurityGroups",), "security groups of the source account"),
    (("securityGroupOverride",), "a security group of the source account"),
    (("externalLoadBalancers",), "load balancers or target groups of the source account"),
    (("iam", "profile"), "an instance profile of the source account"),
)


def unhostable(record):
    """What of the source's objects the local world cannot host (list of ``(field, why)``, empty when it can), for
    ``record`` ``{'cluster': Cluster object, 'instance_groups': [InstanceGroup objects]}`` as the state store holds
    them (v1alpha2): a cloud other than AWS (``spec.cloudProvider``), the existing resources of
    :data:`CLUSTER_UNHOSTABLE` and :data:`GROUP_UNHOSTABLE`, shared subnets (``spec.subnets[].id``, ``.egress``:
    pkg/apis/kops/v1alpha2/cluster.go ClusterSubnetSpec) and a DNS zone given by id (its name is in the source's
    Route53, which the rehearsal does not read)."""
    spec = record["cluster"].get("spec") or {}
    found = []
    cloud = spec.get("cloudProvider")
    if isinstance(cloud, dict):
        cloud = ",".join(sorted(cloud))
    if cloud and cloud != "aws":
        found.append(("Cluster.spec.cloudProvider", "%s: the local world is AWS only" % cloud))
    for path, why in CLUSTER_UNHOSTABLE:
        if get_path(spec, path):
            found.append(("Cluster.spec." + ".".join(path), why))
    for index, subnet in enumerate(spec.get("subnets") or []):
        for key in ("id", "egress"):
            if subnet.get(key) and not (key == "egress" and subnet[key] == "External"):
                found.append(("Cluster.spec.subnets[%d].%s" % (index, key), "%s of the source account (a shared subnet)" % subnet[key]))
    zone = spec.get("dnsZone")
    if zone and _is_zone_id(zone):
        found.append(("Cluster.spec.dnsZone", "hosted zone id %s: give the zone by name in the spec to rehearse" % zone))
    for group in record.get("instance_groups") or []:
        name = (group.get("metadata") or {}).get("name")
        for path, why in GROUP_UNHOSTABLE:
            if get_path(group.get("spec") or {}, path):
                found.append(("InstanceGroup %s.spec.%s" % (name, ".".join(path)), why))
    return found


def twin_bucket(bucket):
    """The twin's name for the source's bucket ``bucket`` (str): ``twin-`` + the name, at most 63 characters (S3's
    bucket name rule), so that a twin's object can never be taken for the source's."""
    return ("twin-" + bucket)[:63].rstrip("-.")


def _map_strings(value, old, new, path, mapped):
    """``value`` with every string starting with ``old`` starting with ``new`` instead; each change appended to
    ``mapped`` as ``{'field', 'source', 'twin'}``."""
    if isinstance(value, dict):
        return dict((k, _map_strings(v, old, new, "%s.%s" % (path, k), mapped)) for k, v in value.items())
    if isinstance(value, list):
        return [_map_strings(v, old, new, "%s[%d]" % (path, i), mapped) for i, v in enumerate(value)]
    if isinstance(value, str) and (value == old or value.startswith(old + "/")):
        twin = new + value[len(old) :]
        mapped.append({"field": path, "source": value, "twin": twin})
        return twin
    return value


def _clean(doc):
    """A copy of a stored object without the metadata kops writes itself (it is not the user's to copy)."""
    doc = copy.deepcopy(doc)
    metadata = doc.get("metadata") or {}
    for key in ("creationTimestamp", "generation", "resourceVersion", "uid"):
        metadata.pop(key, None)
    return doc


def twin_objects(record, source_store, images=None, twin_image=None):
    """The twin's Cluster and InstanceGroup objects (for ``kops create -f``) and the names that differ:
    ``(cluster, groups, mapped, buckets)``.

    Every ``s3://BUCKET`` in the objects (configBase, configStore, etcd backup stores, a discovery store) becomes
    ``s3://twin-BUCKET`` (:func:`twin_bucket`); ``buckets`` lists the twin buckets to create. An InstanceGroup image
    that is not in ``images`` (the twin's AMI ids and names, a set) becomes ``twin_image`` (the local world's
    instances never boot an image). ``mapped``: list of ``{'field', 'source', 'twin'}``. ``source_store``: the
    source's state store URL (its bucket is always mapped, even when the spec does not name it)."""
    mapped = []
    cluster = _clean(record["cluster"])
    groups = [_clean(g) for g in record.get("instance_groups") or []]
    for group in groups:  # the stored objects leave it out (their folder says it); kops create -f asks for it
        group["metadata"].setdefault("labels", {})["kops.k8s.io/cluster"] = cluster["metadata"]["name"]
    buckets = {parse_store_url(source_store)[0]}
    for doc in [cluster] + groups:
        _collect_buckets(doc, buckets)
    for bucket in sorted(buckets):
        new = "s3://" + twin_bucket(bucket)
        cluster["spec"] = _map_strings(cluster.get("spec") or {}, "s3://" + bucket, new, "Cluster.spec", mapped)
        for group in groups:
            name = group["metadata"]["name"]
            group["spec"] = _map_strings(group.get("spec") or {}, "s3://" + bucket, new, "InstanceGroup %s.spec" % name, mapped)
    if twin_image:
        for group in groups:
            image = (group.get("spec") or {}).get("image")
            if image and image not in (images or ()):
                group["spec"]["image"] = twin_image
                mapped.append({"field": "InstanceGroup %s.spec.image" % group["metadata"]["name"], "source": image, "twin": twin_image})
    return cluster, groups, mapped, sorted(twin_bucket(b) for b in buckets)


def _collect_buckets(value, buckets):
    if isinstance(value, dict):
        for v in value.values():
            _collect_buckets(v, buckets)
    elif isinstance(value, list):
        for v in value:
            _collect_buckets(v, buckets)
    elif isinstance(value, str) and value.startswith("s3://"):
        bucket = value[len("s3://") :].split("/", 1)[0]
        if bucket:
            buckets.add(bucket)


def node_group(node):
    """The InstanceGroup (str or None) of a Node object (dict, the API's JSON shape), from kops' node label."""
    return ((node.get("metadata") or {}).get("labels") or {}).get(INSTANCE_GROUP_LABEL)


def node_map(source_nodes, twin_nodes):
    """``{source node name: twin node name}``: per InstanceGroup, the source's nodes sorted by name paired with the
    twin's in the same order (wrapping when the twin has fewer). A source node whose group the twin lacks is left
    out."""
    by_group = {}
    for node in twin_nodes:
        by_group.setdefault(node_group(node), []).append(node["metadata"]["name"])
    mapping = {}
    for group, names in _nodes_by_group(source_nodes).items():
        twins = sorted(by_group.get(group) or [])
        for index, name in enumerate(sorted(names)):
            if twins:
                mapping[name] = twins[index % len(twins)]
    return mapping


def _nodes_by_group(nodes):
    groups = {}
    for node in nodes:
        groups.setdefault(node_group(node), []).append(node["metadata"]["name"])
    return groups


def group_sizes(source_nodes):
    """``{InstanceGroup: node count}`` of the live cluster (its Nodes with kops' group label)."""
    return dict((g, len(n)) for g, n in _nodes_by_group(source_nodes).items() if g)


def pods_to_import(pdbs, pods, nodes_mapping, present=()):
    """The live cluster's PodDisruptionBudgets and the pods they select, as the objects to create in the twin:
    ``(budgets, pods)``, lists of dicts in the API's JSON shape.

    A budget keeps its name, namespace, selector, ``minAvailable``/``maxUnavailable`` and
    ``unhealthyPodEvictionPolicy``; a pod keeps its name, namespace and labels and is pinned to the twin node that
    :func:`node_map` gives for its node (so the twin has the same pods per node), with one pause container. Pods
    that no budget selects, or that are not running on a mapped node, are left out; so are finished pods. A budget
    the twin already has (``present``: set of ``(namespace, name)``, e.g. kube-dns, an addon kops installs in every
    cluster) is left out with its pods: the twin's own addon and its pods stand for it."""
    budgets, chosen = [], {}
    for pdb in pdbs:
        meta, spec = pdb.get("metadata") or {}, pdb.get("spec") or {}
        namespace = meta.get("namespace")
        if (namespace, meta.get("name")) in set(present):
            continue
        keep = dict((k, spec[k]) for k in ("selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy") if k in spec)
        budgets.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": meta.get("name"), "namespace": namespace}, "spec": keep})
        for pod in pods:
            pmeta = pod.get("metadata") or {}
            node = (pod.get("spec") or {}).get("nodeName")
            if pmeta.get("namespace") != namespace or node not in nodes_mapping:
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if selector_matches(spec.get("selector"), pmeta.get("labels")):
                chosen[(namespace, pmeta["name"])] = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": pmeta["name"], "namespace": namespace, "labels": dict(pmeta.get("labels") or {})},
                    "spec": {
                        "nodeName": nodes_mapping[node],
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "stand-in", "image": "registry.k8s.io/pause:3.10"}],
                    },
                }
    return budgets, [chosen[k] for k in sorted(chosen)]


def _twin_to_source(text, reverse):
    """``text`` (str) with every twin name of ``reverse`` ({twin: source}) replaced by the source's name."""
    if not isinstance(text, str) or not reverse:
        return text
    pattern = re.compile("|".join(re.escape(k) for k in sorted(reverse, key=len, reverse=True)))
    return pattern.sub(lambda m: reverse[m.group(0)], text)


def store_writes(before, after, mapped):
    """What the change wrote to the twin's store, said in the source's names: list of ``{'object', 'path', 'before',
    'after'}`` for ``before``/``after`` ``{object name: object}`` (e.g. ``{'Cluster': {...}, 'InstanceGroup nodes':
    {...}}``), an object added or deleted as one entry with path ``''``."""
    reverse = dict((m["twin"], m["source"]) for m in mapped if isinstance(m.get("twin"), str))
    writes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None or new is None:
            writes.append({"object": name, "path": "", "before": "absent" if old is None else "present", "after": "absent" if new is None else "present"})
            continue
        for change in diff_paths(_clean(old), _clean(new)):
            writes.append(
                {
                    "object": name,
                    "path": change["path"],
                    "before": _twin_to_source(change["before"], reverse),
                    "after": _twin_to_source(change["after"], reverse),
                }
            )
    return writes


def _group_roles(record):
    return dict(((g.get("metadata") or {}).get("name"), (g.get("spec") or {}).get("role")) for g in record.get("instance_groups") or [])


def report(results, record, sizes, nodes_mapping, writes, mapped):
    """The rehearsal's report (dict) from the user's playbook run against the twin.

    :param results: the playbook's task results in order (list of dicts, each with ``task`` (name), ``action`` (the
        module) and ``result``), from harness.playbook's kopsible_json callback.
    :param record: the source's objects (:func:`unhostable`'s ``record``).
    :param sizes: ``{InstanceGroup: node count}`` of the live cluster, or of the stored specs' minSize without a
        kubeconfig.
    :param nodes_mapping: ``{source node: twin node}``; the report names the source's nodes.
    :returns: ``{'cloud_plan': [str], 'roll_order': [{'name', 'role', 'nodes'}], 'blocking': [{'budget', 'pods'}],
        'rolled': [{'name', 'nodes', 'seconds', 'seconds_per_node'}], 'expected_roll_seconds': {group: seconds},
        'expected_roll_total_seconds', 'writes', 'mapped', 'failed': None or {'task', 'msg'}}``; ``cloud_plan`` is the
        ``plan_summary`` of every kops_cluster and kops_instancegroup task. The expected time
        of a group is its live node count times the twin's measured seconds per node when the twin rolled it, else
        kops' default interval and post-drain delay per node (:data:`KOPS_INTERVALS`), a lower bound.
    """
    reverse_nodes = dict((twin, source) for source, twin in nodes_mapping.items())
    roles = _group_roles(record)
    out = {"cloud_plan": [], "roll_order": [], "blocking": [], "rolled": [], "writes": writes, "mapped": mapped, "failed": None}
    seen_order = set()
    measured = {}
    for entry in results:
        action, result = entry.get("action") or "", entry.get("result") or {}
        if action.endswith(("kops_cluster", "kops_instancegroup")):
            for line in result.get("plan_summary") or []:
                if line not in out["cloud_plan"]:
                    out["cloud_plan"].append(line)
        if action.endswith("rolling_update"):
            for group in result.get("roll_order") or []:
                if group["name"] not in seen_order:
                    seen_order.add(group["name"])
                    out["roll_order"].append(
                        {"name": group["name"], "role": group.get("role") or roles.get(group["name"]), "nodes": sizes.get(group["name"], 0)}
                    )
            for budget in (result.get("pdb_check") or {}).get("blocking") or []:
                item = {"budget": "%s/%s" % (budget["namespace"], budget["name"]), "pods": [_twin_to_source(p, reverse_nodes) for p in budget["pods"]]}
                if item not in out["blocking"]:
                    out["blocking"].append(item)
            for group in result.get("rolled") or []:
                nodes = len(group.get("nodes_drained") or []) or len(group.get("instances") or [])
                per_node = round(group["seconds"] / nodes, 1) if nodes and group.get("seconds") else None
                measured[group["name"]] = per_node
                out["rolled"].append({"name": group["name"], "nodes": nodes, "seconds": group.get("seconds"), "seconds_per_node": per_node})
        if result.get("failed") and not entry.get("ignored") and out["failed"] is None:
            out["failed"] = {"task": entry.get("task"), "msg": _twin_to_source(result.get("msg"), reverse_nodes)}
    expected = {}
    for group in out["roll_order"]:
        role = group["role"] or "Node"
        per_node = measured.get(group["name"]) or (KOPS_INTERVALS.get(role, 15) + KOPS_POST_DRAIN_DELAY)
        expected[group["name"]] = round(group["nodes"] * per_node, 1)
    out["expected_roll_seconds"] = expected
    out["expected_roll_total_seconds"] = round(sum(expected.values()), 1)
    return out
