# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adopt an existing cluster: its Cluster and InstanceGroup objects, as the state store holds them, turned into the
options of kops_cluster and kops_instancegroup that describe them exactly (a run with them changes nothing), and the
parts that no option can say, named (nothing is dropped silently). Used by kops_cluster_info (``adopt``) and the
adopt role."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.ig import IG_FIELDS
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec_fields import CLUSTER_SPEC_FIELDS, IG_SPEC_FIELDS

# InstanceGroup spec fields given as their own kops_instancegroup option: the ones a person reads first and changes
# most (sizes, machine type, image, placement, labels, taints), whose stored form is the option's form (ints, strings,
# lists of strings, maps of strings). Every other field stays in the option ``spec`` under its v1alpha2 name, exactly as
# stored, so no conversion can change it.
IG_OPTIONS = ("min_size", "max_size", "machine_type", "image", "subnets", "zones", "node_labels", "cloud_labels", "taints")

# metadata kops itself writes (pkg/apis/kops ObjectMeta): not the user's to state
KOPS_METADATA = ("name", "creationTimestamp", "generation", "resourceVersion", "uid")


def _metadata_left(doc, kind, cluster=None):
    """``kind.metadata.<key>`` for each metadata entry no option can say: labels other than kops' cluster label,
    annotations, any other key kops does not write itself (list of str)."""
    metadata = doc.get("metadata") or {}
    left = []
    for key, value in sorted(metadata.items()):
        if key in KOPS_METADATA:
            continue
        if key == "labels" and isinstance(value, dict):
            left += ["%s.metadata.labels.%s" % (kind, k) for k in sorted(value) if not (k == "kops.k8s.io/cluster" and value[k] == cluster)]
        elif key == "annotations" and isinstance(value, dict):
            left += ["%s.metadata.annotations.%s" % (kind, k) for k in sorted(value)]
        else:
            left.append("%s.metadata.%s" % (kind, key))
    return left


def adopt_cluster(doc):
    """kops_cluster's options for the Cluster object ``doc`` (dict, v1alpha2 as stored): ``(options, not_expressed)``.

    ``options``: ``name`` and ``spec``, every spec field kops_cluster's ``spec`` takes (spec_fields.CLUSTER_SPEC_FIELDS,
    the rule kops_cluster checks ``spec`` with), as stored. ``not_expressed``: the spec fields it does not take and the
    metadata no option says (list of str, e.g. ``Cluster.spec.someNewField``)."""
    name = (doc.get("metadata") or {}).get("name")
    spec = doc.get("spec") or {}
    options = {"name": name, "spec": dict((k, v) for k, v in spec.items() if k in CLUSTER_SPEC_FIELDS)}
    left = ["Cluster.spec.%s" % k for k in sorted(spec) if k not in CLUSTER_SPEC_FIELDS]
    return options, left + _metadata_left(doc, "Cluster")


def adopt_instance_group(doc, cluster):
    """kops_instancegroup's options for the InstanceGroup object ``doc`` (dict, v1alpha2 as stored) of cluster
    ``cluster`` (str): ``(options, not_expressed)``.

    ``options``: ``cluster``, ``name``, ``role`` (as stored), the fields of :data:`IG_OPTIONS` as their options, and
    every other spec field kops_instancegroup's ``spec`` takes (spec_fields.IG_SPEC_FIELDS) under ``spec``, as stored.
    ``not_expressed``: the spec fields it does not take and the metadata no option says (list of str, e.g.
    ``InstanceGroup nodes.spec.someNewField``)."""
    name = (doc.get("metadata") or {}).get("name")
    spec = dict(doc.get("spec") or {})
    options = {"cluster": cluster, "name": name}
    if spec.get("role") is not None:
        options["role"] = spec.pop("role")
    for option in IG_OPTIONS:
        if spec.get(IG_FIELDS[option]) is not None:
            options[option] = spec.pop(IG_FIELDS[option])
    rest = dict((k, v) for k, v in spec.items() if k in IG_SPEC_FIELDS)
    if rest:
        options["spec"] = rest
    kind = "InstanceGroup %s" % name
    left = ["%s.spec.%s" % (kind, k) for k in sorted(spec) if k not in IG_SPEC_FIELDS]
    return options, left + _metadata_left(doc, kind, cluster)


def adoption(record):
    """The adoption of one cluster read from the state store (``record``: ``{'cluster': Cluster object,
    'instance_groups': [InstanceGroup objects]}``, _state_store.reader): ``{'cluster': kops_cluster options,
    'instance_groups': [kops_instancegroup options, sorted by name], 'not_expressed': [str]}``."""
    cluster, left = adopt_cluster(record["cluster"])
    groups = []
    for doc in sorted(record.get("instance_groups") or [], key=lambda d: (d.get("metadata") or {}).get("name") or ""):
        options, group_left = adopt_instance_group(doc, cluster["name"])
        groups.append(options)
        left += group_left
    return {"cluster": cluster, "instance_groups": groups, "not_expressed": left}
