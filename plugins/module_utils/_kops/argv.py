# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops argv from options, in one table: each option's kops flag and how its value is written.

Every kops command the collection runs is built by :func:`command` (``kops create cluster``, ``update cluster``,
``rolling-update cluster``, ``validate cluster``, ``export kubecfg``, ``delete``, ``get``, ``upgrade cluster``...).
Flag names are kops v1.36.2's (cmd/kops/*.go, the ``cmd.Flags()`` of each command; the same option name means
the same flag in every command that has it). Value formats are those of the pflag types kops declares:

- :data:`VALUE`: ``--flag VALUE`` (``str(value)``), skipped when None or ``''`` (``0`` is passed);
- :data:`JOINED`: a ``StringSlice`` flag, ``--flag a,b`` (a str is one item), skipped when empty;
- :data:`SWITCH`: a bool flag given as ``--flag`` when the value is true, left out otherwise (kops' default);
- :data:`BOOL`: a bool flag written ``--flag=true`` / ``--flag=false`` when the value is not None (a default of
  true can only be turned off that way, pflag's ``NoOptDefVal``);
- :data:`DURATION`: a ``time.Duration`` flag, ``--flag 5m`` (Go duration text), skipped when empty or None;
- :data:`INLINE`: ``--flag=VALUE`` in one word (a flag whose value may be empty or start with ``-``, e.g.
  ``--admin=18h``), skipped when None;
- :data:`REPEATED`: one ``--flag ITEM`` per item of a list (kops' ``StringArray``/``--set`` flags), in order.

Values are passed as they are: quoting kops needs inside a value (``--set``, ``--cloud-labels``) is the caller's
(kops_spec), the rules of a value are in kops_rules.
"""

VALUE, JOINED, SWITCH, BOOL, DURATION, INLINE, REPEATED = "value", "joined", "switch", "bool", "duration", "inline", "repeated"

# option -> (kops flag, format). Grouped by the command that has them; shared names mean the same flag.
FLAGS = {
    # shared by most commands
    "name": ("--name", VALUE),
    "yes": ("--yes", SWITCH),
    "output": ("-o", VALUE),
    "dry_run": ("--dry-run", SWITCH),
    "channel": ("--channel", VALUE),
    "kubernetes_version": ("--kubernetes-version", VALUE),
    "filename": ("-f", VALUE),  # kops create/replace -f (cmd/kops/create.go, replace.go); "-" is stdin
    # kops create cluster (cmd/kops/create_cluster.go)
    "cloud": ("--cloud", VALUE),
    "zones": ("--zones", JOINED),
    "control_plane_zones": ("--control-plane-zones", JOINED),
    "admin_access": ("--admin-access", JOINED),
    "ssh_access": ("--ssh-access", JOINED),
    "subnets": ("--subnets", JOINED),
    "utility_subnets": ("--utility-subnets", JOINED),
    "node_security_groups": ("--node-security-groups", JOINED),
    "control_plane_security_groups": ("--control-plane-security-groups", JOINED),
    "kubernetes_feature_gates": ("--kubernetes-feature-gates", JOINED),
    "network_cidrs": ("--network-cidr", JOINED),  # the first is the network CIDR, the others additional (new_cluster.go:840-858)
    "control_plane_count": ("--control-plane-count", VALUE),
    "node_count": ("--node-count", VALUE),
    "node_size": ("--node-size", VALUE),
    "control_plane_size": ("--control-plane-size", VALUE),
    "networking": ("--networking", VALUE),
    "topology": ("--topology", VALUE),
    "dns": ("--dns", VALUE),
    "dns_zone": ("--dns-zone", VALUE),
    "image": ("--image", VALUE),
    "control_plane_image": ("--control-plane-image", VALUE),
    "node_image": ("--node-image", VALUE),
    "vpc": ("--vpc", VALUE),
    "api_loadbalancer_type": ("--api-loadbalancer-type", VALUE),
    "discovery_store": ("--discovery-store", VALUE),
    "instance_manager": ("--instance-manager", VALUE),
    "api_server_count": ("--api-server-count", VALUE),
    "bastion": ("--bastion", SWITCH),
    "ipv6": ("--ipv6", SWITCH),
    "encrypt_etcd_storage": ("--encrypt-etcd-storage", BOOL),  # encrypted on AWS unless the flag says otherwise
    "set": ("--set", REPEATED),
    "cloud_labels": ("--cloud-labels", VALUE),
    "ssh_public_key": ("--ssh-public-key", VALUE),  # a file path
    # kops update cluster (cmd/kops/update_cluster.go)
    "target": ("--target", VALUE),
    "out": ("--out", VALUE),
    "create_kube_config": ("--create-kube-config", BOOL),
    "prune": ("--prune", SWITCH),  # delete old revisions kept during an upgrade (update_cluster.go:193)
    "allow_kops_downgrade": ("--allow-kops-downgrade", SWITCH),  # apply although a newer kops applied last (update_cluster.go:177)
    # kops rolling-update cluster (cmd/kops/rolling-update_cluster.go)
    "instance_groups": ("--instance-group", JOINED),
    "instance_group_roles": ("--instance-group-roles", JOINED),
    "cloudonly": ("--cloudonly", SWITCH),
    "force": ("--force", SWITCH),
    "validation_timeout": ("--validation-timeout", DURATION),
    "drain_timeout": ("--drain-timeout", DURATION),
    "control_plane_interval": ("--control-plane-interval", DURATION),
    "node_interval": ("--node-interval", DURATION),
    "bastion_interval": ("--bastion-interval", DURATION),
    "post_drain_delay": ("--post-drain-delay", DURATION),
    "validate_count": ("--validate-count", VALUE),
    "fail_on_validate_error": ("--fail-on-validate-error", BOOL),
    "fail_on_drain_error": ("--fail-on-drain-error", BOOL),
    # kops validate cluster (cmd/kops/validate_cluster.go)
    "wait": ("--wait", DURATION),
    # kops export kubecfg (cmd/kops/export_kubeconfig.go)
    "admin": ("--admin", INLINE),
    "kubeconfig": ("--kubeconfig", VALUE),
}


def flag_args(option, value):
    """The argv words (list of str) of one option's ``value`` by its :data:`FLAGS` entry; ``[]`` when the value
    leaves the flag out. :raises KeyError: an option the table does not have (a programming error)."""
    flag, kind = FLAGS[option]
    if value is None:
        return []
    if kind == VALUE:
        return [] if value == "" else [flag, str(value)]
    if kind == JOINED:
        items = value if isinstance(value, (list, tuple)) else [value]
        return [flag, ",".join(str(i) for i in items)] if value else []
    if kind == SWITCH:
        return [flag] if value else []
    if kind == BOOL:
        return ["%s=%s" % (flag, str(bool(value)).lower())]
    if kind == DURATION:
        return [flag, str(value)] if value else []
    if kind == INLINE:
        return ["%s=%s" % (flag, value)]
    return [word for item in value for word in (flag, str(item))]  # REPEATED


def command(words, ordered=(), **options):
    """argv (list of str) after ``kops``: ``words`` (the command and its positional arguments, e.g.
    ``['get', 'cluster', NAME]``), then each option's flag in the order given: first ``ordered`` (an iterable of
    ``(option, value)``, for options chosen at run time), then the keyword ``options``.

    ``command(['update', 'cluster'], name='c', yes=True, create_kube_config=False)`` is
    ``['update', 'cluster', '--name', 'c', '--yes', '--create-kube-config=false']``.
    """
    argv = list(words)
    for option, value in list(ordered) + list(options.items()):
        argv += flag_args(option, value)
    return argv


def update_cluster_args(name, yes=False, target=None, out=None, instance_group_roles=None, prune=False, allow_kops_downgrade=False):
    """argv of ``kops update cluster --name NAME``: a dry run, or with ``yes`` the apply, which never touches the
    kubeconfig (``--create-kube-config=false``; export is separate); ``target``/``out`` for ``--target terraform``.

    :param instance_group_roles: only the InstanceGroups of these roles (kops names, kops_rolling.rolling_role), as
        ``--instance-group-roles`` (cmd/kops/update_cluster.go:180, matchInstanceGroupRoles): the first step of kOps'
        1.31+ upgrade order updates ``control-plane,apiserver`` alone (cmd/kops/reconcile_cluster.go).
    :param prune: ``--prune``: also delete the old revisions kops kept during an upgrade (DeletionProcessingMode
        DeleteIncludingDeferred, update_cluster.go:323), the last step of that order.
    :param allow_kops_downgrade: ``--allow-kops-downgrade`` (update_cluster.go:177): apply although the cluster was last
        applied by a newer kops (_kops.binary_version).
    """
    return command(
        ["update", "cluster"],
        name=name,
        target=target,
        out=out,
        instance_group_roles=list(instance_group_roles or []),
        prune=prune,
        allow_kops_downgrade=allow_kops_downgrade,
        yes=yes,
        create_kube_config=False if yes else None,
    )


def reconcile_cluster_args(name, allow_kops_downgrade=False):
    """argv of ``kops reconcile cluster --name NAME --yes`` (cmd/kops/reconcile_cluster.go, kops >= 1.31): the control
    plane updated, validated and rolled, then every group updated and rolled, then pruned, in one kops call; with
    ``allow_kops_downgrade`` its ``--allow-kops-downgrade`` (reconcile_cluster.go:93)."""
    return command(["reconcile", "cluster"], name=name, allow_kops_downgrade=allow_kops_downgrade, yes=True)
