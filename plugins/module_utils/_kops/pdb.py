# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PodDisruptionBudget check before a rolling update.

kops drains every node it replaces (pkg/instancegroups/instancegroups.go, ``drainNode``, through
kubectl's drain helper, which evicts pods with the Eviction API). An eviction that a
PodDisruptionBudget forbids is retried until ``--drain-timeout`` and then fails the roll half-way
(or, with ``--fail-on-drain-error=false``, the node is terminated with the pods still on it).
This check finds such budgets before anything rolls.

The logic (:func:`nodes_to_roll`, :func:`selector_matches`, :func:`blocking_pdbs`) works on plain
Kubernetes API objects as dicts (the JSON shape of ``/api/v1/nodes``, ``/api/v1/pods`` and
``/apis/policy/v1/poddisruptionbudgets`` list items); :func:`read_cluster_objects` reads them with the
kubernetes Python client.
"""

INSTANCE_GROUP_LABEL = "kops.k8s.io/instancegroup"  # set by kops on every node (nodelabels/builder.go)

try:
    import importlib.util

    # found, not imported: the client takes about 0.6 s to import, which every rolling_update and info module run paid
    # at start-up though only a run given a kubeconfig reads the API (kubernetes_client imports it then)
    HAS_KUBERNETES = importlib.util.find_spec("kubernetes") is not None
except (ImportError, ValueError):  # pragma: no cover - reported through missing_required_lib
    HAS_KUBERNETES = False


def kubernetes_client():
    """``(kubernetes.client, kubernetes.config)``, imported on first use. :raises ImportError: no kubernetes client
    (the modules check :data:`HAS_KUBERNETES` first and fail with missing_required_lib)."""
    from kubernetes import client, config

    return client, config


def _get(obj, *path):
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def instance_id_of(node):
    """The EC2 instance id of a Node (dict) from ``spec.providerID`` (``aws:///us-east-1a/i-0abc``), or None."""
    provider_id = _get(node, "spec", "providerID") or ""
    tail = provider_id.rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else None


def nodes_to_roll(nodes, groups, instance_ids):
    """Names of the nodes a roll of ``groups`` would drain.

    :param nodes: Node objects (list of dicts).
    :param groups: instance group names about to roll (iterable of str), matched on the node label
        ``kops.k8s.io/instancegroup``.
    :param instance_ids: EC2 instance ids of those groups (iterable of str), matched on ``spec.providerID``;
        a node matches on either.
    :returns: sorted list of node names.
    """
    groups, instance_ids = set(groups), set(instance_ids)
    names = set()
    for node in nodes:
        labels = _get(node, "metadata", "labels") or {}
        if labels.get(INSTANCE_GROUP_LABEL) in groups or instance_id_of(node) in instance_ids:
            names.add(_get(node, "metadata", "name"))
    return sorted(n for n in names if n)


def selector_matches(selector, labels):
    """Whether a label selector (dict: ``matchLabels``, ``matchExpressions``) selects ``labels`` (dict).

    Rules of k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go ``LabelSelectorAsSelector``: a None selector
    selects nothing, an empty one everything (policy/v1 PodDisruptionBudget semantics); operators
    ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``. An unknown operator selects nothing.
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or selector.get("match_labels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or selector.get("match_expressions") or []:
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if operator == "In":
            ok = key in labels and labels[key] in values
        elif operator == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif operator == "Exists":
            ok = key in labels
        elif operator == "DoesNotExist":
            ok = key not in labels
        else:
            ok = False
        if not ok:
            return False
    return True


def _active(pod):
    return _get(pod, "status", "phase") not in ("Succeeded", "Failed")


def blocking_pdbs(pdbs, pods, node_names):
    """PodDisruptionBudgets that forbid evicting a pod on one of ``node_names``.

    A budget blocks when ``status.disruptionsAllowed`` is 0 (or absent) and its selector matches a
    running pod of its namespace on a node about to roll (the Eviction API's rule,
    pkg/registry/core/pod/storage/eviction.go in Kubernetes).

    :param pdbs / pods: PodDisruptionBudget and Pod objects (lists of dicts).
    :param node_names: nodes about to be drained (iterable of str).
    :returns: list of ``{'name', 'namespace', 'disruptions_allowed', 'pods': ['NAMESPACE/POD on NODE', ...]}``,
        sorted by namespace and name.
    """
    node_names = set(node_names)
    on_nodes = [p for p in pods if _get(p, "spec", "nodeName") in node_names and _active(p)]
    found = []
    for pdb in pdbs:
        allowed = _get(pdb, "status", "disruptionsAllowed") or 0
        if allowed > 0:
            continue
        namespace = _get(pdb, "metadata", "namespace")
        covered = [
            "%s/%s on %s" % (namespace, _get(p, "metadata", "name"), _get(p, "spec", "nodeName"))
            for p in on_nodes
            if _get(p, "metadata", "namespace") == namespace and selector_matches(_get(pdb, "spec", "selector"), _get(p, "metadata", "labels"))
        ]
        if covered:
            found.append({"name": _get(pdb, "metadata", "name"), "namespace": namespace, "disruptions_allowed": allowed, "pods": sorted(covered)})
    return sorted(found, key=lambda b: (b["namespace"] or "", b["name"] or ""))


def read_cluster_objects(kubeconfig, context=None, timeout=15):
    """Nodes, pods and PodDisruptionBudgets of the cluster behind ``kubeconfig`` (path) and ``context``
    (None: the file's current context), read with the kubernetes client.

    :returns: ``(nodes, pods, pdbs)``, each a list of dicts in the API's JSON shape (camelCase keys).
    :raises Exception: whatever the kubernetes client raises when the API cannot be reached or refuses
        (``urllib3`` errors, ``kubernetes.client.ApiException``, ``kubernetes.config.ConfigException``).
    """
    k8s_client, k8s_config = kubernetes_client()
    api = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
    core, policy = k8s_client.CoreV1Api(api), k8s_client.PolicyV1Api(api)
    nodes = core.list_node(_request_timeout=timeout).items
    pods = core.list_pod_for_all_namespaces(_request_timeout=timeout).items
    pdbs = policy.list_pod_disruption_budget_for_all_namespaces(_request_timeout=timeout).items
    return tuple([api.sanitize_for_serialization(o) for o in objs] for objs in (nodes, pods, pdbs))


def check(kubeconfig, context, groups, instance_ids, reader=read_cluster_objects):
    """The PDB check of a roll of ``groups`` (whose instances are ``instance_ids``).

    :returns: dict ``{'checked': bool, 'skipped_reason': str or None, 'nodes': [node names],
        'blocking': [see blocking_pdbs]}``. Without ``kubeconfig`` or when the API does not answer, the
        check is skipped and ``skipped_reason`` says why (it never raises for an unreachable API).
    """
    result = {"checked": False, "skipped_reason": None, "nodes": [], "blocking": []}
    if not kubeconfig:
        result["skipped_reason"] = "no kubeconfig given: there is no Kubernetes API to ask about PodDisruptionBudgets"
        return result
    try:
        nodes, pods, pdbs = reader(kubeconfig, context)
    except Exception as exc:  # the client raises many types; the check is skipped, never fatal by itself
        result["skipped_reason"] = "the Kubernetes API did not answer (%s: %s)" % (type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "")
        return result
    result["checked"] = True
    result["nodes"] = nodes_to_roll(nodes, groups, instance_ids)
    result["blocking"] = blocking_pdbs(pdbs, pods, result["nodes"])
    return result


def default_context(kubeconfig, cluster):
    """The context to use: ``cluster`` when ``kubeconfig`` (path) has a context of that name (``kops export
    kubecfg`` names it so), else None (the file's current context). None when the file cannot be read."""
    if not kubeconfig or not HAS_KUBERNETES:
        return None
    try:
        contexts, dummy = kubernetes_client()[1].list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # unreadable or empty file: check() reports it when it tries to connect
        return None
    return cluster if any(c.get("name") == cluster for c in contexts or []) else None
