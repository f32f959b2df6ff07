# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argv of ``kops create cluster`` from kops_cluster's options (their flags: kops_argv.FLAGS), what kops makes
of them afterwards, and the cloud labels flag."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import argv as kops_argv
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import get_path, strip_server_fields

# kops_cluster options passed to ``kops create cluster``, in argv order (their flags: kops_argv.FLAGS).
CREATE_CLUSTER_OPTIONS = (
    "zones",
    "control_plane_zones",
    "admin_access",
    "ssh_access",
    "subnets",
    "utility_subnets",
    "node_security_groups",
    "control_plane_security_groups",
    "kubernetes_feature_gates",
    "network_cidrs",
    "control_plane_count",
    "node_count",
    "node_size",
    "control_plane_size",
    "kubernetes_version",
    "networking",
    "topology",
    "dns",
    "dns_zone",
    "image",
    "control_plane_image",
    "node_image",
    "vpc",
    "api_loadbalancer_type",
    "channel",
    "discovery_store",
    "instance_manager",
    "api_server_count",
    "bastion",
    "ipv6",
    "encrypt_etcd_storage",
    "set",
    "cloud_labels",
    "ssh_public_key",
)


def create_cluster_args(name, params, ssh_key_path=None):
    """argv (list of str) for ``kops create cluster`` from the kops_cluster options (cmd/kops/create_cluster.go flags,
    written by kops_argv).

    Options left ``None`` are not passed, so kops applies its own defaults. Derived values: ``network_cidr`` and
    ``additional_network_cidrs`` are one ``--network-cidr`` list (new_cluster.go:840-858), each ``set`` is quoted as
    kops reads it (:func:`_set_field`), ``cloud_labels`` is the flag text of :func:`cloud_labels_flag`, and
    ``--ssh-public-key`` is the file ``ssh_key_path``.
    """
    values = dict(params)
    values["network_cidrs"] = ([params["network_cidr"]] if params.get("network_cidr") else []) + list(params.get("additional_network_cidrs") or [])
    values["set"] = [_set_field(value) for value in params.get("set") or []]  # one --set each; kops reads each as a CSV record
    values["cloud_labels"] = cloud_labels_flag(params.get("cloud_labels"))[0]
    values["ssh_public_key"] = ssh_key_path
    return kops_argv.command(
        ["create", "cluster"], [("name", name), ("cloud", params.get("cloud") or "aws")] + [(option, values.get(option)) for option in CREATE_CLUSTER_OPTIONS]
    )


def _csv_field(text):
    """One field as Go's encoding/csv reads it with ``Comma='='``, ``LazyQuotes=false``, ``TrimLeadingSpace=true``:
    quoted (``"`` doubled inside) when it holds ``=`` or ``"`` or starts with white space, else as it is."""
    if "=" in text or '"' in text or text[:1].isspace():
        return '"%s"' % text.replace('"', '""')
    return text


def _set_field(text):
    """A ``--set`` value as kops reads it (cmd/kops/flags_stringslice_lazyquotes.go readAsCSV: one CSV record,
    ``LazyQuotes``): quoted (``"`` doubled) when it holds ``,``, ``"`` or a line break, so that
    ``cluster.spec.nodePortAccess=1.2.3.4/32,10.20.30.0/24`` stays one value."""
    if any(c in text for c in ',"\r\n'):
        return '"%s"' % text.replace('"', '""')
    return text


def after_create(cluster, params):
    """The Cluster kops created, with what ``kops create cluster``'s flags cannot carry (a copy; None when nothing):
    cloud labels holding ``,`` or a line break (:func:`cloud_labels_flag`), and ``egress`` on every subnet kops made
    for a zone (kops' NewClusterOptions.Egress, which has no flag: upup/pkg/fi/cloudup/new_cluster.go:820-858 sets it
    on each zone subnet, not on utility subnets)."""
    dummy, labels = cloud_labels_flag(params.get("cloud_labels"))
    if not labels and not params.get("egress"):
        return None
    cluster = strip_server_fields(cluster)
    spec = cluster.setdefault("spec", {})
    if labels:
        spec["cloudLabels"] = dict(spec.get("cloudLabels") or {}, **labels)
    subnets = spec.get("subnets") or get_path(spec, ("networking", "subnets")) or []
    for subnet in subnets if params.get("egress") else []:
        if subnet.get("type") != "Utility" and not subnet.get("egress"):
            subnet["egress"] = params["egress"]
    return cluster


def cloud_labels_flag(labels):
    """The ``--cloud-labels`` value for ``labels`` (dict; a ``None`` value is a removal, nothing to pass at creation),
    and the labels the flag cannot carry.

    kops parses the flag in cmd/kops/create_cluster.go parseCloudLabels: every ``,`` becomes a record break, then
    each record is read as CSV with ``=`` as the separator (``TrimLeadingSpace``, no lazy quotes). So a key or value
    holding ``=`` or ``"`` (or starting with white space) must be quoted (``dn="cn=John Doe: dc=example dc=com"``, as
    kops' golden case ``private`` writes it), and one holding ``,`` or a line break cannot be written in the flag at
    all ("Nested commas are not supported"): those are returned to be written into the spec right after creation.

    :returns: ``(flag text or "", {key: value} not expressible in the flag)``, keys sorted in the text.
    """
    flag, rest = [], {}
    for key, value in sorted((str(k), str(v)) for k, v in (labels or {}).items() if v is not None):
        if any(c in key + value for c in ",\r\n"):
            rest[key] = value
        else:
            flag.append("%s=%s" % (_csv_field(key), _csv_field(value)))
    return ",".join(flag), rest
