#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: fleet_run
short_description: The record of a fleet update run (stages, soak, approval, maintenance window), kept in S3
version_added: 0.3.0
description:
  - A fleet update run changes many kOps clusters in stages (a canary first, then waves), with a soak time after each
    stage, an approval before chosen stages, a maintenance window outside which no cluster starts, and a halting
    budget. This module keeps the run's record, one JSON object per run in an S3 bucket every controller can read, and
    decides for each cluster whether it may start now; the playbook does the change itself (e.g. the
    M(kopsible.kops.upgrade) role) between O(state=claimed) and O(state=finished).
  - The record survives the controller. Re-running the same run after a crashed or killed controller resumes it
    (O(takeover=true) when the old controller's lease has not run out); clusters done stay done, a cluster that was
    running is started again (reported as C(resumed)), a failed cluster is tried again, and nothing is rolled twice by
    this run's record.
  - Every write is a conditional PUT (C(If-None-Match) for a new record, C(If-Match) with the ETag read for a change),
    read again and retried when another controller wrote first, so two controllers never overwrite each other.
    The bucket should have versioning on (each write is then a version, the run's history).
author:
  - kopsible maintainers (!UNKNOWN)
options:
  bucket:
    description: The S3 bucket of the run records (e.g. the state store's bucket).
    type: str
    required: true
  prefix:
    description: The folder of the run records in O(bucket); the record is C(<prefix>/<run>.json).
    type: str
    default: kopsible-fleet-runs
  run:
    description: The run's name (letters, digits, C(.), C(_), C(-); 1 to 128 characters), e.g. C(upgrade-1.35).
    type: str
    required: true
  state:
    description:
      - C(present) makes the run with O(plan) (every cluster pending), or resumes it when it exists with the same plan
        (a different plan is refused, naming the differences), and makes O(holder) the run's holder.
      - C(claimed) asks whether O(cluster) may start now and, when it may, marks it running (RV(proceed), RV(why),
        RV(wait_seconds)).
      - C(finished) records O(cluster)'s O(outcome).
      - C(approved) records the approval of O(stage).
      - C(released) gives the run up at the end of a controller's work (the next one needs no O(takeover)); nothing
        happens when O(holder) does not hold it.
      - C(query) only reads the record.
    type: str
    choices: [present, claimed, finished, approved, released, query]
    default: present
  plan:
    description: The run's plan, for O(state=present).
    type: dict
    suboptions:
      stages:
        description: The stages, in order.
        type: list
        elements: dict
        required: true
        suboptions:
          name:
            description: The stage's name, unique in the run.
            type: str
            required: true
          clusters:
            description: The stage's clusters (each cluster in one stage of the run). Give O(plan.stages[].clusters) or O(plan.stages[].select).
            type: list
            elements: str
          select:
            description:
              - Instead of O(plan.stages[].clusters), the clusters of O(inventory) in an inventory group and/or with
                cloud labels, less those of the other stages, by name; the stage is cut into waves of
                O(plan.stages[].wave_size). A stage V(wave) of several waves becomes the stages V(wave1), V(wave2), ...
                in the record; each wave has the stage's O(plan.stages[].soak), the first its O(plan.stages[].approval).
              - A selection that matches no cluster of O(inventory) is refused.
            type: dict
            suboptions:
              group:
                description: An inventory group, e.g. a C(keyed_groups) group of the M(kopsible.kops.kops) inventory plugin.
                type: str
              labels:
                description:
                  - Cloud labels (the cluster spec's C(cloudLabels)) a cluster must have, all of them.
                  - Values are strings, as kops stores them; a YAML boolean or number is compared as YAML writes it
                    (V(true), V(1)), a null, list or dict value is refused.
                type: dict
          wave_size:
            description:
              - Clusters per wave of a O(plan.stages[].select) stage, a count or a percentage of the stage's clusters
                (V(25%)), rounded up and at least 1 as Kubernetes scales percentages rounded up
                (intstr.GetScaledValueFromIntOrPercent, kops' maxSurge). Omitted, one wave.
            type: raw
          soak:
            description: How long to wait after the stage's last cluster finished before the next stage starts, a Go duration such as C(30m).
            type: str
            default: "0"
          approval:
            description: The stage waits for O(state=approved) of it before its first cluster starts.
            type: bool
            default: false
      max_failures:
        description: How many clusters may fail before the run halts (no further cluster starts).
        type: int
        default: 0
      cluster_budget:
        description:
          - The time budget of one cluster, a Go duration such as V(45m). A cluster done later than this after its
            start is recorded failed, naming the time it took, and counts against O(plan.max_failures); its change is
            not interrupted (a roll stopped half-way is worse than a late one), and a re-run tries it again.
        type: str
      window:
        description: A maintenance window outside which no cluster starts (running ones finish).
        type: dict
        suboptions:
          days:
            description: The days it opens, of C(mon)..C(sun).
            type: list
            elements: str
            default: [mon, tue, wed, thu, fri, sat, sun]
          start:
            description: When it opens, C(HH:MM).
            type: str
            required: true
          end:
            description: When it closes, C(HH:MM); before O(plan.window.start) it spans midnight.
            type: str
            required: true
          timezone:
            description: The IANA time zone of O(plan.window.start) and O(plan.window.end).
            type: str
            default: UTC
      change:
        description:
          - What the run changes, one kind per run, kept in the record; C(playbooks/fleet_update_run.yml) does it.
          - C({kubernetes_version= 1.35.0}) upgrades each cluster with the M(kopsible.kops.upgrade) role's planned order.
          - C({image= {image= ami-..., roles= [Node]}}) (or C(groups) with InstanceGroup names instead of C(roles),
            default C(roles= [Node])) sets the image of the chosen InstanceGroups, applies and rolls them.
          - C({kops_version= 1.36.2}) is a kops binary bump; the play's kops binary must be that version, the run is
            refused before anything is written when a cluster was last applied with a newer kops (unless
            C(allow_kops_downgrade)), and each cluster is updated, rolled and validated with it.
          - Omitted, the upgrade role reads its own target (C(upgrade_kubernetes_version)).
        type: raw
  inventory:
    description:
      - The clusters O(plan.stages[].select) chooses from, for O(state=present) - cluster name -> C(groups) (its
        inventory groups) and C(labels) (its cloud labels); C(playbooks/fleet_update_run.yml) passes its inventory's.
    type: dict
    default: {}
  approved:
    description:
      - The approved plan of O(state=present), as the check-mode run of C(playbooks/fleet_update_run.yml) publishes it
        (C(fleet_run_approved_plan)) for an approval to show, per cluster its C(state_store) and C(spec_fingerprint)
        (the M(kopsible.kops.kops_cluster_info) return value).
      - Each cluster of the plan the run has not started yet is read again; when one is missing from O(approved), or
        its stored spec or applied kops version changed since (someone ran C(kops edit) or applied it), the module
        fails naming each such cluster and what changed, and writes nothing. A cluster the run already started is not
        compared (its change is the run's).
    type: dict
  holder:
    description:
      - This controller's id for the run (e.g. the AWX job id, or a value the playbook makes once), required for every
        state but C(query). Each call renews its lease.
      - For O(state=approved), the approver's id, kept in the approval's event; an approval does not take the run
        (the job that runs the approved stage next needs no O(takeover)).
    type: str
  lease_seconds:
    description: How long the holder keeps the run without another call (seconds); another controller is refused meanwhile.
    type: int
    default: 1800
  takeover:
    description: Take the run from another holder whose lease has not run out (after that controller crashed or was killed).
    type: bool
    default: false
  cluster:
    description: The cluster, for O(state=claimed) and O(state=finished).
    type: str
  outcome:
    description: What became of O(cluster), for O(state=finished).
    type: str
    choices: [done, failed, skipped]
  reason:
    description: Why (e.g. the failed task's message), for O(state=finished).
    type: str
  stage:
    description: The stage approved, for O(state=approved).
    type: str
  kops_versions_applied:
    description:
      - For a kops binary bump (C(plan.change.kops_version)) with O(state=present), the kops version each planned
        cluster was last applied with (its C(kops-version.txt)), cluster name to version, e.g. the
        M(kopsible.kops.kops) inventory plugin's C(kops_version_applied) host variable.
      - Before the run is made or resumed, O(kops_binary) must be the plan's version (C(kops version --short)), and
        no cluster here may have been applied with a newer kops (kops refuses such an apply,
        upup/pkg/fi/cloudup/apply_cluster.go) unless O(allow_kops_downgrade); otherwise the module fails naming them
        and writes nothing.
    type: dict
    default: {}
  allow_kops_downgrade:
    description: Let a kops binary bump run over clusters last applied with a newer kops (kops C(--allow-kops-downgrade)).
    type: bool
    default: false
extends_documentation_fragment:
  - kopsible.kops.kops.group
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
notes:
  - Supports check mode (the record is read, nothing is written; RV(proceed) says what a real run would do) and diff
    mode (the clusters' states before and after).
  - Needs s3:GetObject and s3:PutObject on the record's key.
"""

EXAMPLES = r"""
- name: The run, canary first (makes it, or resumes it after a crashed controller)
  kopsible.kops.fleet_run:
    bucket: my-kops-state
    run: upgrade-1.35
    holder: "{{ tower_job_id | default(run_holder) }}"
    plan:
      change: {kubernetes_version: 1.35.0}
      stages:
        - {name: canary, clusters: [c0.example.org], soak: 30m}
        - {name: wave1, clusters: [c1.example.org, c2.example.org], approval: true}
      window: {days: [mon, tue, wed, thu], start: "22:00", end: "04:00", timezone: Europe/Berlin}

- name: A canary, then the rest of the production clusters in waves of a quarter (stages rest1, rest2, ...)
  kopsible.kops.fleet_run:
    bucket: my-kops-state
    run: upgrade-1.35-prod
    holder: "{{ tower_job_id | default(run_holder) }}"
    plan:
      change: {kubernetes_version: 1.35.0}
      stages:
        - {name: canary, clusters: [c0.example.org], soak: 1h}
        - {name: rest, select: {labels: {environment: production}}, wave_size: 25%, soak: 30m, approval: true}
    # what the selection chooses from: cluster -> its inventory groups and cloud labels (the playbook passes its own)
    inventory:
      c0.example.org: {groups: [prod], labels: {environment: production}}
      c1.example.org: {groups: [prod], labels: {environment: production}}
      c2.example.org: {groups: [prod], labels: {environment: production}}

- name: May this cluster start now?
  kopsible.kops.fleet_run:
    bucket: my-kops-state
    run: upgrade-1.35
    holder: "{{ run_holder }}"
    state: claimed
    cluster: "{{ inventory_hostname }}"
  register: claim

- name: Upgrade it
  ansible.builtin.include_role:
    name: kopsible.kops.upgrade
  when: claim.proceed

- name: Record the outcome
  kopsible.kops.fleet_run:
    bucket: my-kops-state
    run: upgrade-1.35
    holder: "{{ run_holder }}"
    state: finished
    cluster: "{{ inventory_hostname }}"
    outcome: done
  when: claim.proceed
"""

RETURN = r"""
record:
  description: The run's record as stored after this call (as it would be, in check mode).
  returned: success
  type: dict
  sample: {run: upgrade-1.35, plan: {stages: [{name: canary, clusters: [c0], soak_seconds: 1800, approval: false}], max_failures: 0},
           holder: {id: job-42, since: "2026-12-05T22:00:00Z", lease_until: "2026-12-05T22:30:00Z"}, approved: [],
           clusters: {c0: {stage: canary, state: done, attempts: 1, started: "2026-12-05T22:00:05Z", finished: "2026-12-05T22:09:40Z", reason: null}}}
record_url:
  description: Where the record is, C(s3://BUCKET/KEY).
  returned: success
  type: str
summary:
  description: One line per cluster in stage order, C(stage cluster - state (attempt N, reason)).
  returned: success
  type: list
  elements: str
proceed:
  description: Whether O(cluster) may start now (it is marked running).
  returned: when state=claimed
  type: bool
why:
  description: "Why, e.g. C(started), C(done at ...), C(waiting for stage canary: c0 (failed)), C(soaking after stage canary until ...),
    C(stage wave1 waits for approval ...), C(waiting for the maintenance window (opens ...)), C(the run halted: ...)."
  returned: when state=claimed
  type: str
wait_seconds:
  description: While a stage soaks, the seconds left (then claim again); null otherwise.
  returned: when state=claimed
  type: int
resumed:
  description: The cluster was running when its controller stopped; it starts again.
  returned: when state=claimed
  type: bool
"""

import datetime
import re

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    BotoCoreError = ClientError = Exception

from ansible_collections.kopsible.kops.plugins.module_utils._fleet import approval, selection, store
from ansible_collections.kopsible.kops.plugins.module_utils._fleet import record as runs
from ansible_collections.kopsible.kops.plugins.module_utils._kops import binary_version
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, check_account, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError, runner_from_module
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import diff_paths
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import retry_config
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError

RUN_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
# the options each state needs (besides bucket and run)
NEEDS = {
    "present": ("plan", "holder"),
    "claimed": ("cluster", "holder"),
    "finished": ("cluster", "outcome", "holder"),
    "approved": ("stage", "holder"),
    "released": ("holder",),
    "query": (),
}


def argument_spec():
    """The module's options and the action group's shared kops options (accepted for module_defaults)."""
    return dict(
        kops_argument_spec(),
        bucket=dict(type="str", required=True),
        prefix=dict(type="str", default="kopsible-fleet-runs"),
        run=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=list(NEEDS)),
        plan=dict(
            type="dict",
            options=dict(
                stages=dict(
                    type="list",
                    elements="dict",
                    required=True,
                    options=dict(
                        name=dict(type="str", required=True),
                        clusters=dict(type="list", elements="str"),
                        select=dict(type="dict", options=dict(group=dict(type="str"), labels=dict(type="dict"))),
                        wave_size=dict(type="raw"),
                        soak=dict(type="str", default="0"),
                        approval=dict(type="bool", default=False),
                    ),
                ),
                max_failures=dict(type="int", default=0),
                cluster_budget=dict(type="str"),
                window=dict(
                    type="dict",
                    options=dict(
                        days=dict(type="list", elements="str", default=list(runs.DAYS)),
                        start=dict(type="str", required=True),
                        end=dict(type="str", required=True),
                        timezone=dict(type="str", default="UTC"),
                    ),
                ),
                change=dict(type="raw"),
            ),
        ),
        inventory=dict(type="dict", default={}),
        approved=dict(type="dict"),
        holder=dict(type="str"),
        lease_seconds=dict(type="int", default=1800),
        takeover=dict(type="bool", default=False),
        cluster=dict(type="str"),
        outcome=dict(type="str", choices=["done", "failed", "skipped"]),
        reason=dict(type="str"),
        stage=dict(type="str"),
        kops_versions_applied=dict(type="dict", default={}),
        allow_kops_downgrade=dict(type="bool", default=False),
    )


def check_params(params):
    """The checked plan (or None); RuleError naming the option for a missing or broken one."""
    if not RUN_NAME.fullmatch(params["run"]):
        raise RuleError("run: %r; use 1 to 128 letters, digits, '.', '_' or '-'" % params["run"])
    for option in NEEDS[params["state"]]:
        if not params[option]:
            raise RuleError("%s: needed for state=%s" % (option, params["state"]))
    if params["lease_seconds"] < 1:
        raise RuleError("lease_seconds: %d; a lease is 1 second or more" % params["lease_seconds"])
    return runs.check_plan(selection.expand_stages(params["plan"], params["inventory"])) if params["state"] == "present" else None


def change_for(params, plan, now, result, s3=None):
    """The record change of ``params['state']`` for :func:`store.update`: ``change(record) -> (new record, None)``;
    fills ``result`` (proceed, why...). With ``approved``, the approved plan is checked against the clusters read
    with ``s3`` (_fleet.approval). Raises runs.Refused, or StoreError (a cluster's store cannot be read)."""
    state, holder = params["state"], params["holder"]

    def change(record):
        if record is None:
            if state != "present":
                raise runs.Refused("run %s does not exist in s3://%s (make it with state=present and a plan)" % (params["run"], params["bucket"]))
            record = runs.new_record(params["run"], plan, now)
        elif state == "present" and record["plan"] != plan:
            differences = ", ".join("%s (%r -> %r)" % (d["path"], d["before"], d["after"]) for d in diff_paths(record["plan"], plan))
            raise runs.Refused(
                "run %s exists with another plan: %s; nothing was written (give the stored plan to resume it, or a new run name)" % (params["run"], differences)
            )
        if state == "present" and params.get("approved") is not None:
            approval.check_approved(record, params["approved"], s3)
        if state == "query":
            return None, None
        if state == "released":
            runs.release(record, holder, now)
            return record, None
        if state == "approved":  # a fact about the run, given by whoever approves: it does not hold the run
            runs.approve(record, params["stage"], now, by=holder)
            return record, None
        runs.take(record, holder, now, params["lease_seconds"], params["takeover"])
        if state == "claimed":
            decision = runs.decide(record, params["cluster"], now)
            result.update(decision)
            if decision["proceed"]:
                runs.start(record, params["cluster"], now, holder)
        elif state == "finished":
            runs.finish(record, params["cluster"], params["outcome"], params["reason"], now)
        return record, None

    return change


def _without_lease(record):
    if record is None:
        return None
    holder = dict(record.get("holder") or {}, lease_until=None)
    return dict(record, holder=holder)


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    try:
        plan = check_params(params)
    except RuleError as exc:
        module.fail_json(msg=str(exc))
    target = ((plan or {}).get("change") or {}).get("kops_version")
    if target:
        try:
            binary = runner_from_module(module, params.get("state_store")).version()
        except KopsError as exc:
            module.fail_json(msg="kops_binary: %s could not tell its version: %s; nothing was written" % (params["kops_binary"], exc))
        planned = set(c for stage in plan["stages"] for c in stage["clusters"])
        applied = dict((c, v) for c, v in params["kops_versions_applied"].items() if c in planned)
        problem = binary_version.bump_problem(binary, target, applied, params["allow_kops_downgrade"])
        if problem:
            module.fail_json(msg=problem, kops_version=binary)
    key = store.key_of(params["prefix"], params["run"])
    result = {"changed": False, "record_url": "s3://%s/%s" % (params["bucket"], key)}
    s3 = module.client("s3", config=retry_config())
    with module.aws_failures("allowed_account_ids: STS GetCallerIdentity failed; nothing was written"):
        check_account(module, params["allowed_account_ids"])
    now = datetime.datetime.now(datetime.timezone.utc)
    before = None
    try:
        before, record, dummy, written = store.update(s3, params["bucket"], key, change_for(params, plan, now, result, s3), check_mode=module.check_mode)
    except runs.Refused as exc:
        module.fail_json(msg=exc.message, holder=exc.holder, record_url=result["record_url"])
    except store.Conflict as exc:
        module.fail_json(msg=str(exc), record_url=result["record_url"])
    except StoreError as exc:
        module.fail_json(msg="approved: %s; nothing was written" % exc, record_url=result["record_url"])
    except (BotoCoreError, ClientError) as exc:
        module.fail_json_aws(exc, msg="S3 refused the run record %s; nothing was written" % result["record_url"])
    except ValueError as exc:
        module.fail_json(msg="the run record %s is not JSON (%s); nothing was written" % (result["record_url"], exc))
    # a holder's lease renewed is bookkeeping, not a change of the run
    result.update(record=record, summary=runs.summary(record), changed=(written or module.check_mode) and _without_lease(record) != _without_lease(before))
    if module._diff:
        result["diff"] = {"before": "\n".join(runs.summary(before)) + "\n" if before else "", "after": "\n".join(result["summary"]) + "\n"}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
