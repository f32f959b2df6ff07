# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops_instancegroup's steps, from the module's checked options to its result: the InstanceGroup judged against the
stored one (kops' rules on the merged spec), written (kops replace / create -f, or deleted), a scale-down drained first,
then planned and applied (kops update cluster); in check mode all of it in a scratch copy of the specs."""

import functools

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.kopsible.kops.plugins.module_utils._kops import ec2_reads, scale_down, update_plan, user_data
from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import asg_name, region_of_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.preview import ScratchStore


def desired_group(params, cluster_name, current, role):
    """The manifest to store (dict) and the list of field changes. Dict options merge into the stored
    values (kops_spec.desired_object's merge rule), also for a new group (where ``None`` values just drop)."""
    overrides = {("spec", field): value for field, value in kops_ig.overrides(params).items()}
    base = current if current is not None else kops_ig.new_manifest(cluster_name, params["name"], role, {})
    manifest = kops_spec.desired_object(base, overrides, params["spec"])
    before = kops_spec.strip_server_fields(current) if current is not None else {}
    return manifest, kops_spec.diff_paths(before, manifest)


def check_user_data_size(module, cluster_name, groups, manifest, role, result):
    """Fail (before anything is written) when the user data kops would render exceeds EC2's 16,384 bytes. The nodeup
    script is measured as kops last rendered it: the launch template of this group, or of another group of the same
    role (kops renders the same script for them, bar the group's name); the parts are framed as kops frames them
    (user_data.aws_multipart_mime). ``result['user_data_bytes']`` reports the measure (None: no launch template yet,
    the cluster was never applied, so nothing to measure from)."""
    name = manifest["metadata"]["name"]
    same_role = [g for g in sorted(groups) if g != name and kops_spec.normalize_role(groups[g]["spec"].get("role")) == role]
    ec2 = module.client("ec2")
    text, source = ec2_reads.launch_template_user_data(ec2, ["%s.%s" % (g, cluster_name) for g in [name] + same_role])
    script = user_data.nodeup_script_of(text) if text is not None else None
    if script is None:
        result["user_data_bytes"] = None
        return
    parts = manifest["spec"].get("additionalUserData") or []
    result["user_data_bytes"] = len(user_data.aws_multipart_mime(script, parts, role == "Bastion"))
    problem = user_data.user_data_problem(script, manifest["spec"], source)
    if problem:
        module.fail_json(msg=problem, **result)


def plan_and_apply(module, ops, params, cluster_name, scratch, result):
    """Cloud plan; in check mode the dry run of the scratch store that holds this run's change (kops_preview); apply a
    non-empty plan (ClusterOps.plan_and_apply)."""
    preview = functools.partial(scratch.ops.plan, cluster_name) if scratch else None
    plan, applied = ops.plan_and_apply(cluster_name, module.check_mode, preview=preview, plan_before_apply=params["plan_before_apply"])
    update_plan.report_plan(result, plan, applied)


def drain_scale_down(module, params, result):
    """Before kops lowers the group's maximum below its Auto Scaling group's desired capacity (an apply of a
    scale-down), choose the instances AWS would remove (scale_down.choose_instances) and report them in
    ``result['scale_down']``; with a kubeconfig (and not in check mode) drain their Nodes and terminate exactly them
    with the desired capacity decremented, so kops' change of the maximum removes nothing more. Without a kubeconfig it
    warns that AWS will terminate them undrained. Fails naming the node, the pods left and what was written."""
    spec = result.get("spec") or {}
    role = kops_spec.normalize_role(spec.get("role"))
    name = asg_name(result["cluster"], {"metadata": {"name": result["name"]}, "spec": {"role": role}})
    if role == "Bastion" or name is None:  # bastions run no pods
        return
    min_size, max_size = scale_down.default_sizes(role, spec.get("minSize"), spec.get("maxSize"))
    autoscaling = module.client("autoscaling")
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name]).get("AutoScalingGroups") or []
    count = scale_down.excess(found[0], max_size) if found else 0
    if not count:  # not applied yet, or no instance above the new maximum
        return
    asg = found[0]
    ids = [i["InstanceId"] for i in asg.get("Instances") or []]
    launch_times = {}
    for reservation in module.client("ec2").describe_instances(InstanceIds=ids).get("Reservations") or [] if ids else []:
        for instance in reservation.get("Instances") or []:
            launch_times[instance["InstanceId"]] = instance["LaunchTime"].timestamp()
    chosen = scale_down.choose_instances(asg, count, launch_times)
    report = result["scale_down"] = dict(
        auto_scaling_group=name,
        desired_capacity=asg.get("DesiredCapacity"),
        max_size=max_size,
        termination_policies=asg.get("TerminationPolicies") or ["Default"],
        instances=chosen,
        drained=False,
        nodes_drained=[],
        pods_evicted=[],
        budget_refusals=0,
        instances_terminated=[],
    )
    result["changed"] = True
    if not params["kubeconfig"]:
        module.warn(
            "InstanceGroup %s: its Auto Scaling group goes from %s to %s instances and AWS terminates %s without a drain: no "
            "kubeconfig was given (give kubeconfig to drain them first)" % (result["name"], asg.get("DesiredCapacity"), max_size, ", ".join(chosen))
        )
        return
    if module.check_mode:
        return
    if not kops_pdb.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes (to drain the scale-down of %s)" % result["name"]), **result)
    k8s_client, k8s_config = kops_pdb.kubernetes_client()
    done = "no instance was terminated and the Auto Scaling group is unchanged"
    try:
        context = params["kube_context"] or kops_pdb.default_context(params["kubeconfig"], result["cluster"])
        core = k8s_client.CoreV1Api(k8s_config.new_client_from_config(config_file=params["kubeconfig"], context=context))
        for instance_id in chosen:
            node = scale_down.node_of_instance(core, instance_id)
            if node is None:  # kops: "Skipping drain of instance, because it is not registered in kubernetes"
                continue
            drained = scale_down.drain_node(core, k8s_client, node, kops_rules.duration_seconds(params["drain_timeout"], "drain_timeout"))
            report["nodes_drained"].append(drained["node"])
            report["pods_evicted"].extend(drained["evicted"])
            report["budget_refusals"] += drained["budget_refusals"]
    except scale_down.DrainError as exc:
        report["pods_evicted"].extend(exc.evicted)
        module.fail_json(
            msg="scale-down of InstanceGroup %s: %s; node %s is left cordoned (pods still on it: %s); %s; the InstanceGroup spec %s"
            % (result["name"], exc, exc.node, ", ".join(exc.remaining) or "none", done, "was stored" if result["changes"] else "is as it was"),
            **result,
        )
    except Exception as exc:  # the kubernetes client raises many types (ApiException, urllib3, ConfigException)
        module.fail_json(
            msg="scale-down of InstanceGroup %s: the Kubernetes API failed while draining (%s: %s); nodes drained: %s; %s"
            % (result["name"], type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "", ", ".join(report["nodes_drained"]) or "none", done),
            **result,
        )
    report["drained"] = True
    try:
        scale_down.lower_min_size(autoscaling, asg, len(chosen), min_size)
        scale_down.terminate_instances(autoscaling, chosen, report["instances_terminated"])
    except Exception as exc:  # botocore ClientError/BotoCoreError: name what was terminated
        module.fail_json(
            msg="scale-down of InstanceGroup %s: AWS failed to terminate the drained instances (%s); terminated: %s"
            % (result["name"], exc, ", ".join(report["instances_terminated"]) or "none"),
            **result,
        )


def report_stored(module, writer, result, manifest):
    """The result's spec, summary and diff from the InstanceGroup kops stored (read back through ``writer``: the real
    store, or in check mode the scratch store), and a warning naming the fields of ``manifest`` kops did not keep
    (kops_spec.dropped_paths). One kops call."""
    cluster, groups = writer.get_all(result["cluster"])
    stored = groups.get(result["name"])
    if stored is None:
        return
    result["spec"] = stored.get("spec")
    result["instance_group"] = writer.ig_summary(stored, ((cluster or {}).get("spec") or {}).get("subnets"))
    result["diff"]["after"] = stored.get("spec")
    kops_spec.report_dropped_fields(result, manifest, stored, module.warn)


def ensure(module, ops, params):
    """Judge the group against the stored one (nothing written); returns ``(result, manifest, existed)``: the manifest
    to store when it differs (else None) and whether the group exists (ensure_and_apply writes or deletes it)."""
    cluster_name = kops_rules.cluster_name(params["cluster"], "cluster")
    cluster, groups = ops.get_all(cluster_name)
    if cluster is None:
        module.fail_json(msg="cluster: %s is not in the state store %s" % (cluster_name, ops.state_store))
    current = groups.get(params["name"])
    result = dict(changed=False, cluster=cluster_name, name=params["name"], changes=[])
    if params["state"] == "absent":
        if current is None:
            return result, None, False
        if (
            kops_spec.normalize_role(current["spec"].get("role")) == "ControlPlane"
            and sum(1 for g in groups.values() if kops_spec.normalize_role(g["spec"].get("role")) == "ControlPlane") == 1
        ):
            module.fail_json(msg="name: %s is the last control-plane InstanceGroup of %s; it cannot be deleted" % (params["name"], cluster_name))
        result.update(changed=True, diff={"before": current.get("spec"), "after": {}})
        return result, None, True
    stored_role = kops_spec.normalize_role(current["spec"].get("role")) if current else None
    role = kops_ig.check_role(params["role"]) if params["role"] else stored_role
    if role is None:
        module.fail_json(msg="role: required to create InstanceGroup %s (ControlPlane, Node, Bastion or APIServer)" % params["name"])
    if stored_role and role != stored_role:
        module.fail_json(msg="role: %s is a %s InstanceGroup; the role of an existing group cannot change to %s" % (params["name"], stored_role, role))
    try:  # the rules judge what would be stored: given fields merged into the stored ones
        manifest, result["changes"] = desired_group(params, cluster_name, current, role)  # durations parse here
        merged = kops_ig.merged_params(params, manifest.get("spec"))
        kops_ig.check_sizes(role, merged["min_size"], merged["max_size"])  # the stored role's rules too
        kops_ig.check_fields(merged, role, [s.get("name") for s in cluster["spec"].get("subnets") or []])
        # target group and policy ARNs: of the cluster's partition and region (AWS finds no other)
        region = region_of_spec(cluster["spec"])
        kops_rules.arn_partitions(merged.get("external_load_balancers") or [], region, "external_load_balancers")
        kops_rules.arn_partitions(params.get("spec") or {}, region, "spec")
    except kops_rules.RuleError as exc:
        module.fail_json(msg=str(exc))
    if any(c["path"].startswith(("spec.additionalUserData", "spec.compressUserData")) for c in result["changes"]):
        check_user_data_size(module, cluster_name, groups, manifest, role, result)
    result["diff"] = {"before": (current or {}).get("spec") or {}, "after": manifest.get("spec")}
    result["spec"] = manifest.get("spec")
    result["instance_group"] = ops.ig_summary(manifest, cluster["spec"].get("subnets"))
    if result["changes"]:
        result["changed"] = True
        return result, manifest, current is not None
    return result, None, current is not None


def ensure_and_apply(module, ops, params, guard):
    """Converge the group, then plan and apply (absent: plan only after a deletion, the group's cloud resources are
    already gone then). In check mode the change is made by kops in a scratch copy of the specs
    (kops_preview.ScratchStore), read back and planned there. Returns the result."""
    result, manifest, existed = ensure(module, ops, params)
    removing = params["state"] == "absent" and result["changed"]
    scratch = ScratchStore(ops, guard.s3, result["cluster"]) if module.check_mode and (manifest or removing) else None
    try:
        writer = scratch.ops if scratch else ops
        if manifest is not None:
            writer.intend(result["changes"])  # on a scratch store it only records them
            (writer.replace if existed else writer.create_manifest)(manifest)
            report_stored(module, writer, result, manifest)
        elif removing and scratch:
            scratch.remove_instance_group(params["name"])
        elif removing:
            ops.delete_instance_group(result["cluster"], params["name"])
        if params["apply"] and params["state"] == "present":
            drain_scale_down(module, params, result)
        if params["apply"] and (params["state"] == "present" or result["changed"]):
            plan_and_apply(module, ops, params, result["cluster"], scratch, result)
    finally:
        if scratch:
            scratch.close()
    return result
