# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud plan of ``kops update cluster`` (its dry run, upup/pkg/fi/cloudup/target_dryrun.go): parsed, the fields kops
lists in every plan but never applies set apart, and reported in a module's result and diff. Pure functions of text and
dicts; fixtures from the real kops v1.36.2 in tests/unit/fixtures/kops-1.36.2/."""

import re

_PLAN_SECTIONS = (
    ("Will create resources:", "create"),
    ("Will modify resources:", "modify"),
    ("Items will be deleted during update:", "delete"),
    ("Items will be deleted only when the --prune flag is specified:", "prune"),
)


_CHANGE_RE = re.compile(r"^(?P<old>.*?) -> (?P<new>.*)$")


def empty_plan():
    """A plan with nothing to do: ``{'create': [], 'modify': [], 'delete': [], 'prune': [], 'ignored': [], 'changed': False}``."""
    return {"create": [], "modify": [], "delete": [], "prune": [], "ignored": [], "changed": False}


def parse_update_plan(stdout):
    """Parse the dry-run output of ``kops update cluster`` (upup/pkg/fi/dryrun_target.go).

    :param stdout: str, kops' standard output.
    :returns: dict with lists ``create``, ``modify``, ``delete``, ``prune`` and bool ``changed``.
        ``create`` items: ``{'resource': 'Type/name', 'type', 'name', 'fields': {field: value}}``;
        ``modify`` items: ``{'resource', 'type', 'name', 'changes': {field: {'old', 'new'}}}``, where a
        multi-line change (a manifest or user data diff) has ``{'diff': [lines]}`` instead;
        ``delete``/``prune`` items: ``{'resource': 'Type', 'name': item}``; ``ignored``: modify items kops
        never applies (:func:`split_never_applied`). ``changed`` is True when create, modify or delete
        holds an item (prune items need ``--prune``; ignored ones are never applied).
    """
    plan = empty_plan()
    section = None
    current = None
    field = None
    for raw in stdout.splitlines():
        header = [key for text, key in _PLAN_SECTIONS if raw.strip() == text]
        if header:
            section, current, field = header[0], None, None
            continue
        if section is None or not raw.strip():
            continue
        if raw.startswith("Must specify --yes") or raw.startswith("No changes need"):
            section = None
            continue
        if section in ("delete", "prune"):
            parts = raw.strip().split(None, 1)
            plan[section].append({"resource": parts[0], "name": parts[1] if len(parts) > 1 else ""})
            continue
        if raw.startswith("  ") and not raw.startswith("  \t"):
            resource = raw.strip()
            rtype, dummy, name = resource.partition("/")
            current = {"resource": resource, "type": rtype, "name": name}
            current["fields" if section == "create" else "changes"] = {}
            plan[section].append(current)
            field = None
            continue
        if current is None or not raw.startswith("  \t"):
            continue
        cells = raw[3:].split("\t", 1)
        name = cells[0].strip()
        value = cells[1].strip() if len(cells) > 1 else ""
        if section == "create":
            if name:
                current["fields"][name] = value
            continue
        if name:
            field = name
            match = _CHANGE_RE.match(value)
            current["changes"][field] = {"old": match.group("old"), "new": match.group("new")} if match else {"diff": []}
            if not match and value:
                current["changes"][field]["diff"].append(value)
        elif field is not None:
            entry = current["changes"][field]
            entry.setdefault("diff", [])
            if len(cells) > 1:
                entry["diff"].append(cells[1].rstrip())
    return split_never_applied(plan)


# Changes kops v1.36.2 lists in every plan but never applies. The RenderAWS of these tasks only
# creates the resource (``if a == nil``): upup/pkg/fi/cloudup/awstasks/eventbridgerule.go and
# awstasks/sqs.go (the node-termination-handler queue). So once the cluster's tags change (e.g.
# cloudLabels) their Tags change shows up in every dry run, on AWS as on the emulator, and
# ``update --yes`` leaves it as it is. (The URL/SQSQueue lines are how kops prints the linked queue.)
#
# The AutoscalingGroup task's WarmPool field is the same kind: its Find never reads it and its RenderAWS
# never applies it (``WarmPool *WarmPool `json:"-"```, "only used for RenderTerraform",
# awstasks/autoscalinggroup.go); the warm pool itself is the WarmPool task, which reads AWS and lists
# its own changes. So every plan of a group with a warm pool lists ``WarmPool <nil> -> ...``.
NEVER_APPLIED = {
    "EventBridgeRule": frozenset(["Tags", "SQSQueue", "URL"]),
    "SQS": frozenset(["Tags", "URL"]),
    "AutoscalingGroup": frozenset(["WarmPool"]),
}


# Fields kops v1.36.2 applies but never reads back: AutoscalingGroup.Find does not set CapacityRebalance
# (awstasks/autoscalinggroup.go), so every plan of a group with capacityRebalance set lists
# ``CapacityRebalance <nil> -> true`` whatever AWS holds. Whether it is a real change is read from
# DescribeAutoScalingGroups (:func:`settle_unread_fields`); {field: AWS attribute of the group}.
UNREAD_ASG_FIELDS = {"CapacityRebalance": "CapacityRebalance"}


# Fields whose change to ``<nil>`` kops never applies: AutoscalingGroup.RenderAWS sends the overrides only when the
# desired list is not nil (awstasks/autoscalinggroup.go:551-566), while Find reads one entry per override AWS holds
# (:295, the InstanceType of each, none for an instanceRequirements override). A group with
# ``mixedInstancesPolicy.instanceRequirements`` and no ``instances`` therefore plans ``MixedInstanceOverrides [] ->
# <nil>`` in every dry run, on AWS as on the emulator, and ``update --yes`` changes nothing.
NEVER_APPLIED_TO_NIL = {"AutoscalingGroup": frozenset(["MixedInstanceOverrides"])}


def _never_applied(item):
    """Whether kops never applies any change of the modify ``item`` (:data:`NEVER_APPLIED`, :data:`NEVER_APPLIED_TO_NIL`)."""
    fields = NEVER_APPLIED.get(item.get("type"), frozenset())
    to_nil = NEVER_APPLIED_TO_NIL.get(item.get("type"), frozenset())
    return bool(item["changes"]) and all(
        name in fields or (name in to_nil and isinstance(change, dict) and change.get("new") == "<nil>") for name, change in item["changes"].items()
    )


def split_never_applied(plan):
    """Move the modify items that kops never applies (:data:`NEVER_APPLIED`, :data:`NEVER_APPLIED_TO_NIL`) to
    ``plan['ignored']``.

    :returns: the same plan dict, with ``ignored`` (list) set and ``changed`` recomputed from the rest.
    """
    kept, ignored = [], []
    for item in plan.get("modify", []):
        (ignored if _never_applied(item) else kept).append(item)
    plan["modify"] = kept
    plan["ignored"] = ignored
    plan["changed"] = any(plan[key] for key in ("create", "modify", "delete"))
    return plan


def settle_unread_fields(plan, describe_group):
    """Move to ``plan['ignored']`` the AutoscalingGroup modify items whose every change is to a field kops
    never reads back (:data:`UNREAD_ASG_FIELDS`, or a :data:`NEVER_APPLIED` one) and AWS already holds the
    new value of each such read-back field; recompute ``changed``. A real change (AWS holds another value,
    or the group cannot be read) stays.

    :param plan: a :func:`parse_update_plan` dict (changed in place and returned).
    :param describe_group: callable ``(group name) -> DescribeAutoScalingGroups item (dict) or None``.
    """
    never = NEVER_APPLIED["AutoscalingGroup"]
    kept = []
    for item in plan.get("modify", []):
        unread = [f for f in item["changes"] if f in UNREAD_ASG_FIELDS]
        if item.get("type") != "AutoscalingGroup" or not unread or not set(item["changes"]) <= set(unread) | never:
            kept.append(item)
            continue
        group = describe_group(item["name"])
        held = group is not None and all(
            "new" in item["changes"][f] and str(group.get(UNREAD_ASG_FIELDS[f])).lower() == item["changes"][f]["new"].lower() for f in unread
        )
        (plan["ignored"] if held else kept).append(item)
    plan["modify"] = kept
    plan["changed"] = any(plan[key] for key in ("create", "modify", "delete"))
    return plan


PLAN_SKIPPED_NOTE = "not planned: this run wrote the spec and plan_before_apply=false, so it applied (kops update cluster --yes) without the dry run"


def report_plan(result, plan, applied):
    """Put a plan into a module result (dict, changed in place): ``plan``, ``plan_summary`` and, when
    the plan was skipped (``plan`` None, ClusterOps.plan_and_apply with plan_before_apply=False),
    ``plan_note``; ``changed`` becomes True when the plan is not empty or an apply ran."""
    result["plan"] = plan
    result["plan_summary"] = summarize_plan(plan) if plan is not None else []
    if plan is None:
        result["plan_note"] = PLAN_SKIPPED_NOTE
    if applied or (plan is not None and plan["changed"]):
        result["changed"] = True
    if plan is not None and plan["changed"]:
        add_plan_diff(result, applied)


def add_plan_diff(result, applied):
    """Show the cloud plan in ``--diff`` (result changed in place): ``result['diff']`` becomes a list, the spec diff
    (if any) followed by ``{'prepared': text}`` with one line per planned item (ansible's callbacks print a prepared
    diff as given). A run whose change only the plan decides (the spec already stored, the cloud behind it) otherwise
    shows no difference at all."""
    diffs = result.get("diff") or []
    diffs = list(diffs) if isinstance(diffs, list) else [diffs]
    header = "cloud plan of kops update cluster (%s):" % ("applied" if applied else "to apply")
    diffs.append({"prepared": "\n".join([header] + ["  " + line for line in result["plan_summary"]]) + "\n"})
    result["diff"] = diffs


def summarize_plan(plan):
    """One line per planned item, e.g. ``modify AutoscalingGroup/nodes...: MaxSize 2 -> 3, MinSize 2 -> 3`` (list of str)."""
    lines = []
    for item in plan.get("create", []):
        lines.append("create %s" % item["resource"])
    for item in plan.get("modify", []):
        parts = []
        for field, change in sorted(item["changes"].items()):
            parts.append("%s %s -> %s" % (field, change["old"], change["new"]) if "old" in change else "%s (changed)" % field)
        lines.append("modify %s: %s" % (item["resource"], ", ".join(parts)))
    for item in plan.get("delete", []):
        lines.append("delete %s %s" % (item["resource"], item["name"]))
    for item in plan.get("prune", []):
        lines.append("prune %s %s (deleted only with prune: true)" % (item["resource"], item["name"]))
    return lines
