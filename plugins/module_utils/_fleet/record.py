# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet update run's record: which clusters it changes in which stages, and where each cluster stands (pending,
running, done, failed, skipped), kept as one JSON object in an S3 bucket so that every controller sees it and a
re-run after a crashed controller resumes instead of starting over (issue 31).

Pure functions on the record (a dict); the module fleet_run reads and writes it with conditional PUTs
(:mod:`._fleet.store`). Times are UTC ISO 8601 strings in the record and aware datetimes in the arguments.

The record::

    {"run": "upgrade-1.35", "plan": {"stages": [{"name": "canary", "clusters": ["c0", "c1"], "soak_seconds": 600,
     "approval": false}, ...], "max_failures": 0, "window": {...} or null},
     "holder": {"id": "...", "since": "...", "lease_until": "..."} or null,
     "approved": ["wave1"], "clusters": {"c0": {"stage": "canary", "state": "done", "attempts": 1,
     "started": "...", "finished": "...", "reason": null}}, "events": [...]}
"""

import datetime
import math
import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError, duration_seconds

STATES = ("pending", "running", "done", "failed", "skipped")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HHMM = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
# the last events kept in the record (each start, finish, approval and takeover); older ones are dropped
MAX_EVENTS = 200


class Refused(Exception):
    """The run cannot do what was asked; ``str(exc)`` says why. ``holder``: the run's holder (dict) when another
    controller holds the run."""

    def __init__(self, message, holder=None):
        Exception.__init__(self, message)
        self.message, self.holder = message, holder


def iso(when):
    """``when`` (aware datetime) as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC)."""
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text):
    """The aware datetime (UTC) of an :func:`iso` string."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def check_plan(plan):
    """The plan in its stored form (dict), checked: ``stages`` a non-empty list of ``{name, clusters, soak, approval}``
    (names unique; each cluster in one stage only; ``soak`` a Go duration such as ``10m``, stored as
    ``soak_seconds``), ``max_failures`` (int >= 0, default 0: the first failed cluster halts the run), ``window``
    (optional: ``days`` of mon..sun, ``start`` and ``end`` as HH:MM, ``timezone`` an IANA name; an end before the start
    spans midnight). Raises RuleError naming the field."""
    if not isinstance(plan, dict):
        raise RuleError("plan: a dict with stages is needed")
    stages = plan.get("stages")
    if not isinstance(stages, list) or not stages:
        raise RuleError("plan.stages: at least one stage is needed (e.g. [{name: canary, clusters: [c0]}])")
    checked, names, seen = [], {}, {}
    for index, stage in enumerate(stages):
        wave_of = None
        if isinstance(stage, dict):  # from _fleet.selection.expand_stages: its place in the plan as given, its wave's stage
            stage = dict(stage)
            index, wave_of = stage.pop("_index", index), stage.pop("_wave_of", None)
        field = "plan.stages[%d]" % index
        if not isinstance(stage, dict) or not stage.get("name"):
            raise RuleError("%s.name: every stage needs a name" % field)
        name = str(stage["name"])
        if name in names:
            clash = [w for w in (wave_of, names[name]) if w and w != name]
            raise RuleError(
                "%s.name: stage %s is named twice%s"
                % (field, name, " (%s)" % ", ".join("a wave of stage %s is named %s" % (w, name) for w in clash) if clash else "")
            )
        names[name] = wave_of
        clusters = stage.get("clusters")
        if not isinstance(clusters, list) or not clusters or not all(isinstance(c, str) and c for c in clusters):
            raise RuleError("%s.clusters: a non-empty list of cluster names is needed" % field)
        for cluster in clusters:
            if cluster in seen:
                raise RuleError("%s.clusters: %s is already in stage %s; a cluster runs in one stage" % (field, cluster, seen[cluster]))
            seen[cluster] = name
        soak = duration_seconds(stage.get("soak", "0"), "%s.soak" % field)
        unknown = sorted(set(stage) - {"name", "clusters", "soak", "approval"})
        if unknown:
            raise RuleError("%s: unknown key(s) %s; a stage has name, clusters, soak, approval" % (field, ", ".join(unknown)))
        checked.append({"name": name, "clusters": list(clusters), "soak_seconds": int(soak), "approval": bool(stage.get("approval", False))})
    max_failures = plan.get("max_failures", 0)
    if not isinstance(max_failures, int) or isinstance(max_failures, bool) or max_failures < 0:
        raise RuleError("plan.max_failures: %r is not a count of clusters (0 or more)" % (max_failures,))
    window = plan.get("window")
    if window is not None:
        window = check_window(window)
    unknown = sorted(set(plan) - {"stages", "max_failures", "window", "change", "cluster_budget"})
    if unknown:
        raise RuleError("plan: unknown key(s) %s; a plan has stages, max_failures, window, change, cluster_budget" % ", ".join(unknown))
    checked_plan = {"stages": checked, "max_failures": max_failures, "window": window, "change": check_change(plan.get("change"))}
    if plan.get("cluster_budget") not in (None, ""):  # kept only when given: records made without it compare equal
        budget = duration_seconds(plan["cluster_budget"], "plan.cluster_budget")
        if budget <= 0:
            raise RuleError("plan.cluster_budget: %r; a time budget is more than 0 (e.g. 45m)" % (plan["cluster_budget"],))
        checked_plan["cluster_budget_seconds"] = int(math.ceil(budget))  # whole seconds, rounded up: 0.5s is a budget, not none
    return checked_plan


# What a run may change, one kind per run (playbooks/fleet_update_run.yml does each): a Kubernetes version through the
# upgrade role's planned order, a new image for chosen InstanceGroups then their roll, a kops binary bump (update,
# roll, validate with the new kops).
CHANGE_KINDS = ("kubernetes_version", "image", "kops_version")
# InstanceGroup roles (pkg/apis/kops/instancegroup.go: InstanceGroupRoleControlPlane "ControlPlane", the older "Master"
# that kops still reads, InstanceGroupRoleNode, InstanceGroupRoleBastion, InstanceGroupRoleAPIServer)
IG_ROLES = ("ControlPlane", "Master", "Node", "Bastion", "APIServer")


def check_change(change):
    """The plan's ``change`` in its stored form (dict with one key of :data:`CHANGE_KINDS`), or None when the plan
    names none (the upgrade role then reads its own target). ``kubernetes_version``: a version string.
    ``image``: ``{image, groups}`` or ``{image, roles}``: the AMI (or kops image name) and the InstanceGroups that get
    it, by name or by role (default ``roles: [Node]``). ``kops_version``: the semantic version of the kops binary the
    run applies with (kops writes it to each cluster's kops-version.txt). Raises RuleError naming the field."""
    if change is None:
        return None
    if not isinstance(change, dict) or len(change) != 1 or next(iter(change)) not in CHANGE_KINDS:
        raise RuleError("plan.change: %r; give one of %s (e.g. {kubernetes_version: 1.35.0})" % (change, ", ".join(CHANGE_KINDS)))
    kind, value = next(iter(change.items()))
    if kind == "kubernetes_version":
        if not isinstance(value, str) or not value.strip():
            raise RuleError("plan.change.kubernetes_version: %r is not a version (e.g. 1.35.0)" % (value,))
        return {kind: value.strip()}
    if kind == "kops_version":
        from ansible_collections.kopsible.kops.plugins.module_utils._kops import binary_version

        if binary_version.parse(value) is None:
            raise RuleError("plan.change.kops_version: %r is not a semantic version (e.g. 1.36.2; kops' kops-version.txt)" % (value,))
        return {kind: str(value).strip().lstrip("v")}
    if not isinstance(value, dict) or not isinstance(value.get("image"), str) or not value["image"].strip():
        raise RuleError("plan.change.image.image: the image of the chosen InstanceGroups is needed (e.g. ami-0123456789abcdef0)")
    unknown = sorted(set(value) - {"image", "groups", "roles"})
    if unknown:
        raise RuleError("plan.change.image: unknown key(s) %s; give image and groups or roles" % ", ".join(unknown))
    if "groups" in value and "roles" in value:
        raise RuleError("plan.change.image: give groups (InstanceGroup names) or roles, not both")
    if "groups" in value:
        groups = value["groups"]
        if not isinstance(groups, list) or not groups or not all(isinstance(g, str) and g for g in groups):
            raise RuleError("plan.change.image.groups: a non-empty list of InstanceGroup names is needed")
        return {kind: {"image": value["image"].strip(), "groups": list(groups)}}
    roles = value.get("roles", ["Node"])
    if not isinstance(roles, list) or not roles or any(r not in IG_ROLES for r in roles):
        raise RuleError("plan.change.image.roles: %r; give InstanceGroup roles of %s" % (roles, ", ".join(IG_ROLES)))
    return {kind: {"image": value["image"].strip(), "roles": list(roles)}}


def check_window(window):
    """A maintenance window ``{days, start, end, timezone}`` checked (see :func:`check_plan`); RuleError otherwise."""
    if not isinstance(window, dict):
        raise RuleError("plan.window: a dict with days, start, end, timezone is needed")
    days = window.get("days", list(DAYS))
    if not isinstance(days, list) or not days or any(str(d).lower()[:3] not in DAYS for d in days):
        raise RuleError("plan.window.days: %r; give days of %s" % (days, ", ".join(DAYS)))
    for key in ("start", "end"):
        if not _HHMM.fullmatch(str(window.get(key, ""))):
            raise RuleError("plan.window.%s: %r is not a time of day HH:MM (00:00 to 23:59)" % (key, window.get(key)))
    zone = window.get("timezone", "UTC")
    _zone(zone)
    return {"days": [str(d).lower()[:3] for d in days], "start": window["start"], "end": window["end"], "timezone": zone}


def _zone(name):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RuleError("plan.window.timezone: %r is not an IANA time zone (e.g. Europe/Berlin, UTC)" % (name,)) from None


def window_open(window, now):
    """``(open, next_open)`` for the maintenance window at ``now`` (aware datetime): ``open`` (bool) and, when closed, the
    next time it opens (aware datetime, UTC), else None. No window: always open. A window whose end is before its
    start spans midnight and belongs to the day it starts."""
    if not window:
        return True, None
    zone = _zone(window["timezone"])
    local = now.astimezone(zone)
    start = datetime.time(*map(int, window["start"].split(":")))
    end = datetime.time(*map(int, window["end"].split(":")))
    for back in (0, 1):  # today's window, or yesterday's when it spans midnight
        day = (local - datetime.timedelta(days=back)).date()
        if DAYS[day.weekday()] not in window["days"]:
            continue
        opens = datetime.datetime.combine(day, start, tzinfo=zone)
        closes = datetime.datetime.combine(day + datetime.timedelta(days=1 if end <= start else 0), end, tzinfo=zone)
        if opens <= local < closes:
            return True, None
    for ahead in range(0, 8):
        day = local.date() + datetime.timedelta(days=ahead)
        opens = datetime.datetime.combine(day, start, tzinfo=zone)
        if DAYS[day.weekday()] in window["days"] and opens > local:
            return False, opens.astimezone(datetime.timezone.utc)
    return False, None


def new_record(run, plan, now):
    """A new run's record (dict) for the checked ``plan`` (:func:`check_plan`): every cluster pending."""
    clusters = {}
    for stage in plan["stages"]:
        for cluster in stage["clusters"]:
            clusters[cluster] = {"stage": stage["name"], "state": "pending", "attempts": 0, "started": None, "finished": None, "reason": None}
    return {"run": run, "created": iso(now), "plan": plan, "holder": None, "approved": [], "clusters": clusters, "events": []}


def _event(record, now, what, **details):
    record["events"] = (record.get("events") or [])[-(MAX_EVENTS - 1) :] + [dict({"at": iso(now), "event": what}, **details)]


def take(record, holder, now, lease_seconds, takeover=False):
    """Make ``holder`` (str: the controller's id for this run) the run's holder until ``now + lease_seconds``. Another
    holder whose lease has not run out is refused (:class:`Refused` naming it) unless ``takeover`` (after a controller
    that crashed or was killed: its lease would otherwise keep the run until it runs out). Returns True when the
    holder changed."""
    current = record.get("holder") or {}
    until = now + datetime.timedelta(seconds=lease_seconds)
    if current.get("id") == holder:
        current["lease_until"] = iso(until)
        return False
    if current.get("id") and parse_iso(current["lease_until"]) > now and not takeover:
        raise Refused(
            "run %s is held by %s since %s until %s (its lease); another controller is running it. Wait for it, or set "
            "takeover: true if that controller is gone (killed, crashed)" % (record["run"], current["id"], current.get("since"), current["lease_until"]),
            holder=current,
        )
    if current.get("id"):
        _event(record, now, "takeover", holder=holder, previous=current["id"])
    record["holder"] = {"id": holder, "since": iso(now), "lease_until": iso(until)}
    return True


def release(record, holder, now):
    """``holder`` gives the run up (its controller is done with it): the next controller needs no takeover. Returns
    True when it was the holder."""
    if (record.get("holder") or {}).get("id") != holder:
        return False
    record["holder"] = None
    _event(record, now, "released", holder=holder)
    return True


def failures(record):
    """The clusters whose last attempt failed (sorted list of str)."""
    return sorted(c for c, e in record["clusters"].items() if e["state"] == "failed")


def _stage(record, name):
    return next(s for s in record["plan"]["stages"] if s["name"] == name)


def decide(record, cluster, now):
    """Whether ``cluster`` may start now: ``{'proceed': bool, 'why': str, 'wait_seconds': int or None, 'resumed':
    bool}``. In this order: a cluster done stays done; a run with more failed clusters than ``max_failures`` halts;
    every cluster of the earlier stages must be done or skipped; the soak time after the previous stage must have
    passed (``wait_seconds`` says how long is left); a stage with ``approval`` must have been approved; the
    maintenance window must be open. A cluster the record shows running was started by a controller that stopped: it
    proceeds, ``resumed`` (its own change is resumable: the upgrade role plans from where the cluster is). A failed
    cluster proceeds again (a re-run after the fix). Raises Refused for a cluster not in the run."""
    entry = record["clusters"].get(cluster)
    if entry is None:
        raise Refused("cluster %s is not in run %s (its clusters: %s)" % (cluster, record["run"], ", ".join(sorted(record["clusters"]))))
    if entry["state"] in ("done", "skipped"):
        return {"proceed": False, "why": "%s at %s" % (entry["state"], entry.get("finished")), "wait_seconds": None, "resumed": False}
    failed = [c for c in failures(record) if c != cluster]
    budget = record["plan"]["max_failures"]
    if len(failed) > budget:
        why = "the run halted: %d cluster(s) failed (%s), more than max_failures %d" % (len(failed), ", ".join(failed), budget)
        return {"proceed": False, "why": why, "wait_seconds": None, "resumed": False}
    stages = record["plan"]["stages"]
    index = next(i for i, s in enumerate(stages) if s["name"] == entry["stage"])
    for earlier in stages[:index]:
        open_ = [c for c in earlier["clusters"] if record["clusters"][c]["state"] not in ("done", "skipped")]
        if open_:
            states = ", ".join("%s (%s)" % (c, record["clusters"][c]["state"]) for c in open_)
            return {"proceed": False, "why": "waiting for stage %s: %s" % (earlier["name"], states), "wait_seconds": None, "resumed": False}
    if index > 0:
        previous = stages[index - 1]
        finished = [parse_iso(record["clusters"][c]["finished"]) for c in previous["clusters"] if record["clusters"][c].get("finished")]
        if finished and previous["soak_seconds"]:
            ends = max(finished) + datetime.timedelta(seconds=previous["soak_seconds"])
            if ends > now:
                left = int((ends - now).total_seconds() + 0.999)
                return {"proceed": False, "why": "soaking after stage %s until %s" % (previous["name"], iso(ends)), "wait_seconds": left, "resumed": False}
    stage = _stage(record, entry["stage"])
    if stage["approval"] and stage["name"] not in record.get("approved", []):
        return {
            "proceed": False,
            "why": "stage %s waits for approval (state: approved, stage: %s)" % (stage["name"], stage["name"]),
            "wait_seconds": None,
            "resumed": False,
        }
    is_open, next_open = window_open(record["plan"].get("window"), now)
    if not is_open:
        why = "waiting for the maintenance window (opens %s)" % (iso(next_open) if next_open else "never: no day of the window comes")
        return {"proceed": False, "why": why, "wait_seconds": None, "resumed": False}
    resumed = entry["state"] == "running"
    return {"proceed": True, "why": "resumed: it was running when its controller stopped" if resumed else "started", "wait_seconds": None, "resumed": resumed}


def start(record, cluster, now, holder):
    """Mark ``cluster`` running (after :func:`decide` said proceed); one more attempt unless it is resumed."""
    entry = record["clusters"][cluster]
    if entry["state"] != "running":
        entry["attempts"] += 1
    entry.update(state="running", started=iso(now), finished=None, reason=None)
    _event(record, now, "start", cluster=cluster, holder=holder, attempt=entry["attempts"])


def finish(record, cluster, outcome, reason, now):
    """Mark ``cluster`` ``outcome`` (done, failed or skipped) with ``reason`` (str or None). A cluster done later than
    the plan's ``cluster_budget_seconds`` after its start (or its resumption by a controller that took over) is
    recorded failed, naming the time it took, so that it counts against ``max_failures`` (the run's halting budget: a
    cluster that takes far longer than planned stops the next ones from starting; a re-run tries it again, which finds
    its change done). Raises Refused for a cluster not in the run."""
    entry = record["clusters"].get(cluster)
    if entry is None:
        raise Refused("cluster %s is not in run %s" % (cluster, record["run"]))
    budget = record["plan"].get("cluster_budget_seconds")
    if outcome == "done" and budget and entry.get("started"):
        took = int((now - parse_iso(entry["started"])).total_seconds())
        if took > budget:
            outcome = "failed"
            reason = "done in %d s, over the plan's cluster_budget of %d s: counted as failed (its change finished; a re-run checks it again)" % (took, budget)
    entry.update(state=outcome, finished=iso(now), reason=reason)
    _event(record, now, outcome, cluster=cluster, reason=reason)


def approve(record, stage, now, by=None):
    """Record the approval of ``stage`` (by ``by``, the approver's id, kept in the event); returns True when it was not
    approved before. Refused for an unknown stage. The run's holder is not changed: approving is not running."""
    if stage not in [s["name"] for s in record["plan"]["stages"]]:
        raise Refused("stage %s is not in run %s (its stages: %s)" % (stage, record["run"], ", ".join(s["name"] for s in record["plan"]["stages"])))
    if stage in record.setdefault("approved", []):
        return False
    record["approved"].append(stage)
    _event(record, now, "approved", stage=stage, **({"by": by} if by else {}))
    return True


def summary(record):
    """One line per cluster in stage order (list of str): ``stage cluster: state (attempts, reason)``."""
    lines = []
    for stage in record["plan"]["stages"]:
        for cluster in stage["clusters"]:
            entry = record["clusters"][cluster]
            extra = ", ".join(x for x in ("attempt %d" % entry["attempts"] if entry["attempts"] else "", entry.get("reason") or "") if x)
            lines.append("%s %s: %s%s" % (stage["name"], cluster, entry["state"], " (%s)" % extra if extra else ""))
    return lines
