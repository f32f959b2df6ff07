# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet update run's stages chosen from the inventory: a stage that selects its clusters by inventory group and/or
cloud labels, cut into waves (issue 31). :func:`expand_stages` gives the plan :func:`._fleet.record.check_plan`
checks and the record keeps."""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

# a count of clusters or a percentage, ASCII digits only (int() would also read other scripts' digits)
_WAVE_SIZE = re.compile(r"([0-9]{1,18})(%?)", re.ASCII)
# an inventory host name: what the kops inventory plugin names a cluster; no whitespace or control characters
_HOST = re.compile(r"[^\s\x00-\x1f\x7f]+")


def expand_stages(plan, inventory):
    """``plan`` (dict) with each selecting stage replaced by its waves, for :func:`check_plan`.

    A selecting stage has ``select`` instead of ``clusters``: ``{group: G}`` (clusters of inventory group G) and/or
    ``{labels: {key: value}}`` (clusters with all those cloud labels), chosen from ``inventory`` (dict: cluster name
    -> ``{groups: [names], labels: {key: value}}``, as playbooks/fleet_update_run.yml passes its inventory), less the
    clusters of every other stage, in name order; ``wave_size`` clusters a wave: a count, or a percentage of the
    stage's own clusters (those it selects that no other stage has; ``25%``), rounded up and at least 1, as
    Kubernetes scales a percentage rounded up (k8s.io/apimachinery/pkg/util/intstr GetScaledValueFromIntOrPercent,
    roundUp; kops' maxSurge); all in one wave when omitted. Stage ``NAME`` becomes stages ``NAME1``, ``NAME2``, ...
    (one stage ``NAME`` when it is one wave): each wave has the stage's ``soak``, and only the first its ``approval``
    (the selection is approved once). Explicit stages are kept as they are (without empty ``select``/``wave_size``).

    Each stage returned carries ``_index`` (its position in the plan as given) and a wave ``_wave_of`` (the selecting
    stage's name), so that :func:`check_plan` names the stage the user wrote; check_plan drops both.

    Cloud labels are strings (kops' ``cloudLabels``, map[string]string): a YAML boolean or number in a selection or
    the inventory is compared as the string YAML would write (``true``, ``1``). RuleError, naming the field: a
    selection that matches no cluster of the inventory, a ``wave_size`` that is not a count or a percentage (ASCII
    digits), a stage with both ``clusters`` and ``select``, a label value that is not a scalar, an
    inventory entry that is not ``{groups: [...], labels: {...}}`` or whose name is empty or holds whitespace."""
    if not isinstance(plan, dict) or not isinstance(plan.get("stages"), list):
        return plan
    inventory = _checked_inventory(inventory or {})
    explicit = set()
    for stage in plan["stages"]:
        if isinstance(stage, dict) and isinstance(stage.get("clusters"), list):
            explicit.update(c for c in stage["clusters"] if isinstance(c, str))
    stages = []
    for index, stage in enumerate(plan["stages"]):
        field = "plan.stages[%d]" % index
        if not isinstance(stage, dict):
            stages.append(stage)
            continue
        select, size = stage.get("select"), stage.get("wave_size")
        plain = dict((k, v) for k, v in stage.items() if k not in ("select", "wave_size") or v is not None)
        plain["_index"] = index
        if select is None and size not in (None, ""):
            raise RuleError("%s.wave_size: only a stage with select is cut into waves" % field)
        if select is None or not stage.get("name"):  # a stage without a name is check_plan's to refuse
            plain.pop("wave_size", None)
            plain.pop("select", None)
            stages.append(plain)
            continue
        if stage.get("clusters"):
            raise RuleError("%s: give clusters or select, not both" % field)
        chosen = _selected(select, inventory, "%s.select" % field)
        left = [c for c in chosen if c not in explicit]
        explicit.update(left)
        if not left:  # every selected cluster is in another stage already (e.g. all were the canary)
            continue
        count = _wave_count(size, len(left), "%s.wave_size" % field)
        waves = [left[i : i + count] for i in range(0, len(left), count)]
        for number, clusters in enumerate(waves, 1):
            wave = dict((k, v) for k, v in plain.items() if k not in ("select", "wave_size", "clusters"))
            wave.update(clusters=clusters, name=str(stage["name"]) + (str(number) if len(waves) > 1 else ""), _wave_of=str(stage["name"]))
            if number > 1:
                wave["approval"] = False
            stages.append(wave)
    return dict(plan, stages=stages)


def label_value(value, field):
    """A cloud label's value as kops stores it (str: cloudLabels is map[string]string): a string as it is, a YAML
    boolean as ``true``/``false``, a number as its decimal form. RuleError naming ``field`` for null, a list or a
    dict."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise RuleError("%s: %r; a cloud label's value is a string (kops' cloudLabels: map[string]string)" % (field, value))


def _checked_inventory(inventory):
    """``{cluster: (set of groups, {label: value})}`` from the ``inventory`` option; RuleError naming the entry."""
    checked = {}
    for name, facts in inventory.items():
        if not isinstance(name, str) or not _HOST.fullmatch(name):
            raise RuleError("inventory: %r is not a cluster name (an inventory host without whitespace)" % (name,))
        facts = {} if facts is None else facts
        if not isinstance(facts, dict):
            raise RuleError("inventory.%s: %r; give {groups: [inventory groups], labels: {cloud label: value}}" % (name, facts))
        groups = facts.get("groups") or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise RuleError("inventory.%s.groups: %r; a list of inventory group names is needed" % (name, groups))
        labels = facts.get("labels") or {}
        if not isinstance(labels, dict):
            raise RuleError("inventory.%s.labels: %r; a dict of cloud label -> value is needed" % (name, labels))
        checked[name] = (set(groups), dict((str(k), label_value(v, "inventory.%s.labels.%s" % (name, k))) for k, v in labels.items()))
    return checked


def _selected(select, inventory, field):
    """The clusters of the checked ``inventory`` that ``select`` ({group, labels}) chooses, sorted by name;
    RuleError when none."""
    if not isinstance(select, dict) or not (select.get("group") or select.get("labels")):
        raise RuleError("%s: give group (an inventory group) and/or labels (cloud labels)" % field)
    group, labels = select.get("group"), select.get("labels") or {}
    if not isinstance(labels, dict):
        raise RuleError("%s.labels: a dict of cloud label -> value is needed" % field)
    wanted = dict((str(k), label_value(v, "%s.labels.%s" % (field, k))) for k, v in labels.items())
    chosen = []
    for name, (groups, have) in sorted(inventory.items()):
        if group and group not in groups:
            continue
        if any(have.get(k) != v for k, v in wanted.items()):
            continue
        chosen.append(name)
    if not chosen:
        raise RuleError("%s: %r matches no cluster of the inventory (%d clusters)" % (field, select, len(inventory)))
    return chosen


def _wave_count(size, total, field):
    """Clusters per wave (int >= 1) of ``size`` (None: all ``total``; a count; or ``'N%'`` of ``total`` rounded up)."""
    if size is None or size == "":
        return total
    match = _WAVE_SIZE.fullmatch(str(size).strip()) if not isinstance(size, (bool, float, list, dict)) else None
    if match:
        number = int(match.group(1))
        if match.group(2) and 0 < number <= 100:
            return max(1, -(-total * number // 100))
        if not match.group(2) and number >= 1:
            return number
    raise RuleError("%s: %r; give a count of clusters (1 or more) or a percentage (1%% to 100%%)" % (field, size))
