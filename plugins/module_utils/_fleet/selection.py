# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet update run's stages chosen from the inventory: a stage that selects its clusters by inventory group and/or
cloud labels, cut into waves (issue 31). :func:`expand_stages` gives the plan :func:`._fleet.record.check_plan`
checks and the record keeps."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError


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
    A selection that matches no cluster of the inventory raises RuleError naming the field, as does a ``wave_size``
    that is not a count or a percentage, or a
    stage with both ``clusters`` and ``select``."""
    if not isinstance(plan, dict) or not isinstance(plan.get("stages"), list):
        return plan
    inventory = inventory or {}
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
        if select is None:
            if size is not None:
                raise RuleError("%s.wave_size: only a stage with select is cut into waves" % field)
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
            wave.update(clusters=clusters, name=str(stage.get("name")) + (str(number) if len(waves) > 1 else ""))
            if number > 1:
                wave["approval"] = False
            stages.append(wave)
    return dict(plan, stages=stages)


def _selected(select, inventory, field):
    """The clusters of ``inventory`` that ``select`` ({group, labels}) chooses, sorted by name; RuleError when none."""
    if not isinstance(select, dict) or not (select.get("group") or select.get("labels")):
        raise RuleError("%s: give group (an inventory group) and/or labels (cloud labels)" % field)
    group, labels = select.get("group"), select.get("labels") or {}
    if not isinstance(labels, dict):
        raise RuleError("%s.labels: a dict of cloud label -> value is needed" % field)
    chosen = []
    for name, facts in sorted(inventory.items()):
        facts = facts or {}
        if group and group not in (facts.get("groups") or []):
            continue
        have = facts.get("labels") or {}
        if any(str(have.get(k)) != str(v) or k not in have for k, v in labels.items()):
            continue
        chosen.append(name)
    if not chosen:
        raise RuleError("%s: %r matches no cluster of the inventory (%d clusters)" % (field, select, len(inventory)))
    return chosen


def _wave_count(size, total, field):
    """Clusters per wave (int >= 1) of ``size`` (None: all ``total``; an int; or ``'N%'`` of ``total`` rounded up)."""
    if size is None or size == "":
        return total
    text = str(size).strip()
    if text.endswith("%") and text[:-1].isdigit() and 0 < int(text[:-1]) <= 100:
        return max(1, -(-total * int(text[:-1]) // 100))
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise RuleError("%s: %r; give a count of clusters (1 or more) or a percentage (1%% to 100%%)" % (field, size))
