# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of kops_cluster's create options that kops checks when it creates a cluster (egress, security groups, feature
gates, the discovery store, --set, the instance manager, API server count); each raises kops_rules.RuleError naming the
field and cites the kops source it mirrors."""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError, non_negative, one_of

# pkg/apis/kops/cluster.go Egress* constants; pkg/apis/kops/validation/validation.go:726-734 validateSubnet.
EGRESS_TYPES = ("nat", "eipalloc", "i", "tgw")


EGRESS_EXTERNAL = "External"


# upup/pkg/fi/cloudup/new_cluster.go:462-481 (--instance-manager).
INSTANCE_MANAGERS = ("cloudgroups", "karpenter")


# util/pkg/vfs/context.go BuildVfsPath: the store schemes kops knows.
VFS_SCHEMES = ("s3", "gs", "azureblob", "swift", "do", "hos", "linode", "scw", "memfs", "k8s", "file")


_FEATURE_GATE_RE = re.compile(r"^[+-]?[A-Za-z][A-Za-z0-9]*$")


_SG_RE = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")


def egress(value, topology, ipv6=False, field="egress"):
    """The egress of the cluster's zone subnets (kops' NewClusterOptions.Egress, new_cluster.go:820-858): an id
    whose prefix before the first ``-`` is ``nat`` (NAT gateway), ``eipalloc`` (NAT gateway with that Elastic IP),
    ``i`` (NAT instance) or ``tgw`` (transit gateway), or ``External`` (validation.go:726-731). The prefix must be
    followed by ``-``: kops' API validation takes a bare ``nat``, but its network model matches ``nat-``,
    ``eipalloc-``, ``i-``, ``tgw-`` (pkg/model/awsmodel/network.go:441-494) and refuses anything else when
    ``kops create cluster`` builds its preview, after writing the spec ("kops currently only supports re-use of
    either NAT EC2 Instances or NAT Gateways"), so a bare prefix is refused here before anything is written. Anything but
    ``External`` only on private subnets, or public ones with IPv6 (validation.go:732-734 "egress can only be
    specified for private or IPv6-capable public subnets"). Raises RuleError naming ``field``."""
    if value is None:
        return None
    if value != EGRESS_EXTERNAL and not any(value.startswith(prefix + "-") and len(value) > len(prefix) + 1 for prefix in EGRESS_TYPES):
        raise RuleError(
            "%s: %r must be a NAT gateway (nat-...), an Elastic IP for one (eipalloc-...), a NAT instance "
            "(i-...), a transit gateway (tgw-...) or External" % (field, value)
        )
    if value != EGRESS_EXTERNAL and topology != "private" and not ipv6:
        raise RuleError("%s: %r needs topology: private (or ipv6: true); kops allows egress only on private or IPv6-capable public subnets" % (field, value))
    return value


def security_groups(values, field):
    """Ids of existing security groups (``sg-`` and 8 or 17 hexadecimal digits, the EC2 id form; kops passes them
    to the groups' additionalSecurityGroups, cmd/kops/create_cluster.go --node-security-groups /
    --control-plane-security-groups, and EC2 refuses any other id). Raises RuleError naming ``field``."""
    for value in values or []:
        if not isinstance(value, str) or not _SG_RE.fullmatch(value):
            raise RuleError("%s: %r is not a security group id such as sg-0123456789abcdef0" % (field, value))
    if values and len(set(values)) != len(values):
        raise RuleError("%s: a security group is listed more than once: %s" % (field, ", ".join(values)))


def feature_gates(values, field="kubernetes_feature_gates"):
    """Kubernetes feature gates, ``Name`` or ``+Name`` (enabled) or ``-Name`` (disabled) (new_cluster.go:271-300
    reads the sign from the first character; an empty entry would crash it); names are Kubernetes' CamelCase
    identifiers. Raises RuleError naming ``field``."""
    for value in values or []:
        if not isinstance(value, str) or not _FEATURE_GATE_RE.fullmatch(value):
            raise RuleError("%s: %r is not a feature gate such as SELinuxMount, +SELinuxMount or -SELinuxMount" % (field, value))


def discovery_store(value, field="discovery_store"):
    """A store kops can write the OIDC discovery documents to: ``SCHEME://...`` with a scheme kops knows
    (util/pkg/vfs/context.go BuildVfsPath: "unknown / unhandled path type"); on AWS an ``s3://`` bucket readable by
    the public. Raises RuleError naming ``field``."""
    scheme, sep, rest = (value or "").partition("://")
    if not sep or scheme not in VFS_SCHEMES or not rest.strip("/"):
        raise RuleError("%s: %r is not a store such as s3://my-oidc-bucket (schemes %s)" % (field, value, ", ".join(VFS_SCHEMES)))
    return value


def spec_set(values, field="set"):
    """kops' ``--set`` values, ``cluster.spec.PATH=VALUE`` (pkg/commands/set_cluster.go SetClusterFields: split at
    the first ``=``, "unhandled field" without one; the ``cluster.`` prefix is optional). Raises RuleError."""
    for value in values or []:
        key, sep, dummy = (value if isinstance(value, str) else "").partition("=")
        key = key[len("cluster.") :] if key.startswith("cluster.") else key
        if not sep or not re.fullmatch(r"(spec|metadata)(\.[A-Za-z0-9_\[\]-]+)+", key):
            raise RuleError("%s: %r is not PATH=VALUE such as cluster.spec.nodePortAccess=1.2.3.4/32 (a field path of the Cluster under spec)" % (field, value))


def instance_manager(value, discovery, field="instance_manager"):
    """``cloudgroups`` or ``karpenter``; karpenter needs a discovery store (new_cluster.go:462-481 "karpenter requires
    --discovery-store"). Raises RuleError naming ``field``."""
    if value is None:
        return
    one_of(value, INSTANCE_MANAGERS, field)
    if value == "karpenter" and not discovery:
        raise RuleError('%s: karpenter needs discovery_store (kops: "karpenter requires --discovery-store")' % field)


def api_server_count(count, feature_flags, field="api_server_count"):
    """Number of API-server-only nodes (0 or more). kops only offers ``--api-server-count`` with the APIServerNodes
    feature flag (cmd/kops/create_cluster.go:465-467; populate_instancegroup_spec.go "apiserver nodes requires the
    APIServerNodes feature flag"): ``feature_flags`` is the KOPS_FEATURE_FLAGS text kops will see."""
    if count is None:
        return
    non_negative(count, field)
    flags = [f.strip() for f in (feature_flags or "").split(",")]
    if count and "+APIServerNodes" not in flags and "APIServerNodes" not in flags:
        raise RuleError(
            "%s: kops offers API server nodes only with the APIServerNodes feature flag; set kops_env KOPS_FEATURE_FLAGS to include +APIServerNodes" % field
        )
