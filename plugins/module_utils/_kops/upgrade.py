# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a Kubernetes upgrade in kOps' 1.31+ order: the control plane first, one minor version per hop, the
workers once at the end when the version-skew policy allows it.

kOps' order (docs/tutorial/upgrading-kubernetes.md, cmd/kops/reconcile_cluster.go, kops v1.36.2): update the
control-plane and API-server groups, roll them, update everything, roll the rest, prune. The skew policy
(kubernetes.io/releases/version-skew-policy, since Kubernetes 1.28): a kubelet must not be newer than any
kube-apiserver it talks to and may be up to three minor versions older. So a plan from 1.32 to 1.35 rolls the control
plane three times (1.33, 1.34, 1.35) and the workers once (1.32 -> 1.35, three minors behind at most); a plan
over more minors rolls the workers in between, where the next hop would leave them four minors behind.

Pure functions of versions: the caller reads the stored spec's version and the Nodes' kubelet versions.
"""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import kube_versions
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules

# kubernetes.io/releases/version-skew-policy#kubelet: "kubelet may be up to three minor versions older than
# kube-apiserver" (since Kubernetes 1.28), never newer.
KUBELET_MAX_MINORS_BEHIND = 3
CONTROL_PLANE_ROLES = ["control-plane", "apiserver"]


def _text(version):
    return "%d.%d.%d" % version


def _oldest(versions, default):
    parsed = [kube_versions.kubernetes_version(v, "kubelet version") for v in versions or [] if v]
    return min(parsed) if parsed else default


def hop_version(minor_version, hop_versions, target):
    """The version of the hop to ``minor_version`` (``(major, minor)``): ``target`` (a version tuple) for its own
    minor, else the entry of ``hop_versions`` (list of str) of that minor, else ``major.minor.0`` (str)."""
    if target[:2] == minor_version:
        return _text(target)
    for value in hop_versions or []:
        version = kube_versions.kubernetes_version(value, "hop_versions")
        if version[:2] == minor_version:
            return _text(version)
    return "%d.%d.0" % minor_version


def plan_upgrade(
    spec_version,
    target,
    control_plane_kubelets=None,
    worker_kubelets=None,
    hop_versions=None,
    allow_version_skip=False,
    too_new_allowed=False,
    field="upgrade_to",
):
    """The hops of an upgrade of a cluster whose spec has ``spec_version`` to ``target`` (str versions).

    :param control_plane_kubelets: kubelet versions of the control-plane (and API-server) Nodes (list of str), or
        None when the Nodes cannot be read: they are then taken to run ``spec_version``, and a spec already at
        ``target`` gets one resumed hop at its version (applied and rolled where the cloud differs, then the workers),
        since only the Nodes would tell that a run which wrote the spec stopped before its rolls.
    :param worker_kubelets: the same for the other Nodes.
    :param hop_versions: versions for the intermediate minors (list of str, e.g. ``['1.33.12', '1.34.8']``); a minor
        not in it hops to ``X.Y.0``.
    :param allow_version_skip: one hop straight to ``target`` (also backwards), the control plane still first.
    :param too_new_allowed: kops' ``KOPS_RUN_TOO_NEW_VERSION`` (kube_versions.supported_kubernetes_version).
    :param field: the option named in errors for ``target`` (``hop_versions`` and ``allow_version_skip`` are named so).
    :returns: dict ``hops`` (list of dicts: ``version``, ``roles`` (the groups updated and rolled first),
        ``api_before``/``api_after`` (the oldest kube-apiserver before and after the hop), ``kubelets`` (the oldest
        worker kubelet during the hop), ``workers_after`` (the version the workers are rolled to after this hop, or
        None), ``why`` (str), ``resume`` (True for a hop written before but not rolled)), ``control_plane_rolls``
        and ``worker_rolls`` (int), ``target``, ``current`` (dict: ``spec``, ``control_plane``, ``workers``),
        ``steps`` (one line per step, for people).
    :raises kops_rules.RuleError: a version that is not one, or a hop outside kops' supported range (before anything
        is written), or a downgrade without ``allow_version_skip``.
    """
    spec = kube_versions.kubernetes_version(spec_version, "current version")
    goal = kube_versions.supported_kubernetes_version(target, field, too_new_allowed=too_new_allowed)
    api = _oldest(control_plane_kubelets, spec)
    workers = initial_workers = _oldest(worker_kubelets, min(spec, api))
    if goal < spec and not allow_version_skip:
        raise kops_rules.RuleError(
            "%s: %s is older than the cluster's %s; downgrades are refused (allow_version_skip: true to force)" % (field, _text(goal), _text(spec))
        )
    versions = []
    if api < spec:  # a hop written before and not rolled yet (a run stopped part-way): finish it first
        versions.append((_text(spec), True, "the spec has %s but the oldest control-plane kubelet runs %s: a hop not yet rolled" % (_text(spec), _text(api))))
    if allow_version_skip or goal[:2] == spec[:2] or goal[0] != spec[0]:
        if goal != spec:
            versions.append((_text(goal), False, "to the target"))
        elif control_plane_kubelets is None and not versions:
            # the spec is at the target, but without the Nodes nothing tells whether a run that wrote it stopped before
            # its rolls (a killed controller, a cloud-only run): apply and roll again where the cloud differs, control
            # plane first; where nothing differs nothing changes
            versions.append((_text(spec), True, "the Nodes cannot be read: the spec's version applied again and rolled where the cloud differs"))
    else:
        for minor in range(spec[1] + 1, goal[1] + 1):
            versions.append((hop_version((goal[0], minor), hop_versions, goal), False, "to the target" if minor == goal[1] else "one minor at a time"))
    hops, steps = [], []
    for version, resume, why in versions:
        kube_versions.supported_kubernetes_version(version, "%s (the hop to %s)" % (field, version), too_new_allowed=too_new_allowed)
        hops.append({"version": version, "roles": list(CONTROL_PLANE_ROLES), "why": why, "resume": resume})
    control_plane = api
    for index, hop in enumerate(hops):
        after = kube_versions.kubernetes_version(hop["version"])
        hop.update(api_before=_text(control_plane), api_after=_text(after), kubelets=_text(workers), workers_after=None)
        control_plane = after
        steps.append(
            "hop %d: update and roll the control plane to %s (kube-apiserver %s -> %s; workers stay on %s)%s"
            % (index + 1, hop["version"], hop["api_before"], hop["api_after"], hop["kubelets"], " [resumed]" if hop["resume"] else "")
        )
        following = kube_versions.kubernetes_version(hops[index + 1]["version"]) if index + 1 < len(hops) else None
        if following is not None and following[0] == workers[0] and following[1] - workers[1] > KUBELET_MAX_MINORS_BEHIND:
            hop["workers_after"] = hop["api_after"]
            steps.append(
                "  then update and roll the workers to %s: the next hop to %s would leave kubelet %s more than %d minor versions behind"
                % (hop["api_after"], _text(following), _text(workers), KUBELET_MAX_MINORS_BEHIND)
            )
            workers = after
    worker_rolls = sum(1 for hop in hops if hop["workers_after"])
    final = control_plane
    if workers != final or hops:
        worker_rolls += 1
        steps.append("update and roll the workers (and bastions) to %s, then prune (kops update cluster --prune --yes)" % _text(final))
    return {
        "target": _text(goal),
        "current": {"spec": _text(spec), "control_plane": _text(api), "workers": _text(initial_workers)},
        "hops": hops,
        "control_plane_rolls": len(hops),
        "worker_rolls": worker_rolls,
        "steps": steps,
    }
