# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired-vs-current for kOps manifests (Cluster, InstanceGroup in kops.k8s.io/v1alpha2): build the
object to write, and the field-level diff that decides whether anything is written at all.

Pure functions on dicts; the objects are what ``kops get ... -o json`` returns and ``kops replace -f``
accepts.
"""

import copy

from ansible_collections.kopsible.kops.plugins.module_utils._kops.kube_versions import normalize_version

# Module option -> path in a v1alpha2 Cluster (pkg/apis/kops/v1alpha2/cluster.go json tags).
CLUSTER_FIELDS = {
    "kubernetes_version": ("spec", "kubernetesVersion"),
    "cloud_labels": ("spec", "cloudLabels"),
    "channel": ("spec", "channel"),
    "admin_access": ("spec", "kubernetesApiAccess"),
    "ssh_access": ("spec", "sshAccess"),
}


# Fields the server fills in, never compared or written back.
SERVER_FIELDS = (("metadata", "creationTimestamp"), ("metadata", "generation"), ("metadata", "resourceVersion"), ("metadata", "uid"), ("status",))


def get_path(obj, path, default=None):
    """Value at ``path`` (tuple of keys) in nested dicts, or ``default``."""
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def set_path(obj, path, value):
    """Set ``path`` (tuple of keys) in nested dicts, creating dicts on the way; ``None`` removes the key."""
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    if value is None:
        obj.pop(path[-1], None)
    else:
        obj[path[-1]] = value


def deep_merge(base, patch):
    """A copy of ``base`` with ``patch`` merged in: dicts merge recursively, anything else (lists,
    scalars) replaces, and a ``None`` value removes the key (the way a strategic merge deletes)."""
    result = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (patch or {}).items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = deep_merge(result.get(key) if isinstance(result.get(key), dict) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def strip_server_fields(obj):
    """A copy of a manifest without fields the server owns (creation timestamp, status...)."""
    obj = copy.deepcopy(obj)
    for path in SERVER_FIELDS:
        parent = get_path(obj, path[:-1]) if len(path) > 1 else obj
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
    return obj


def diff_paths(before, after, prefix=""):
    """Field-level differences between two manifests.

    :returns: list of ``{'path': 'spec.kubernetesVersion', 'before': old, 'after': new}`` sorted by
        path; a missing side is ``None``. Lists are compared whole.
    """
    changes = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            path = "%s.%s" % (prefix, key) if prefix else str(key)
            changes.extend(diff_paths(before.get(key), after.get(key), path))
    elif before != after:
        changes.append({"path": prefix, "before": before, "after": after})
    return changes


def _is_set(value):
    """A value kops keeps (``omitempty``): not None, False, 0, "", an empty list, or a map of only such values."""
    if isinstance(value, dict):
        return any(_is_set(v) for v in value.values())
    if isinstance(value, list):
        return bool(value)
    return value not in (None, False, 0, "")


def dropped_paths(desired, stored, prefix="spec"):
    """The fields set in ``desired`` that kops did not keep in ``stored`` (both manifests; only under ``spec``).

    kops decodes a manifest leniently (cmd/kops/replace.go ``kopscodecs.Decode``): a field its API does not know is
    dropped without a word, so a misspelled nested field (``spec.kubeAPIServer.auditLogMaxAge`` written
    ``auditLogMaxAges``) reaches no cluster. Read back after ``kops replace``, such a field is missing. Only set values
    count: kops omits empty values (``omitempty``), so ``None``, ``False``, ``0``, ``""``, empty lists and maps of only such values are
    never reported; lists are followed item by item when both have the same length.

    :returns: sorted list of dotted paths (``'spec.kubeAPIServer.auditLogMaxAges'``, ``'spec.hooks[0].nmae'``).
    """
    found = []
    is_set = _is_set

    def walk(want, have, path):
        if isinstance(want, dict):
            if not isinstance(have, dict):
                have = {}
            for key, value in want.items():
                if not is_set(value):
                    continue
                child = "%s.%s" % (path, key)
                if key not in have:
                    found.append(child)
                else:
                    walk(value, have[key], child)
        elif isinstance(want, list) and isinstance(have, list) and len(want) == len(have):
            for index, (item, kept) in enumerate(zip(want, have)):
                walk(item, kept, "%s[%d]" % (path, index))

    walk((desired or {}).get(prefix), (stored or {}).get(prefix), prefix)
    return sorted(found)


def _steps(path):
    """``'spec.hooks[0].name'`` -> ``['spec', 'hooks', 0, 'name']``."""
    steps = []
    for part in path.split("."):
        name, _bracket, rest = part.partition("[")
        if name:
            steps.append(name)
        while rest:
            index, _close, rest = rest.partition("]")
            steps.append(int(index))
            rest = rest[1:] if rest.startswith("[") else rest
    return steps


def requested_dropped(fragment, dropped, prefix="spec"):
    """The set fields of a ``spec`` fragment (dotted paths of its leaves, as :func:`dropped_paths` writes them) that
    kops did not keep: a leaf is dropped when a path of ``dropped`` is it or holds it. Returns ``(requested, dropped
    ones)``, two sorted lists."""
    requested = []

    def walk(value, path):
        if isinstance(value, dict) and value:
            for key, child in value.items():
                walk(child, "%s.%s" % (path, key))
        elif _is_set(value):
            requested.append(path)

    walk(fragment or {}, prefix)
    gone = [r for r in requested if any(r == d or r.startswith(d + ".") or r.startswith(d + "[") for d in dropped)]
    return sorted(requested), sorted(gone)


def without_dropped(desired, dropped, current):
    """``desired`` (a manifest, not changed) without the fields of ``dropped`` (:func:`dropped_paths`) and without the
    maps that removing them left empty where ``current`` (the stored manifest) had none: kops would store such a map
    as an empty parent (``kubeAPIServer: {}``) that changes the spec, and every run would find it changed again."""
    import copy

    result = copy.deepcopy(desired)
    for path in dropped:
        steps = _steps(path)
        parent = result
        for step in steps[:-1]:
            try:
                parent = parent[step]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        if isinstance(parent, dict):
            parent.pop(steps[-1], None)

    def prune(value, before):
        if not isinstance(value, dict):
            return value
        for key in list(value):
            child = value[key]
            kept = before.get(key) if isinstance(before, dict) else None
            if isinstance(child, dict):
                prune(child, kept)
                if not child and not isinstance(kept, dict):
                    del value[key]
        return value

    return prune(result, current or {})


def report_dropped_fields(result, desired, stored, warn):
    """Name the fields of ``desired`` that kops did not keep in ``stored`` (:func:`dropped_paths`), for both modules
    that write specs: ``result['dropped_fields']`` (list of dotted paths, only when there are some) and one warning
    through ``warn`` (a callable given a str, e.g. ``module.warn``)."""
    dropped = dropped_paths(desired, stored)
    if dropped:
        result["dropped_fields"] = dropped
        warn("kops did not keep %s: fields its API (kops.k8s.io/v1alpha2) does not know are dropped without a word; check their spelling" % ", ".join(dropped))


def _leaves(change):
    """A change of :func:`diff_paths` as leaf changes ``{path: (before, after)}`` (a dict added or removed whole is
    split into its keys, so that two runs adding different keys to one map do not meet)."""
    before, after, path = change["before"], change["after"], change["path"]
    if isinstance(before, dict) or isinstance(after, dict):
        leaves = {}
        for sub in diff_paths(before if isinstance(before, dict) else {}, after if isinstance(after, dict) else {}, path):
            leaves.update(_leaves(sub))
        if not (isinstance(before, dict) and isinstance(after, dict)):  # a dict replacing a scalar or None
            leaves.setdefault(path, (before if not isinstance(before, dict) else None, after if not isinstance(after, dict) else None))
        return leaves
    return {path: (before, after)}


def changed_meanwhile(planned, replanned):
    """The fields a run sets that another run changed between the run's first read and its re-read under the lock.

    :param planned: :func:`diff_paths` of the first plan (stored then -> desired).
    :param replanned: :func:`diff_paths` of the plan on the spec re-read under the lock (stored now -> desired).
    :returns: sorted list of ``"PATH (was X when this run read it, now Y; this run sets Z)"``: a field of both plans
        whose stored value differs between the two reads. A field only the other run changed is not listed (it is
        kept); nor is one the other run set to this run's value (it is no longer in ``replanned``).
    """
    first = {}
    for change in planned or []:
        first.update(_leaves(change))
    found = []
    for change in replanned or []:
        for path, (now, wanted) in sorted(_leaves(change).items()):
            if path in first and first[path][0] != now:
                found.append("%s (was %s when this run read it, now %s; this run sets %s)" % (path, first[path][0], now, wanted))
    return sorted(found)


# InstanceGroup roles (pkg/apis/kops/instancegroup.go); v1alpha2 still writes the control plane as "Master".
ROLES = ("ControlPlane", "Node", "Bastion", "APIServer")
_ROLE_ALIASES = {
    "master": "ControlPlane",
    "controlplane": "ControlPlane",
    "control-plane": "ControlPlane",
    "node": "Node",
    "bastion": "Bastion",
    "apiserver": "APIServer",
}


def normalize_role(role):
    """One spelling per InstanceGroup role: ``Master``/``control-plane`` -> ``ControlPlane`` etc.;
    an unknown role is returned unchanged (the caller validates)."""
    return _ROLE_ALIASES.get(str(role).lower(), role) if role else role


def cluster_overrides(params, current=None):
    """``{path tuple: value}`` for each convergeable cluster option that was given (not None).

    ``current`` (the stored Cluster dict, or None): ``kubernetes_version`` equal to the stored one up to the
    leading ``v`` (kops keeps the spelling it was given, ``v1.32.0`` or ``1.32.0``; pkg/apis/kops/util/versions.go
    ParseKubernetesVersion reads both as one version) keeps the stored spelling, so that the same version is
    never a change; a different version is written without the ``v``.
    """
    overrides = {}
    for option, path in CLUSTER_FIELDS.items():
        value = params.get(option)
        if value is None:
            continue
        if option == "kubernetes_version":
            stored = get_path(current, path)
            same = isinstance(stored, str) and normalize_version(stored) == normalize_version(value)
            value = stored if same else normalize_version(value)
        if option == "cloud_labels":
            value = labels_as_text(value)
        overrides[path] = value
    return overrides


def labels_as_text(labels):
    """A label map with keys and values as text (kops stores ``map[string]string``); a ``None`` value is kept,
    it removes the label (:func:`desired_object`)."""
    return {str(k): (None if v is None else str(v)) for k, v in labels.items()}


def desired_object(current, overrides=None, raw_spec=None):
    """The manifest to write: ``current`` (server fields stripped) with ``raw_spec`` deep-merged into
    ``spec`` and then each override applied. ``current`` itself is not modified.

    One rule for every dict option (the merge rule): a dict override is merged into the stored value
    (:func:`deep_merge`: keys given are set, keys not given are kept, a key given as ``None`` is removed; a
    dict left empty is removed); any other override replaces the stored value, and ``None`` removes it.
    """
    desired = strip_server_fields(current)
    if raw_spec:
        desired["spec"] = deep_merge(desired.get("spec") or {}, raw_spec)
    for path, value in (overrides or {}).items():
        if isinstance(value, dict):
            stored = get_path(desired, path)
            value = deep_merge(stored if isinstance(stored, dict) else {}, value) or None
        set_path(desired, path, copy.deepcopy(value))
    return desired
