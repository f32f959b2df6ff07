# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops_cluster's steps, from the module's checked options to its result: the cluster created (kops create cluster), its
convergeable fields written (kops replace, kops upgrade cluster), planned and applied (kops update cluster), validated
and its kubeconfig exported; or deleted (kops delete cluster) with the records left under its name checked. Each step
takes the module, the run's ClusterOps and the options, and fills the result dict."""

import contextlib
import functools
import os
import tempfile

from ansible_collections.kopsible.kops.plugins.module_utils._kops import create_args, ig_labels, kube_versions, update_plan
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.create_options import (
    CREATE_ONLY,
    create_only_differences,
    requested_options,
    stored_create_options,
)
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import cluster_facts, region_of_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.preview import ScratchStore
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import reader
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError


def create(module, ops, name, params, result):
    """Create the cluster (or, in check mode, show what kops would create)."""
    if not params["zones"]:
        module.fail_json(msg="zones: at least one availability zone is required to create cluster %s" % name, **result)
    if params["dns_zone"] and params["dns"] != "none" and not kops_rules.is_gossip(name):
        problem = ops.closer_zone_problem(name, params["dns_zone"], params["dns"] == "private")
        if problem:
            module.fail_json(msg=problem, **result)
    key_file = None
    try:
        if params["ssh_public_key"]:
            key_file = tempfile.NamedTemporaryFile("w", suffix=".pub", delete=False)
            key_file.write(params["ssh_public_key"].strip() + "\n")
            key_file.close()
        args = create_args.create_cluster_args(name, params, key_file.name if key_file else None)
        if module.check_mode:
            # What kops would store, as kops' own dry run prints it; only the spec fragment, which a real run
            # writes afterwards with kops replace, is merged in. The options are never laid over it: a flag that
            # did not reach kops shows as missing here (compare RV(requested)).
            documents = ops.create_dry_run(args)
            cluster = [d for d in documents if d.get("kind") == "Cluster"][0]
            # as a real run writes it after kops create: what the flags cannot carry and the spec fragment
            cluster = create_args.after_create(cluster, params) or cluster
            result["spec"] = kops_spec.desired_object(cluster, None, params["spec"]).get("spec", {})
            result["instance_groups"] = [ops.ig_summary(d, cluster["spec"].get("subnets")) for d in documents if d.get("kind") == "InstanceGroup"]
        else:
            try:
                result["plan"] = ops.create(args)
            except KopsError as exc:
                fail_create(module, ops, name, exc, result)
            # what the flags cannot carry (labels with commas, egress) and the spec fragment, written at once
            if params["spec"] or create_args.cloud_labels_flag(params["cloud_labels"])[1] or params["egress"]:
                stored = ops.get_cluster(name)
                ops.replace(kops_spec.desired_object(create_args.after_create(stored, params) or stored, None, params["spec"]))
                result["plan"] = None
            # result["instance_groups"]: read once with the stored spec after the apply (ensure_present)
    finally:
        if key_file:
            os.unlink(key_file.name)
    result["changed"] = True
    result["diff"] = {"before": {}, "after": {"spec": result.get("spec") or "(created by kops)"}}


def fail_create(module, ops, name, exc, result):
    """Fail a ``kops create cluster`` that kops refused, saying what it left in the state store (``result['written']``)
    and how to finish or remove it. kops writes the Cluster, its InstanceGroups and addons (registry/helpers.go:29-65
    CreateClusterConfig), then the SSH key, then previews the cloud plan (cmd/kops/create_cluster.go:794-868), so a
    failure after the first write leaves a spec that no cloud resource belongs to yet."""
    try:
        cluster, groups = ops.get_all(name)
        keys = ops.get_ssh_keys(name) if cluster is not None else []
    except KopsError as read_error:
        module.fail_json(
            msg="kops create cluster failed for %s: %s; what it left in %s could not be read (%s)" % (name, exc.message, ops.state_store, read_error.message),
            **dict(exc.to_result(), **result),
        )
    if cluster is None:
        module.fail_json(
            msg="kops create cluster failed for %s: %s; nothing was written to %s" % (name, exc.message, ops.state_store),
            written=[],
            **dict(exc.to_result(), **result),
        )
    result["written"] = (
        ["Cluster %s in %s" % (name, ops.state_store)] + ["InstanceGroup %s" % group for group in sorted(groups)] + ["%d SSH public key(s)" % len(keys or [])]
    )
    result["changed"] = True
    module.fail_json(
        msg=(
            "kops create cluster failed for %s: %s. It had written the spec to %s: the Cluster, %s, %s; nothing was applied "
            "to the cloud. To finish, remove the cause and re-run this task: it continues from the stored spec (the options "
            "that only shape a new cluster are compared with it, not applied), and apply: true builds it. To remove it, run "
            "state: absent (kops delete cluster --name %s --yes)"
            % (
                name,
                exc.message,
                ops.state_store,
                "InstanceGroups " + ", ".join(sorted(groups)) if groups else "no InstanceGroup",
                "%d SSH public key(s)" % len(keys or []) if keys else "no SSH public key",
                name,
            )
        ),
        **dict(exc.to_result(), **result),
    )


def check_version_rule(module, current, params, result):
    """Fail (nothing written yet) when ``kubernetes_version`` breaks the one-minor-forward rule."""
    if params["kubernetes_version"] and not params["allow_version_skip"]:
        problem = kube_versions.check_version_change(kops_spec.get_path(current, ("spec", "kubernetesVersion")), params["kubernetes_version"])
        if problem:
            module.fail_json(msg=problem, **result)


def upgrade(module, writer, name, current, params, result):
    """``kops upgrade cluster --yes`` when ``upgrade`` is set, through ``writer`` (the real store's ClusterOps, or in
    check mode the scratch store's: kops applies the channel's actions to the copy). Returns the cluster to converge
    from: the re-read cluster after an upgrade, else ``current``."""
    if not params["upgrade"]:
        return current
    actions = writer.upgrade(name, yes=True, channel=params["channel"], kubernetes_version=params["kubernetes_version"])
    result["upgrade"] = actions
    if not actions:
        return current
    result["changed"] = True
    return writer.get_cluster(name)


def converge(module, writer, name, current, params, result, base, preview=None):
    """Write the differing convergeable fields of an existing cluster, through ``writer`` (the real store's ClusterOps,
    or in check mode the scratch store's).

    ``base`` is the cluster the options apply to (``current`` after an upgrade step); the reported changes
    and diff are from ``current``, the stored spec before this run. ``preview`` makes the ClusterOps of a scratch copy
    of the specs (known_fields_only).
    """
    if result.get("create_only_differences"):
        module.warn(
            "%s only shape a new cluster; %s exists with other values, so these were not applied: %s "
            "(use spec, or kops_instancegroup for instance groups)"
            % (", ".join(d.split(" ")[0] for d in result["create_only_differences"]), name, "; ".join(result["create_only_differences"]))
        )
    desired = kops_spec.desired_object(base, kops_spec.cluster_overrides(params, base), params["spec"])
    desired = known_fields_only(module, preview, name, desired, current, params, result)
    before = kops_spec.strip_server_fields(current)
    result["changes"] = kops_spec.diff_paths(before, desired)
    try:
        if any(c["path"].startswith("spec.cloudLabels") for c in result["changes"]):
            # the merged labels, whether given as cloud_labels or through spec (kops cluster.go:122-153)
            ig_labels.cloud_labels(desired["spec"].get("cloudLabels"), "cloud_labels")
        if params["spec"]:  # the stored cluster's region decides the partition of the ARNs given
            kops_rules.arn_partitions(params["spec"], region_of_spec(desired["spec"]), "spec")
    except kops_rules.RuleError as exc:
        module.fail_json(msg=str(exc), **result)
    result["diff"] = {"before": {"spec": before.get("spec")}, "after": {"spec": desired.get("spec")}}
    result["spec"] = desired.get("spec")
    if result["changes"]:
        result["changed"] = True
        if kops_spec.diff_paths(kops_spec.strip_server_fields(base), desired):
            writer.intend(result["changes"])  # on a scratch store it only records them
            writer.replace(desired)
    return desired


def known_fields_only(module, preview, name, desired, current, params, result):
    """``desired`` without the fields of the ``spec`` fragment that kops does not keep, found by storing it in a scratch
    copy of the specs (``preview()``, a context manager giving its ClusterOps) and reading it back: kops decodes
    leniently and drops a field its API does not know without a word (cmd/kops/replace.go), so a misspelled key would
    otherwise be written as an empty parent (``kubeAPIServer: {}``) that changes the spec on every run. Fails, nothing
    written, when every field the fragment sets is dropped; names the dropped ones (``dropped_fields``, a warning)
    when only some are."""
    if not params["spec"] or preview is None or not kops_spec.diff_paths(kops_spec.strip_server_fields(current), desired):
        return desired
    with preview() as scratch:
        scratch.replace(desired)
        stored = scratch.get_cluster(name)
    dropped = kops_spec.dropped_paths(desired, stored)
    requested, gone = kops_spec.requested_dropped(params["spec"], dropped)
    if requested and len(gone) == len(requested):
        module.fail_json(
            msg="spec: kops does not know %s (fields the kops.k8s.io/v1alpha2 API does not know are dropped without a word); "
            "nothing was written: check the spelling" % ", ".join(gone),
            dropped_fields=gone,
            **result,
        )
    if gone:
        result["dropped_fields"] = gone
        module.warn(
            "kops did not keep %s: fields its API (kops.k8s.io/v1alpha2) does not know are dropped without a word; check their spelling" % ", ".join(gone)
        )
    return kops_spec.without_dropped(desired, dropped, current) if dropped else desired


def apply(module, ops, name, params, result, writer):
    """Plan, and apply when the plan is not empty (terraform: write files). In check mode the plan is the dry run of
    the scratch store when this run changed the spec there (``writer``), else of the stored spec."""
    if params["target"] == "terraform":
        if not module.check_mode:
            result["terraform"] = ops.write_terraform(name, params["out"])
            result["changed"] = result["changed"] or result["terraform"]["changed"]
        return
    preview = None
    if module.check_mode and writer is not ops and writer.spec_written:
        preview = functools.partial(writer.plan, name)
    plan, applied = ops.plan_and_apply(name, module.check_mode, plan=result.get("plan"), preview=preview, plan_before_apply=params["plan_before_apply"])
    update_plan.report_plan(result, plan, applied)


def report_stored(module, result, desired, stored):
    """The result's spec, cluster facts and diff from the Cluster kops stored (``stored``: read back from the real
    store, or in check mode from the scratch store), and a warning naming the fields of ``desired`` that kops did not
    keep (kops decodes leniently: a field unknown to its API is dropped without a word, cmd/kops/replace.go)."""
    result["spec"] = stored.get("spec")
    result["cluster"] = cluster_facts(stored)
    diff = result.get("diff") or []
    for entry in diff if isinstance(diff, list) else [diff]:  # a list once the cloud plan joined it (update_plan.add_plan_diff)
        if "after" in entry:
            entry["after"] = {"spec": stored.get("spec")}
    if desired:
        kops_spec.report_dropped_fields(result, desired, stored, module.warn)


@contextlib.contextmanager
def preview_ops(ops, writer, s3, name):
    """The ClusterOps of a scratch copy of the cluster's specs: check mode's own (``writer``), else a new one removed
    at the end (kops_preview.ScratchStore)."""
    if writer is not ops:
        yield writer
        return
    with ScratchStore(ops, s3, name) as scratch:
        yield scratch.ops


def stored_ssh_keys(ops, name, cluster, s3):
    """The cluster's stored SSH public keys as ``kops get sshpublickeys -o json`` items (``{'publicKey'}``), read from
    the state store with the S3 client ``s3`` (_state_store.reader.read_ssh_public_keys: no kops process for a
    comparison), or from kops when there is no client, the keys are not on S3 or S3 refuses the read."""
    try:
        keys = reader.read_ssh_public_keys(s3, cluster) if s3 is not None else None
    except StoreError:  # kops reads them then, and names what fails in its own words
        keys = None
    return ops.get_ssh_keys(name) if keys is None else [{"publicKey": key} for key in keys]


def ensure_present(module, ops, name, params, s3=None):
    result = dict(changed=False, name=name, changes=[], state_store=ops.state_store, kops_invocations=ops.runner.calls, requested=requested_options(params))
    given = [o for o in CREATE_ONLY if params.get(o) not in (None, [], "")]
    if given:  # compared with the stored cluster and its groups (one kops call either way)
        current, groups = ops.get_all(name)
    else:
        current, groups = ops.get_cluster(name), {}
    if current is not None and given:
        keys = stored_ssh_keys(ops, name, current, s3) if params["ssh_public_key"] else None
        result["create_only_differences"] = create_only_differences(params, stored_create_options(current, groups, keys))
    scratch = ScratchStore(ops, s3, name) if module.check_mode and current is not None else None
    try:
        desired = None
        writer = scratch.ops if scratch else ops
        if current is None:
            create(module, ops, name, params, result)
        else:
            check_version_rule(module, current, params, result)
            base = upgrade(module, writer, name, current, params, result)
            desired = converge(module, writer, name, current, params, result, base, preview=lambda: preview_ops(ops, writer, s3, name))
        if params["apply"] and current is None and module.check_mode:
            result["plan_note"] = "a new cluster's cloud plan needs its spec in the state store; kops computes it on creation"
        elif params["apply"]:
            apply(module, ops, name, params, result, writer)
        if current is None and not module.check_mode:  # created: the cluster and its groups in one kops call
            stored, groups = ops.get_all(name)
            result["instance_groups"] = [ops.ig_summary(g, ((stored or {}).get("spec") or {}).get("subnets")) for g in groups.values()]
            report_stored(module, result, None, stored)
        elif current is not None:
            stored = writer.get_cluster(name) if writer.spec_written else current
            report_stored(module, result, desired, stored)
    finally:
        if scratch:
            scratch.close()
    if params["export_kubeconfig"]:
        result["kubeconfig"] = ops.export_kubeconfig(
            name, params["kubeconfig"], params["admin"], module.check_mode, exists=current is not None or not module.check_mode
        )
        result["changed"] = result["changed"] or result["kubeconfig"]["changed"]
    if params["validate"] and not module.check_mode:
        result["validation"] = ops.validate(name, params["validation_timeout"], params["control_plane_zones"], params["zones"], params["node_count"])
        if not result["validation"]["ok"]:
            module.fail_json(msg="kops validate cluster %s did not pass: %s" % (name, "; ".join(result["validation"]["problems"])), **result)
    result.setdefault("cluster", cluster_facts({"spec": result.get("spec") or {}}))
    return result


def ensure_absent(module, ops, name, params):
    result = dict(changed=False, name=name, changes=[], cluster={}, state_store=ops.state_store, kops_invocations=ops.runner.calls)
    current = ops.get_cluster(name)
    if current is None:
        result["msg"] = "cluster %s does not exist in %s; nothing to delete" % (name, ops.state_store)
        return result
    label = params["protection_label"]
    value = (kops_spec.get_path(current, ("spec", "cloudLabels")) or {}).get(label)
    if value is not None and str(value).lower() != "false" and not params["force"]:
        module.fail_json(
            msg="cluster %s is protected by its cloud label %s=%s; nothing was deleted (remove the label, or set force: true)" % (name, label, value), **result
        )
    result["changed"] = True
    result["diff"] = {"before": {"spec": kops_spec.strip_server_fields(current).get("spec")}, "after": {}}
    report = ops.delete(name, yes=not module.check_mode)
    result["deleted_resources"] = report["resources"]
    if module.check_mode:
        return result
    zone = kops_spec.get_path(current, ("spec", "dnsZone"))
    result["dns_records_left"] = ops.records_left(name, zone) if zone and not kops_rules.is_gossip(name) else []
    if result["dns_records_left"]:
        module.fail_json(
            msg="cluster %s was deleted but records remain under its name in %s: %s"
            % (name, zone, ", ".join("%s %s" % (r["name"], r["type"]) for r in result["dns_records_left"])),
            **result,
        )
    return result
