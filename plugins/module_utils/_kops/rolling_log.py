# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops' rolling-update log read as it prints it (pkg/instancegroups/rollingupdate.go, instancegroups.go and the drain
helper of k8s.io/kubectl): one progress line per step while it runs (:func:`roll_step`), and per group what the roll did
(:func:`parse_rolling_log`). Pure functions of text; fixtures from the real kops v1.36.2 in
tests/unit/fixtures/kops-1.36.2/."""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import instance_group_of_asg

_KLOG = re.compile(r"^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)\s+\d+ \S+\] (.*)$")
_ROLL_PATTERNS = (
    ("taint", re.compile(r'^Tainting \d+ nodes? in "(?P<group>[^"]+)" instancegroup\.')),
    ("detach", re.compile(r'^Detaching instance "(?P<id>[^"]+)"(?:, node "(?P<node>[^"]+)")?, in group "(?P<asg>[^"]+)"')),
    ("drain", re.compile(r'^Draining the node: "(?P<node>[^"]+)"')),
    ("stop", re.compile(r'^Stopping instance "(?P<id>[^"]+)"(?:, node "(?P<node>[^"]+)")?, in group "(?P<asg>[^"]+)"')),
    ("validating", re.compile(r"^Validating the cluster\.")),
    ("validated", re.compile(r"^Cluster validated")),
    ("not_valid", re.compile(r"^Cluster did not (?:pass validation|validate),? (?:will retry in \"[^\"]+\"|within deadline): (?P<message>.*?)\.?$")),
    ("disabled", re.compile(r"^Rolling updates for InstanceGroup (?P<group>\S+) are disabled")),
    ("completed", re.compile(r"^Completed rolling update for cluster")),
)
_EVICTING = re.compile(r"^evicting pod (?P<pod>\S+/\S+)$")
_EVICT_RETRY = re.compile(r'^error when evicting pods/"(?P<pod>[^"]+)" -n "(?P<ns>[^"]+)" \(will retry after [^)]*\): (?P<reason>.*)$')


def roll_step(line):
    """The step a line of a rolling update's merged output is (:data:`_ROLL_PATTERNS`: taint, detach, drain, stop,
    validate, completed; the drain helper's eviction attempts and refusals), as one line ``HH:MM:SS <kops' own
    words>`` (str, kops' klog time; the drain helper's lines carry none); None for any other line (tables, klog
    details). For showing a roll's per-node steps as they happen (rolling_update ``progress_file``)."""
    line = line.rstrip()
    klog = _KLOG.match(line)
    if klog:
        message = klog.group(4).strip()
        if any(pattern.match(message) for dummy, pattern in _ROLL_PATTERNS):
            return "%s:%s:%s %s" % (klog.group(1), klog.group(2), klog.group(3).split(".")[0], message)
        return None
    if _EVICTING.match(line) or _EVICT_RETRY.match(line):
        return line
    return None


def parse_rolling_log(text, cluster):
    """What a ``kops rolling-update cluster --yes`` run did, from its standard output and error read
    through one pipe (so that the drain helper's ``evicting pod`` lines on stdout stay between kops'
    klog steps on stderr).

    Lines mirror pkg/instancegroups/instancegroups.go and rollingupdate.go of kops v1.36.2 ("Detaching
    instance", "Draining the node", "Stopping instance", "Validating the cluster.", "Cluster validated",
    "Cluster did not pass validation, will retry in ...", "Rolling updates for InstanceGroup ... are
    disabled", "Completed rolling update") and k8s.io/kubectl/pkg/drain ("evicting pod NS/NAME" before each attempt,
    "error when evicting pods/... (will retry after 5s): REASON" after a refused one, e.g. by a PodDisruptionBudget;
    a pod counts as evicted only when it was tried more often than refused).

    :param text: the merged output (str). :param cluster: the cluster name (str), to map Auto Scaling
        group names back to InstanceGroups.
    :returns: ``{'groups': {ig: {'instances': [{'id', 'node', 'detached', 'stopped'}], 'nodes_drained': [...],
        'pods_evicted': {node: [NS/POD, ...]}, 'evictions_refused': [{'pod', 'reason'}], 'validations':
        [{'ok', 'seconds', 'message'}], 'seconds'}}, 'order': [ig, ...], 'validations_before': [...],
        'disabled': [ig, ...], 'completed': bool, 'seconds': float}``. Seconds come from klog's
        timestamps (a run that crosses midnight is handled); each validation's seconds run from its
        "Validating the cluster." to its outcome.
    """
    groups, order, before, disabled = {}, [], [], []
    attempts, refusals = {}, {}  # {(group, node): {pod: count}} of "evicting pod" and "error when evicting" lines
    state = {"group": None, "node": None, "validating_at": None, "first": None, "last": None, "completed": False}

    def group(name):
        if name not in groups:
            groups[name] = {
                "instances": [],
                "nodes_drained": [],
                "pods_evicted": {},
                "evictions_refused": [],
                "validations": [],
                "started": state["last"],
                "ended": state["last"],
            }
            order.append(name)
        state["group"] = name
        return groups[name]

    def instance(entry, ident, node):
        for inst in entry["instances"]:
            if inst["id"] == ident:
                return inst
        inst = {"id": ident, "node": node, "detached": False, "stopped": False}
        entry["instances"].append(inst)
        return inst

    for raw in text.splitlines():
        line = raw.strip()
        found = _KLOG.match(line)
        if found:
            hours, minutes, seconds, line = found.groups()
            at = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
            if state["last"] is not None and at < state["last"] - 43200:
                at += 86400
            state["first"] = at if state["first"] is None else state["first"]
            state["last"] = at
        evicting = _EVICTING.match(line)
        if evicting and state["group"]:
            tries = attempts.setdefault((state["group"], state["node"] or "?"), {})
            tries[evicting.group("pod")] = tries.get(evicting.group("pod"), 0) + 1
            continue
        retry = _EVICT_RETRY.match(line)
        if retry and state["group"]:
            pod = "%s/%s" % (retry.group("ns"), retry.group("pod"))
            groups[state["group"]]["evictions_refused"].append({"pod": pod, "reason": retry.group("reason")})
            refused = refusals.setdefault((state["group"], state["node"] or "?"), {})
            refused[pod] = refused.get(pod, 0) + 1
            continue
        for kind, pattern in _ROLL_PATTERNS:
            match = pattern.match(line)
            if not match:
                continue
            if kind == "taint":
                group(match.group("group"))
            elif kind in ("detach", "stop"):
                entry = group(instance_group_of_asg(match.group("asg"), cluster) or match.group("asg"))
                inst = instance(entry, match.group("id"), match.group("node"))
                inst["detached" if kind == "detach" else "stopped"] = True
            elif kind == "drain" and state["group"]:
                state["node"] = match.group("node")
                groups[state["group"]]["nodes_drained"].append(match.group("node"))
            elif kind == "validating":
                state["validating_at"] = state["last"]
            elif kind in ("validated", "not_valid"):
                took = round(state["last"] - state["validating_at"], 3) if state["validating_at"] is not None and state["last"] is not None else None
                record = {"ok": kind == "validated", "seconds": took, "message": match.group("message") if kind == "not_valid" else None}
                (groups[state["group"]]["validations"] if state["group"] else before).append(record)
            elif kind == "disabled":
                disabled.append(match.group("group"))
            elif kind == "completed":
                state["completed"] = True
            if state["group"] and state["last"] is not None:
                groups[state["group"]]["ended"] = state["last"]
            break
    # the drain helper prints "evicting pod" before every attempt and "error when evicting" after each refused one (it
    # prints nothing when one succeeds): a pod was evicted when it was tried more often than refused
    for (name, node), tries in attempts.items():
        refused = refusals.get((name, node), {})
        evicted = [pod for pod in tries if tries[pod] > refused.get(pod, 0)]
        if evicted:
            groups[name]["pods_evicted"][node] = evicted
    for entry in groups.values():
        started, ended = entry.pop("started"), entry.pop("ended")
        entry["seconds"] = round(ended - started, 3) if started is not None and ended is not None else None
    total = round(state["last"] - state["first"], 3) if state["first"] is not None else 0.0
    return {"groups": groups, "order": order, "validations_before": before, "disabled": disabled, "completed": state["completed"], "seconds": total}
