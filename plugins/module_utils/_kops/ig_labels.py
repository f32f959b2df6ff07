# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An InstanceGroup's node labels, taints and cloud labels: the rules kops and Kubernetes apply to them (each raises
kops_rules.RuleError naming the field and citing its source)."""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import DNS1123_SUBDOMAIN_MAX_LENGTH, DNS1123_SUBDOMAIN_RE, RuleError, text

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # k8s.io/api core/v1 TaintEffect


_TAINT_RE = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>\w+)$")


def check_taints(taints):
    """``taints``: ``key[=value]:Effect`` (pkg/apis/kops/util/taints.go:27-57 ParseTaint), no duplicates
    (pkg/apis/kops/validation/instancegroup.go:199-211), an Effect kubelet registers (k8s.io/api core/v1
    TaintEffect: kubelet refuses a taint without one of them), and no two with the same key and effect: kops stores
    them, but the API server refuses the Node ("taints must be unique by key and effect pair", Kubernetes
    pkg/apis/core/validation/validation.go:7100-7119 validateNodeTaints), so the group's nodes never register. The same
    key with another effect is taken, as Kubernetes takes it. Raises RuleError naming ``taints[i]``."""
    seen, pairs = set(), {}
    for index, taint in enumerate(taints):
        match = _TAINT_RE.fullmatch(text(taint, "taints[%d]" % index))
        if not match or match.group("effect") not in TAINT_EFFECTS:
            raise RuleError(
                "taints[%d]: %r must be key[=value]:Effect with Effect one of %s (instancegroup.go ParseTaint)" % (index, taint, ", ".join(TAINT_EFFECTS))
            )
        if taint in seen:
            raise RuleError("taints[%d]: %r is listed twice (instancegroup.go: Duplicate value)" % (index, taint))
        seen.add(taint)
        pair = (match.group("key"), match.group("effect"))
        if pair in pairs:
            raise RuleError(
                'taints[%d]: %r has the key %r and effect %s of taints[%d] %r; Kubernetes refuses such a Node ("taints must be unique '
                "by key and effect pair\", validateNodeTaints), so the group's nodes would never register"
                % (index, taint, pair[0], pair[1], pairs[pair], taints[pairs[pair]])
            )
        pairs[pair] = index


_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def label_key_problem(key):
    """Why ``key`` is not a Kubernetes label key (str), or None. k8s.io/apimachinery v0.36.0
    pkg/api/validate/content/kube.go:43-71 IsLabelKey: an optional DNS-1123 subdomain prefix (at most 253
    characters, dns.go:64-78) and '/', then a name of at most 63 characters, alphanumeric at both ends,
    ``-_.`` inside."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a label key holds at most one '/' (prefix/name)"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "the prefix before '/' is empty"
        if len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH or not DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return "the prefix %r is not a lowercase DNS subdomain of at most 253 characters" % prefix
    if not name:
        return "the name part is empty"
    if len(name) > 63:
        return "the name part has %d characters; at most 63" % len(name)
    if not _LABEL_NAME_RE.match(name):
        return "the name part must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def label_value_problem(value):
    """Why ``value`` is not a Kubernetes label value, or None (kube.go:84-93 IsLabelValue: empty, or at most 63
    characters of the label-name form)."""
    if len(value) > 63:
        return "the value has %d characters; at most 63" % len(value)
    if value and not _LABEL_NAME_RE.match(value):
        return "the value must be empty or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def node_labels(labels, field="node_labels"):
    """Node labels kops stores and kubelet registers the node with: kops refuses a key with two '/'
    (pkg/apis/kops/validation/instancegroup.go:451-458 validateNodeLabels); the API server refuses every other
    malformed key or value when kubelet registers the node (apimachinery IsLabelKey / IsLabelValue, see
    :func:`label_key_problem`), so the node never joins. A ``None`` value removes the label (merge rule)."""
    for key, value in (labels or {}).items():
        problem = label_key_problem(str(key))
        if problem is None and value is not None:
            problem = label_value_problem(str(value))
        if problem:
            raise RuleError("%s: %r=%r: %s (kubelet could not register the node)" % (field, key, value, problem))


# pkg/apis/kops/validation/cluster.go:122-153 validateCloudLabels
RESERVED_CLOUD_LABELS = ("Name", "KubernetesCluster")


RESERVED_CLOUD_LABEL_PREFIXES = ("kubernetes.io/cluster/", "k8s.io/role/", "kops.k8s.io/")


IG_NAME_TAG = "kops.k8s.io/instancegroup"  # pkg/nodeidentity/aws CloudTagInstanceGroupName


def cloud_labels(labels, field="cloud_labels", ig_name=None):
    """Cloud labels (AWS tags): kops' reserved keys and prefixes (cluster.go:122-153 validateCloudLabels); on an
    InstanceGroup, ``kops.k8s.io/instancegroup`` may only hold the group's name (instancegroup.go:466-486
    validateIGCloudLabels); AWS tag limits (keys of 1-128 and values of at most 256 characters, no ``aws:``
    prefix: EC2 CreateTags / Auto Scaling CreateOrUpdateTags). ``None`` removes a label (merge rule)."""
    for key, value in (labels or {}).items():
        key = str(key)
        if ig_name is not None and key == IG_NAME_TAG:
            if value is not None and str(value) != ig_name:
                raise RuleError("%s: %s must be the group's own name %r, got %r" % (field, key, ig_name, value))
            continue
        if key in RESERVED_CLOUD_LABELS:
            raise RuleError("%s: %r is a label kops reserves for itself" % (field, key))
        for prefix in RESERVED_CLOUD_LABEL_PREFIXES:
            if key.startswith(prefix):
                raise RuleError("%s: %r starts with %r, a prefix kops reserves for itself" % (field, key, prefix))
        if not key or len(key) > 128 or key.lower().startswith("aws:"):
            raise RuleError("%s: %r is not an AWS tag key (1 to 128 characters, not starting with aws:)" % (field, key))
        if value is not None and len(str(value)) > 256:
            raise RuleError("%s: the value of %r has %d characters; AWS tag values hold at most 256" % (field, key, len(str(value))))
