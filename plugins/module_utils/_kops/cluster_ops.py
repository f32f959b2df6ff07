# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kops command sequences behind kops_cluster, one method per kops command, each returning data.

:class:`ClusterOps` wraps a :class:`~kops_runner.KopsRunner`; every method raises
:class:`~kops_runner.KopsError` when kops fails (except a missing cluster, which is ``None``).
"""

import hashlib
import os
import shutil
import tempfile

try:
    import yaml
except ImportError:  # reported by every kops module through missing_required_lib (kops_common.state_store_of)
    yaml = None

from ansible_collections.kopsible.kops.plugins.module_utils._kops import argv as kops_argv
from ansible_collections.kopsible.kops.plugins.module_utils._kops import dns_zones, update_plan
from ansible_collections.kopsible.kops.plugins.module_utils._kops import kubeconfig as kops_kubeconfig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import output as kops_output
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import instance_group_zones
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rolling import rolling_update_args
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import get_path, normalize_role
from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_names import is_subdomain
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import manifest_key


class ClusterOps(object):
    """kops commands for one state store. ``route53`` is a callable returning a boto3 Route53 client
    (made lazily: only deletion checks need it). ``versions`` is a callable ``(keys) -> {url: version id}``
    (_state_store.lock.object_versions); when given, :meth:`replace` first records the version of the object it
    overwrites in ``previous_versions``. ``before_write`` is called (no arguments) before every command that
    writes the state store or the cloud (StoreGuard.take_lock: the cluster's lock). ``autoscaling`` is a
    callable returning a boto3 Auto Scaling client: with it, :meth:`plan` reads back the group fields kops
    lists in every plan without reading them (update_plan.settle_unread_fields). ``on_intend`` is called with the
    spec changes a step is about to write (:meth:`intend`). ``version_check`` (no arguments) is the part of
    ``before_write`` that writes nothing (the kops version of the last apply, _kops.run.KopsRun)."""

    def __init__(
        self, runner, state_store, route53=None, versions=None, before_write=None, autoscaling=None, update_options=None, on_intend=None, version_check=None
    ):
        self.runner = runner
        # what every kops update cluster of this run covers: instance_group_roles, prune (update_cluster_args), and
        # reconcile: apply with kops reconcile cluster --yes instead (reconcile_cluster_args)
        self.update_options = dict(update_options or {})
        self.reconcile = self.update_options.pop("reconcile", False)
        self.allow_kops_downgrade = self.update_options.get("allow_kops_downgrade", False)
        self.state_store = state_store
        self._route53 = route53
        self._autoscaling = autoscaling
        self._versions = versions
        self._before_write = before_write
        self.previous_versions = {}
        self.spec_written = False  # a spec change this run wrote and the cloud does not have yet
        self.planned = None  # the spec changes of this attempt (intend), kept by _kops.run.KopsRun for a re-plan
        self._on_intend = on_intend
        # the kops version check alone (no lock): what a scratch copy's writes run first (_kops.preview.ScratchStore)
        self.version_check = version_check

    def intend(self, changes):
        """Record the spec changes (kops_spec.diff_paths list) this run is about to write, before writing them, after
        the ``on_intend`` check (_kops.run.KopsRun: in the attempt after a re-plan it raises when another run changed
        one of those fields meanwhile)."""
        if self._on_intend is not None:
            self._on_intend(changes)
        self.planned = changes

    def _writing(self, spec=False):
        if self._before_write:
            self._before_write()
        self.spec_written = self.spec_written or spec

    def get_cluster(self, name):
        """The stored Cluster (dict) or None when kops says it does not exist. One kops call."""
        try:
            out = self.runner.run(kops_argv.command(["get", "cluster", name], output="json")).stdout
        except KopsError as exc:
            if exc.not_found:
                return None
            raise
        return kops_output.parse_get_json(out)[0]

    def get_all(self, name):
        """``kops get all --name NAME -o json`` (``kops get --name`` is its deprecated alias, cmd/kops/get.go:78):
        ``(cluster dict or None, {ig name: ig dict})``. One kops call."""
        try:
            out = self.runner.run(kops_argv.command(["get", "all"], name=name, output="json")).stdout
        except KopsError as exc:
            if exc.not_found:
                return None, {}
            raise
        docs = kops_output.parse_get_json(out) if out.strip() else []
        cluster = next((d for d in docs if d.get("kind") == "Cluster"), None)
        groups = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "InstanceGroup"}
        return cluster, groups

    def create_manifest(self, manifest):
        """``kops create -f -`` with ``manifest`` (dict)."""
        self._writing(spec=True)
        self.runner.run(kops_argv.command(["create"], filename="-"), stdin=yaml.safe_dump(manifest, default_flow_style=False))

    def delete_instance_group(self, cluster, name):
        """``kops delete instancegroup NAME --name CLUSTER --yes`` (deletes its cloud resources at once, so
        it leaves nothing pending for ``spec_written``)."""
        self._writing()
        self.runner.run(kops_argv.command(["delete", "instancegroup", name], name=cluster, yes=True))

    def get_ssh_keys(self, name):
        """``kops get sshpublickeys NAME -o json``: list of ``{'id', 'publicKey'}`` (cmd/kops/get_sshpublickeys.go)."""
        out = self.runner.run(kops_argv.command(["get", "sshpublickeys", name], output="json")).stdout
        return kops_output.parse_get_json(out) if out.strip() else []

    def get_instance_groups(self, name):
        """The cluster's InstanceGroups (list of dicts). One kops call."""
        out = self.runner.run(kops_argv.command(["get", "instancegroups"], name=name, output="json")).stdout
        return kops_output.parse_get_json(out) if out.strip() else []

    @staticmethod
    def ig_summary(doc, subnets):
        """Summary of an InstanceGroup manifest: ``{'name', 'role' (ControlPlane spelling), 'min_size',
        'max_size', 'machine_type', 'zones'}``; ``zones`` are the zones of the group's subnets, read from
        ``subnets`` (the cluster spec's list) by ``_kops.facts.instance_group_zones``."""
        spec = doc.get("spec") or {}
        return {
            "name": get_path(doc, ("metadata", "name")),
            "role": normalize_role(spec.get("role")),
            "min_size": spec.get("minSize"),
            "max_size": spec.get("maxSize"),
            "machine_type": spec.get("machineType"),
            "zones": instance_group_zones(spec, subnets),
        }

    def create_dry_run(self, args):
        """``kops create cluster ... --dry-run -o yaml``: the manifests kops would create (list of dicts)."""
        return kops_output.parse_yaml_documents(self.runner.run(args + kops_argv.command([], dry_run=True, output="yaml")).stdout)

    def create(self, args):
        """``kops create cluster ...`` (writes the spec; kops then previews the cloud plan). Returns that plan."""
        self._writing(spec=True)
        return update_plan.parse_update_plan(self.runner.run(args).stdout)

    def upgrade(self, name, yes, channel=None, kubernetes_version=None):
        """``kops upgrade cluster --name NAME [--channel C] [--kubernetes-version V]``: the actions the channel
        recommends; with ``yes`` and actions to take, the same again with ``--yes`` (applied to the spec and
        instance groups). One kops call when there is nothing to do, two otherwise.

        :returns: list of actions, see :func:`kops_output.parse_upgrade` (empty: no upgrade required).
        """
        args = kops_argv.command(["upgrade", "cluster"], name=name, channel=channel or None, kubernetes_version=kubernetes_version or None)
        actions = kops_output.parse_upgrade(self.runner.run(args).stdout)
        if actions and yes:
            self._writing(spec=True)
            actions = kops_output.parse_upgrade(self.runner.run(args + kops_argv.command([], yes=True)).stdout)
        return actions

    def replace(self, manifest):
        """``kops replace -f -`` with ``manifest`` (dict), after recording the version it replaces."""
        self._writing(spec=True)
        if self._versions:
            self.previous_versions.update(self._versions([self.store_key(manifest)]))
        self.runner.run(kops_argv.command(["replace"], filename="-"), stdin=yaml.safe_dump(manifest, default_flow_style=False))

    def store_key(self, manifest):
        """The state-store key kops keeps ``manifest`` under (_state_store.layout.manifest_key: ``<cluster>/config``,
        ``<cluster>/instancegroup/<name>``)."""
        return manifest_key(self.state_store, manifest)

    def plan(self, name):
        """``kops update cluster NAME`` (dry run): the parsed plan, its never-read-back group fields settled
        against AWS when an ``autoscaling`` client factory was given."""
        plan = self.settle(update_plan.parse_update_plan(self.runner.run(kops_argv.update_cluster_args(name, **self.update_options)).stdout))
        if self.update_options.get("prune") and plan["prune"]:
            plan["changed"] = True  # what kops deletes only with --prune is this run's to do (upup/pkg/fi/default_methods.go)
        return plan

    def settle(self, plan):
        """:func:`update_plan.settle_unread_fields` with DescribeAutoScalingGroups (one call per group concerned)."""
        if self._autoscaling is None:
            return plan
        client = []

        def describe_group(group_name):
            if not client:
                client.append(self._autoscaling())
            groups = client[0].describe_auto_scaling_groups(AutoScalingGroupNames=[group_name]).get("AutoScalingGroups", [])
            return groups[0] if groups else None

        return update_plan.settle_unread_fields(plan, describe_group)

    def plan_and_apply(self, name, check_mode, plan=None, preview=None, plan_before_apply=True):
        """Plan the cluster's cloud changes and apply them (``kops update cluster --yes``) when there are any.

        :param plan: a plan already in hand (``kops create cluster``'s own preview); no dry run then.
        :param preview: in check mode, a callable returning the plan of the specs check mode wrote only to its scratch
            store (the scratch store's :meth:`plan`, already settled); without it check mode plans the stored spec.
        :param plan_before_apply: False skips the dry run when this run wrote a spec change the cloud does
            not have yet (``spec_written``: create, replace, upgrade): the write already makes the run
            changed, and ``--yes`` runs at once. The price: the plan is not reported, and ``--yes``
            applies whatever else is pending too (drift, another run's spec) unseen. A run that wrote
            nothing always plans: the plan is what says whether anything is pending.
        :returns: ``(plan or None, applied)``; the plan as :func:`update_plan.parse_update_plan` returns it,
            None when it was skipped.
        :raises KopsError: kops failed.
        """
        if check_mode:
            return (plan or (preview() if preview else self.plan(name))), False
        if plan is None and self.spec_written and not plan_before_apply:
            self.apply(name)
            return None, True
        plan = plan or self.plan(name)
        if plan["changed"] or (self.reconcile and self.needs_roll(name)):
            self.apply(name)
            return plan, True
        return plan, False

    def needs_roll(self, name):
        """Whether an instance of the cluster needs a rolling update (``kops rolling-update cluster`` without ``--yes``,
        cloud-only so that no Kubernetes API is needed to list): what a ``kops reconcile cluster`` stopped part-way left."""
        listing = self.runner.run(rolling_update_args(name, {"cloudonly": True}, yes=False)).stdout
        return kops_output.parse_rolling_update(listing)["required"]

    def apply(self, name):
        """``kops update cluster NAME --yes``, without touching kubeconfig (export is separate); with ``reconcile``,
        ``kops reconcile cluster NAME --yes`` (which rolls too, and reads the kubeconfig kops is given)."""
        self._writing()
        if self.reconcile:
            return self.runner.run(kops_argv.reconcile_cluster_args(name, allow_kops_downgrade=self.allow_kops_downgrade), merged=True).stdout
        return self.runner.run(kops_argv.update_cluster_args(name, yes=True, **self.update_options)).stdout

    def write_terraform(self, name, out):
        """``kops update cluster --target terraform --out DIR --yes``; ``changed`` compares the files' hashes."""
        before = _tree_hash(out)
        self._writing()
        self.runner.run(kops_argv.update_cluster_args(name, yes=True, target="terraform", out=out, allow_kops_downgrade=self.allow_kops_downgrade))
        after = _tree_hash(out)
        return {"out": out, "changed": before != after, "files": sorted(_tree_files(out))}

    def export_kubeconfig(self, name, path, admin, check_mode, exists=True):
        """``kops export kubecfg NAME --admin=DURATION`` into ``path`` when the kubeconfig there has no admin credential
        for the cluster that still serves (kops_kubeconfig.renewal_reason: server, CA, user, expiry compared with what
        kops writes now, read from a first export into a private temporary file that is removed at once).

        Returns ``{'path', 'changed', 'renewed', 'reason', 'user', 'admin_expires'}`` (never the content):
        ``renewed`` whether the credential was (in check mode: would be) exported again, ``reason`` why, or why not.
        ``admin_expires`` is the NotAfter of the credential in the file afterwards (ISO 8601, UTC). kops calls: one
        when the credential is kept or in check mode, two when it is renewed. ``exists`` False (check mode, a cluster
        this run would create) makes no kops call."""
        target = path or (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0] or os.path.expanduser("~/.kube/config")
        if not exists:
            return {
                "path": target,
                "changed": True,
                "renewed": True,
                "reason": "a new cluster",
                "note": "not written in check mode",
                "user": None,
                "admin_expires": None,
            }
        have = kops_kubeconfig.cluster_entry(kops_kubeconfig.read_kubeconfig(target), name)
        workdir = tempfile.mkdtemp(prefix="kopsible-kubeconfig-")
        try:
            fresh_path = os.path.join(workdir, "kubeconfig")
            self.runner.run(kops_argv.command(["export", "kubecfg", name], admin=admin, kubeconfig=fresh_path))
            fresh = kops_kubeconfig.cluster_entry(kops_kubeconfig.read_kubeconfig(fresh_path), name)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        reason = kops_kubeconfig.renewal_reason(have, fresh, kops_rules.admin_lifetime(admin))
        result = {"path": target, "changed": reason is not None, "renewed": reason is not None}
        if reason is None:
            result.update(
                reason="the credential of user %s is valid until %s and server and CA are kops' own" % (have["user"], kops_kubeconfig.iso(have["expires"])),
                user=have["user"],
                admin_expires=kops_kubeconfig.iso(have["expires"]),
            )
            return result
        result["reason"] = reason
        if check_mode:
            result.update(note="not written in check mode", user=have["user"], admin_expires=kops_kubeconfig.iso(have["expires"]))
            return result
        self.runner.run(kops_argv.command(["export", "kubecfg", name], admin=admin, kubeconfig=path or None))
        result.update(kops_kubeconfig.kubeconfig_credential(target, name))
        return result

    def validate(self, name, wait, control_plane_zones, zones, node_count=None):
        """``kops validate cluster --wait DURATION -o json``; returns the parsed result plus ``problems`` (list of str)
        (the placement rule of :func:`kops_output.check_placement` with the zones and ``node_count`` asked for)."""
        result = self.runner.run(kops_argv.command(["validate", "cluster"], name=name, wait=wait, output="json"), check=False)
        try:
            parsed = kops_output.parse_validate(result.stdout)
        except ValueError:
            message = kops_output.error_message(result.stderr) or "no output"
            return {"ok": False, "failures": [], "nodes": [], "attempts": 0, "problems": ["the Kubernetes API of %s did not answer: %s" % (name, message)]}
        parsed["placement"] = kops_output.check_placement(parsed["nodes"], control_plane_zones or [], zones or [], node_count)
        parsed["problems"] = [_problem(f) for f in parsed["failures"]]
        parsed["problems"] += parsed["placement"]["problems"]
        parsed["ok"] = parsed["ok"] and not parsed["placement"]["problems"] and result.rc == 0
        return parsed

    def delete(self, name, yes):
        """``kops delete cluster NAME [--yes]``; the parsed report (resources deleted or to delete)."""
        args = kops_argv.command(["delete", "cluster"], name=name, yes=yes)
        if yes:
            self._writing()
        return kops_output.parse_delete_report(self.runner.run(args).stdout)

    def closer_zone_problem(self, name, dns_zone, private):
        """Why ``dns_zone`` is not the zone to write cluster ``name``'s records in (str), or None: a hosted zone
        of the same kind closer to the name exists and is in use (dns_zones.closer_zones). A public closer zone is
        in use when a zone between it and ``dns_zone`` (``dns_zone`` included) delegates it with NS records; a
        private one always is (Route 53 Resolver answers from the most specific private zone). Route53 calls:
        one list, and one NS look-up per public candidate and parent."""
        from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53

        client = self._route53()
        zones = route53.list_zones(client)
        for zone in dns_zones.closer_zones(name, dns_zone, zones, private):
            if private:
                return dns_zones.closer_zone_problem(name, dns_zone, zone)
            parents = [
                z
                for z in zones
                if not z["private"]
                and z["name"] != zone["name"]
                and is_subdomain(zone["name"], z["name"])
                and (z["name"] == dns_zone or is_subdomain(z["name"], dns_zone))
            ]
            for parent in sorted(parents, key=lambda z: -len(z["name"])):
                if route53.get_record(client, parent["id"], zone["name"], "NS"):
                    return dns_zones.closer_zone_problem(name, dns_zone, zone, parent["name"])
        return None

    def records_left(self, name, zone_name):
        """Records in hosted zone ``zone_name`` whose name is ``name`` or under it (list of summaries)."""
        from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53

        client = self._route53()
        zones = [z for z in route53.list_zones(client) if z["name"] == zone_name.rstrip(".").lower()]
        left = []
        for zone in zones:
            for record in route53.list_records(client, zone["id"]):
                summary = route53.record_summary(record)
                if summary["name"] == name or summary["name"].endswith("." + name):
                    left.append(summary)
        return left


def _problem(failure):
    """One line per kops validation failure: type, name, the InstanceGroup it concerns, kops' message."""
    group = failure.get("instance_group")
    of_group = " of InstanceGroup %s" % group if group and group != failure.get("name") else ""
    return "%s %s%s: %s" % (failure.get("type"), failure.get("name"), of_group, failure.get("message"))


def _tree_files(root):
    """Paths (relative to ``root``) of every file under ``root`` (list of str; [] when it does not exist)."""
    return [os.path.relpath(os.path.join(base, name), root) for base, dummy, files in os.walk(root or "") for name in files]


def _tree_hash(root):
    """SHA-256 (hex) over the relative paths and contents of the files under ``root``; an unreadable file counts as
    empty."""
    digest = hashlib.sha256()
    for rel in sorted(_tree_files(root)):
        digest.update(rel.encode())
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).hexdigest().encode())
        except (IOError, OSError):
            pass
    return digest.hexdigest()
