#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rolling_update
short_description: Roll the instances of a kOps cluster that need it (kops rolling-update cluster)
version_added: 0.1.0
description:
  - Lists the instance groups that need an update (C(kops rolling-update cluster) without C(--yes)), rolls
    them with C(--yes) in kops' order (bastions, control plane one group at a time, API servers, nodes),
    and reports each group's status before and after and the instances replaced, read from AWS.
  - Re-running after an interruption rolls only what still needs it; with nothing to do the result is
    C(changed=false). Check mode lists what would roll and rolls nothing.
author:
  - kopsible maintainers (!UNKNOWN)
options:
  cluster: {description: Name of the cluster., type: str, required: true}
  instance_groups: {description: Only these instance groups (C(--instance-group))., type: list, elements: str}
  instance_group_roles:
    description:
      - Only groups of these roles (C(--instance-group-roles)), of C(control-plane), C(apiserver), C(node), C(bastion).
      - Read as kops reads them (C(pkg/apis/kops/parse.go)), in any case, plural, C(ControlPlane) or C(master) for the
        control plane, e.g. the guides' C(Node) and C(Master); passed to kops as its names.
    type: list
    elements: str
  cloudonly:
    description: Roll without draining or validating through the Kubernetes API (C(--cloudonly)); causes downtime.
    type: bool
    default: false
  force: {description: Roll even groups that need no update (C(--force))., type: bool, default: false}
  validation_timeout: {description: "C(--validation-timeout), a duration such as C(15m).", type: str}
  validate_count: {description: C(--validate-count)., type: int}
  drain_timeout: {description: C(--drain-timeout)., type: str}
  control_plane_interval: {description: C(--control-plane-interval)., type: str}
  node_interval: {description: C(--node-interval)., type: str}
  bastion_interval: {description: C(--bastion-interval)., type: str}
  post_drain_delay: {description: C(--post-drain-delay)., type: str}
  fail_on_validate_error: {description: C(--fail-on-validate-error)., type: bool}
  fail_on_drain_error: {description: C(--fail-on-drain-error)., type: bool}
  kubeconfig:
    description:
      - A kubeconfig for the cluster's Kubernetes API. When given, PodDisruptionBudgets are checked before
        anything rolls (see O(ignore_pdb)); without it the check is skipped and the result says so.
      - Its contents never appear in the result.
    type: path
  kube_context:
    description: Context of O(kubeconfig) to use; default the context named after the cluster (as C(kops export kubecfg) names it), else the current context.
    type: str
  ignore_pdb:
    description:
      - Roll even when a PodDisruptionBudget that allows no disruption covers pods on nodes about to roll.
        Those budgets are still reported in RV(pdb_check).
    type: bool
    default: false
  progress_file:
    description:
      - Append the roll's steps to this file as kops takes them, one line each (C(HH:MM:SS) and kops' own words, e.g.
        C(Detaching instance ...), C(Draining the node ...), C(evicting pod NS/NAME), C(Stopping instance ...),
        C(Validating the cluster.)), so that a long group can be followed with C(tail -f).
      - When the task runs on the controller (the local connection, as the roles of kopsible do), the action
        plugin of the collection sets a temporary one by itself and shows each step in the play's output while the task runs.
      - Opened only when something rolls (never in check mode); a file that cannot be opened fails the run before
        anything rolls.
    type: path
extends_documentation_fragment:
  - kopsible.kops.kops
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
notes:
  - Supports check mode. A no-op run makes one kops call; when groups need an update, C(kops get all --name) reads their
    rolling update settings (one more call).
  - The PodDisruptionBudget check runs with the kubernetes Python client. A budget blocks when its
    C(status.disruptionsAllowed) is 0 and it selects a running pod on a node of a group about to roll
    (matched by the node label C(kops.k8s.io/instancegroup) or by the instance id in C(spec.providerID)).
requirements:
  - kubernetes (Python client), only when O(kubeconfig) is given
"""

EXAMPLES = r"""
- name: Roll what needs it, without the Kubernetes API (e.g. a cluster that does not answer)
  kopsible.kops.rolling_update:
    cluster: mycluster01.kopsclustertest.example.org
    cloudonly: true

- name: Check PodDisruptionBudgets first, then roll what needs it
  kopsible.kops.rolling_update:
    cluster: mycluster01.kopsclustertest.example.org
    kubeconfig: ~/.kube/mycluster01

- name: Roll only the workers, two validations between nodes
  kopsible.kops.rolling_update:
    cluster: mycluster01.kopsclustertest.example.org
    instance_group_roles: [node]
    validate_count: 2
    node_interval: 30s
"""

RETURN = r"""
cluster:
  description: The normalised cluster name.
  returned: always
  type: str
groups_before:
  description: Per instance group, kops' status before the run (name, status, need_update, ready, min, target, max).
  returned: always
  type: list
  elements: dict
groups_after:
  description: The same after the run (equal to groups_before in check mode or when nothing rolled).
  returned: always
  type: list
  elements: dict
would_roll:
  description: Names of the groups that need an update (or all selected ones with force) and roll, without those in RV(skipped_groups).
  returned: always
  type: list
  elements: str
roll_order:
  description:
    - The groups of RV(would_roll) in the order kops rolls them (bastions, the control plane, API servers, nodes; by
      name within each), with their role (C(Bastion), C(ControlPlane), C(APIServer), C(Node)). A playbook that rolls
      one group per task (the upgrade role) loops over it, in check mode first.
  returned: when a group needs a roll
  type: list
  elements: dict
  sample: [{name: control-plane-us-east-1a, role: ControlPlane}, {name: nodes-us-east-1a, role: Node}]
skipped_groups:
  description:
    - Groups that need an update but whose rolling update kops disables (C(rollingUpdate.drainAndTerminate) false on the
      InstanceGroup, or in the cluster spec when the group sets none), with the reason. They are left out of the
      C(--yes) call (named with C(--instance-group)), since kops would still taint their nodes and detach surge instances
      before it reads the setting. Only they needing an update makes no C(--yes) call, takes no lock, C(changed=false).
  returned: always
  type: list
  elements: dict
  sample: [{name: nodes-us-east-1a, reason: "rollingUpdate.drainAndTerminate: false on the InstanceGroup"}]
replaced:
  description:
    - Per group, the instance ids that were replaced (before) and their replacements (after), read from AWS.
    - Also returned when the roll fails or times out part-way, with what it replaced until then.
  returned: always
  type: dict
rolled:
  description:
    - Per group, in the order kops rolled them, what the roll did, from kops' own output and the instances read
      from AWS. C(name); C(instances) (C(old), C(new), C(node), C(stopped)); C(nodes_drained); C(pods_evicted)
      (count) and C(evicted) (per node, the pods kops' drain evicted, C(NAMESPACE/NAME)); C(evictions_refused)
      (eviction attempts the API refused and kops retried, e.g. a PodDisruptionBudget) and C(refusals) (the first
      few, pod and reason); C(validations) (count), C(validation_seconds), C(validation_failures) (kops' messages
      of the validations that did not pass); C(seconds); C(done) (every old instance of the group stopped).
    - Also returned when the roll stops part-way, with what was done until then.
  returned: when something rolled or the roll failed
  type: list
  elements: dict
  sample: [{name: nodes-us-east-1a, instances: [{old: i-0abc, new: i-0def, node: ip-172-20-0-4.ec2.internal, stopped: true}],
            nodes_drained: [ip-172-20-0-4.ec2.internal], pods_evicted: 2, evictions_refused: 1, validations: 3,
            validation_seconds: 35.2, validation_failures: ['machine "i-0def" has not yet joined cluster'], seconds: 50.1, done: true}]
detached:
  description:
    - The cluster's instances kops detached from their Auto Scaling groups (a surge) and did not terminate yet, read
      from AWS after the roll (tag C(kops.k8s.io/detached-from-asg)), each with C(instance), C(instance_group),
      C(auto_scaling_group) and C(state). Empty after a complete roll; after a roll that stopped part-way (a failure, a
      timeout, an interruption), what a re-run drains and terminates.
  returned: when something rolled or the roll failed
  type: list
  elements: dict
  sample: [{instance: i-0abc, instance_group: nodes-us-east-1a, auto_scaling_group: nodes-us-east-1a.k1.example.org, state: running}]
remaining:
  description: The groups of RV(would_roll) that were not rolled to the end (empty after a complete roll).
  returned: when something rolled or the roll failed
  type: list
  elements: str
validations_before:
  description: The validations kops ran before it rolled the first group (C(ok), C(seconds), C(message)).
  returned: when something rolled or the roll failed
  type: list
  elements: dict
roll_seconds:
  description: Seconds from kops' first to last log line of the roll.
  returned: when something rolled or the roll failed
  type: float
pdb_check:
  description:
    - The PodDisruptionBudget check. C(checked) (bool), C(skipped_reason) (why it did not run, or null),
      C(nodes) (the nodes about to be drained), C(blocking) (list of budgets with C(name), C(namespace),
      C(disruptions_allowed) and the C(pods) they protect on those nodes).
  returned: when something would roll
  type: dict
  sample: {checked: true, skipped_reason: null, nodes: [i-0abc.ec2.internal],
           blocking: [{name: web, namespace: shop, disruptions_allowed: 0, pods: ["shop/web-1 on i-0abc.ec2.internal"]}]}
kops_invocations:
  description: The kops commands this run made.
  returned: always
  type: list
  elements: dict
previous_versions:
  description:
    - The state-store objects this run replaced and their version ids before it, as in M(kopsible.kops.kops_cluster);
      always empty here, since a rolling update writes no spec (kops reads it), only its lock.
  returned: always
  type: dict
  sample: {}
state_store_safety:
  description:
    - C(versioning_warning) (str or null, also shown as a warning), C(lock) (C(url), C(waited_seconds),
      C(waited_for) (the owner of the lock this run waited for, or null),
      C(broken), the content of a lock removed with O(break_lock), C(replanned), true when another run wrote the
      spec while this one waited, so it planned again on the new spec) or null when no lock was taken (check mode,
      nothing to write), C(account) (the AWS account checked against O(allowed_account_ids), or null).
    - C(interrupted_run), the note an earlier run left when it was interrupted (SIGINT, SIGTERM, SIGHUP) while it held
      the lock (C(module), C(signal), C(at), C(host), C(pid), C(msg), C(left), C(written); also shown as a warning)
      or null; C(interruption_note), the note this run left when it was interrupted, or null. The next successful run
      of the interrupted module, holding the lock, deletes the note.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.kopsible.kops.plugins.module_utils._kops import output as kops_output
from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rolling_log
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_ops import ClusterOps
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rolling import (
    DURATION_FLAGS,
    cluster_auto_scaling_groups,
    detached_instances,
    drain_disabled,
    group_instances,
    left_behind,
    replaced,
    roll_args,
    roll_order,
    roll_report,
    rolling_update_args,
)
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import KopsRun, checked
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError


def argument_spec():
    spec = kops_argument_spec()
    spec.update(
        cluster=dict(type="str", required=True),
        instance_groups=dict(type="list", elements="str"),
        instance_group_roles=dict(type="list", elements="str"),
        cloudonly=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        validation_timeout=dict(type="str"),
        validate_count=dict(type="int"),
        drain_timeout=dict(type="str"),
        control_plane_interval=dict(type="str"),
        node_interval=dict(type="str"),
        bastion_interval=dict(type="str"),
        post_drain_delay=dict(type="str"),
        fail_on_validate_error=dict(type="bool"),
        fail_on_drain_error=dict(type="bool"),
        kubeconfig=dict(type="path"),
        kube_context=dict(type="str"),
        ignore_pdb=dict(type="bool", default=False),
        progress_file=dict(type="path"),
    )
    return spec


def cloud_instances(module, cluster):
    """``{instance group: sorted instance ids}`` of the cluster's Auto Scaling groups, read from AWS."""
    return group_instances(cluster_auto_scaling_groups(module.client("autoscaling"), cluster), cluster)


def pdb_gate(module, params, cluster, result, instances):
    """Run the PodDisruptionBudget check for the groups in ``result['would_roll']``; fail the module when a
    budget blocks and ``ignore_pdb`` is false (nothing has rolled yet), warn when it is true."""
    groups = result["would_roll"]
    ids = [i for g in groups for i in instances.get(g, [])]
    context = params["kube_context"] or kops_pdb.default_context(params["kubeconfig"], cluster)
    result["pdb_check"] = check = kops_pdb.check(params["kubeconfig"], context, groups, ids)
    if not check["checked"]:
        module.warn("PodDisruptionBudget check skipped: %s" % check["skipped_reason"])
        return
    if not check["blocking"]:
        return
    names = ", ".join("%s/%s (protects %s)" % (b["namespace"], b["name"], ", ".join(b["pods"])) for b in check["blocking"])
    if params["ignore_pdb"]:
        module.warn("rolling despite PodDisruptionBudgets that allow no disruption (ignore_pdb): %s" % names)
        return
    module.fail_json(
        msg="PodDisruptionBudgets allow no disruption of pods on nodes about to roll: %s; nothing was rolled "
        "(fix the budgets, or set ignore_pdb: true)" % names,
        **result,
    )


def check_params(params):
    """The cluster and group names, the Go durations of kops' flags and every flag rule, before anything runs; returns
    the cluster name. Raises kops_rules.RuleError."""
    cluster = kops_rules.cluster_name(params["cluster"], "cluster")
    for index, group in enumerate(params["instance_groups"] or []):
        kops_rules.instance_group_name(group, "instance_groups[%d]" % index)
    for option, dummy in DURATION_FLAGS:  # Go durations, as kops' flags parse them
        if params[option] is not None:
            kops_rules.duration_seconds(params[option], option)
    rolling_update_args(cluster, params, yes=True)  # the flag rules
    return cluster


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = dict(module.params)
    cluster = checked(module, check_params, params)
    if params["kubeconfig"] and not kops_pdb.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    run = KopsRun(module, cluster, "the rolling update of %s" % cluster, "kops rolling-update failed for %s" % cluster, params["kubeconfig"])
    run.result.update(changed=False, cluster=cluster, replaced={}, kops_invocations=run.runner.calls)
    # a spec written by another run while this one waited for the lock: the step lists again what needs a roll
    run.exit(run(lambda: roll(module, params, run.runner, cluster, run.result, run.guard), on_interrupt=lambda exc: interrupted(run, exc)))


def interrupted(run, exc):
    """Fail a roll that Ctrl-C or a cancelled job stopped (``exc``: KopsInterrupted; kops is stopped), saying what it
    left, in the interruption note the next run reports too."""
    left = left_behind(run.result.get("detached", []))
    said = "; left: " + "; ".join(left) if left else ""
    note = run.guard.record_interruption("%s (rolling update of %s)%s" % (exc.message, run.cluster, said), left)
    run.fail(
        "%s: %s%s; the lock was released%s; re-run the rolling update to finish" % (run.cluster, exc.message, said, ", note %s" % note if note else ""),
        **exc.to_result(),
    )


def roll(module, params, runner, cluster, result, guard):
    """List what needs a roll, gate on PodDisruptionBudgets, take the cluster's lock and roll; fills ``result``.
    Raises KopsError (with ``result['replaced']`` set when a roll stopped part-way)."""
    list_args = rolling_update_args(cluster, params, yes=False)
    before = kops_output.parse_rolling_update(runner.run(list_args).stdout)
    result["groups_before"] = result["groups_after"] = before["groups"]
    selected = before["groups"] if params["force"] else [g for g in before["groups"] if g["need_update"]]
    result["would_roll"] = [g["name"] for g in selected if g["target"] or g["need_update"]]
    result["skipped_groups"] = []
    if not result["would_roll"]:
        return
    spec, groups = ClusterOps(runner, None).get_all(cluster)
    disabled = drain_disabled(spec, groups)
    result["skipped_groups"] = [{"name": g, "reason": disabled[g]} for g in result["would_roll"] if g in disabled]
    result["would_roll"] = [g for g in result["would_roll"] if g not in disabled]
    result["roll_order"] = roll_order(result["would_roll"], groups)
    if not result["would_roll"]:
        return
    instances = cloud_instances(module, cluster)
    pdb_gate(module, params, cluster, result, instances)
    result["changed"] = True
    if module.check_mode:
        return
    progress = open_progress(module, params["progress_file"])  # a file that cannot be opened fails before the lock
    guard.take_lock()
    if guard.lock is not None and guard.lock.waited_for:
        # another run held the lock meanwhile (it may have rolled these groups): list again and take the instances now,
        # so that this run reports only what it does itself
        now = kops_output.parse_rolling_update(runner.run(list_args).stdout)
        result["groups_before"] = result["groups_after"] = now["groups"]
        still = {g["name"] for g in now["groups"] if params["force"] or g["need_update"]}
        result["would_roll"] = [g for g in result["would_roll"] if g in still]
        result["roll_order"] = [g for g in result["roll_order"] if g["name"] in still]
        if not result["would_roll"]:
            result["changed"] = False
            return
        instances = cloud_instances(module, cluster)
    try:
        # one pipe for stdout and stderr: the drain's evictions (stdout) stay between kops' steps (stderr)
        args = roll_args(cluster, params, result["would_roll"]) if result["skipped_groups"] else rolling_update_args(cluster, params, yes=True)
        output = runner.run(args, merged=True, on_line=progress).stdout
    except KopsError as exc:
        # a roll stopped part-way: report what it did and what remains; a re-run finishes the remainder
        read_back(module, cluster, instances, result)
        report(result, exc.output or "", cluster, succeeded=False)
        raise
    result["groups_after"] = kops_output.parse_rolling_update(runner.run(list_args).stdout)["groups"]
    read_back(module, cluster, instances, result)
    report(result, output, cluster, succeeded=True)
    # AWS's groups do not list a detached instance, so a run that finished one another run detached replaces nothing
    # there: kops' log of this run says what it drained and stopped
    result["changed"] = bool(result["replaced"]) or any(g["nodes_drained"] or any(i["stopped"] for i in g["instances"]) for g in result["rolled"])


def read_back(module, cluster, instances, result):
    """After kops' roll (finished or not): ``replaced`` (against ``instances``, read before it) and ``detached``, read
    from AWS."""
    result["replaced"] = replaced(instances, cloud_instances(module, cluster))
    result["detached"] = detached_instances(module.client("ec2"), cluster)


def open_progress(module, path):
    """The ``on_line`` callable (KopsRunner.run) that appends each step of the roll (rolling_log.roll_step) to ``path``
    as kops prints it, or None without a path. Fails the module naming ``progress_file`` when it cannot be opened."""
    if not path:
        return None
    try:
        handle = open(path, "a", buffering=1)
    except OSError as exc:
        module.fail_json(msg="progress_file: cannot open %s for appending: %s; nothing was rolled" % (path, exc.strerror))
    module.on_exit(handle.close)

    def write(line):
        step = rolling_log.roll_step(line)
        if step:
            handle.write(step + "\n")

    return write


def report(result, output, cluster, succeeded):
    """Fill ``rolled`` (per group: instances old -> new, nodes drained, pods evicted, validations, seconds),
    ``remaining`` and ``roll_seconds`` from kops' merged output and the instances read from AWS."""
    log = rolling_log.parse_rolling_log(output, cluster)
    result["rolled"], result["remaining"] = roll_report(log, result["replaced"], result["would_roll"], succeeded)
    result["validations_before"] = log["validations_before"]
    result["roll_seconds"] = log["seconds"]


if __name__ == "__main__":
    main()
