# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""InstanceGroup options: their kops.k8s.io/v1alpha2 spec fields, and the rules kops applies to them.

Rules mirror kops v1.36.2 ``pkg/apis/kops/validation/instancegroup.go`` and ``aws.go`` (cited per
rule) and raise :class:`~kops_rules.RuleError` naming the option. Pure functions.
"""

import re

from ansible_collections.kopsible.kops.plugins.module_utils import kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils.kops_rules import RuleError, duration_seconds  # noqa: F401
from ansible_collections.kopsible.kops.plugins.module_utils.kops_spec import IG_SPEC_FIELDS, ROLES, check_spec_fields, labels_as_text, normalize_role

# Option -> v1alpha2 InstanceGroup spec field (pkg/apis/kops/v1alpha2/instancegroup.go json tags).
IG_FIELDS = {
    "min_size": "minSize",
    "max_size": "maxSize",
    "machine_type": "machineType",
    "image": "image",
    "subnets": "subnets",
    "zones": "zones",
    "node_labels": "nodeLabels",
    "taints": "taints",
    "cloud_labels": "cloudLabels",
    "suspend_processes": "suspendProcesses",
    "instance_protection": "instanceProtection",
    "instance_metadata": "instanceMetadata",
    "detailed_instance_monitoring": "detailedInstanceMonitoring",
    "external_load_balancers": "externalLoadBalancers",
    "additional_user_data": "additionalUserData",
    "compress_user_data": "compressUserData",
    "packages": "packages",
    "sysctl_parameters": "sysctlParameters",
    "mixed_instances_policy": "mixedInstancesPolicy",
    "capacity_rebalance": "capacityRebalance",
    "warm_pool": "warmPool",
    "max_instance_lifetime": "maxInstanceLifetime",
    "root_volume": "rootVolume",
    "max_price": "maxPrice",
    "rolling_update": "rollingUpdate",
}

# pkg/apis/kops/instancegroup.go SpotAllocationStrategies
SPOT_STRATEGIES = ("lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # k8s.io/api core/v1 TaintEffect
SUSPENDABLE = (
    "Launch",
    "Terminate",
    "AddToLoadBalancer",
    "AlarmNotification",
    "AZRebalance",
    "HealthCheck",
    "InstanceRefresh",
    "ReplaceUnhealthy",
    "ScheduledActions",
)  # AWS Auto Scaling process names
_TAINT_RE = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>\w+)$")


def camel(name):
    """``http_put_response_hop_limit`` -> ``httpPutResponseHopLimit``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_camel(value):
    """Convert dict keys (recursively) to the spec's camelCase; values are kept. The keys were checked by the
    module's argument spec (the suboptions of each dict option: an unknown key fails there)."""
    if isinstance(value, list):
        return [to_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    return dict((camel(key), to_camel(item)) for key, item in value.items())


def number(value, field, minimum=None, maximum=None):
    """``value`` must be an int (not a bool) within bounds; returns it. Raises RuleError naming ``field``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuleError("%s: %r must be a whole number" % (field, value))
    if minimum is not None and value < minimum:
        raise RuleError("%s: %s must be %s or more" % (field, value, minimum))
    if maximum is not None and value > maximum:
        raise RuleError("%s: %s must be %s or less" % (field, value, maximum))
    return value


def text(value, field):
    """``value`` must be a string; returns it. Raises RuleError naming ``field``."""
    if value is not None and not isinstance(value, str):
        raise RuleError("%s: %r must be a string" % (field, value))
    return value


def check_role(role):
    """The role in kops' spelling (``ControlPlane``...); accepts ``Master``. instancegroup.go: NotSupported role."""
    normal = normalize_role(role)
    if normal not in ROLES:
        raise RuleError("role: %r is not one of %s (Master is accepted for ControlPlane)" % (role, ", ".join(ROLES)))
    return normal


def check_sizes(role, min_size, max_size):
    """Group sizes.

    - maxSize >= minSize: pkg/apis/kops/validation/instancegroup.go:94-98.
    - ControlPlane: minSize and maxSize at most 1 (0 is allowed, e.g. to stop a control-plane node):
      instancegroup.go:66-71 (``fi.ValueOf(g.Spec.MinSize) > 1``).
    - 0 or more: kops has no rule, AWS does (CreateAutoScalingGroup/UpdateAutoScalingGroup MinSize and
      MaxSize have a minimum of 0), and kops stores a negative size that ``update cluster`` then fails on.
    """
    for field, value in (("min_size", min_size), ("max_size", max_size)):
        if value is not None and value < 0:
            raise RuleError("%s: must be 0 or more, got %d" % (field, value))
    if min_size is not None and max_size is not None and max_size < min_size:
        raise RuleError("max_size: %d is less than min_size %d (maxSize must be greater than or equal to minSize)" % (max_size, min_size))
    if role == "ControlPlane":
        for field, value in (("min_size", min_size), ("max_size", max_size)):
            if value is not None and value > 1:
                raise RuleError(
                    "%s: %d; a ControlPlane InstanceGroup has at most 1 instance (0 or 1); add more control-plane InstanceGroups instead" % (field, value)
                )


def check_fields(params, role, cluster_subnets=None):
    """All other rules; ``params`` are the module options (snake_case). ``cluster_subnets``: names
    of the cluster spec's subnets, when known. A ``None`` inside a dict option removes that key (merge rule,
    :func:`apply_fields`) and is not checked."""
    lifetime = params.get("max_instance_lifetime")
    if lifetime is not None:
        check_lifetime(lifetime)
    check_metadata(params.get("instance_metadata") or {})
    check_mixed(params.get("mixed_instances_policy"), params.get("max_size"))
    check_warm_pool(params.get("warm_pool"), role, params.get("max_price"))
    check_load_balancers(params.get("external_load_balancers") or [])
    check_taints(params.get("taints") or [])
    for process in params.get("suspend_processes") or []:
        if process not in SUSPENDABLE:
            raise RuleError("suspend_processes: %r is not an Auto Scaling process (%s)" % (process, ", ".join(SUSPENDABLE)))
    check_user_data(params.get("additional_user_data") or [])
    for index, value in enumerate(params.get("sysctl_parameters") or []):
        if "=" not in value:  # instancegroup.go:167-171
            raise RuleError("sysctl_parameters[%d]: %r must contain a '=' character" % (index, value))
    check_root_volume(params.get("root_volume") or {})
    if params.get("node_labels"):
        node_labels(params["node_labels"])
    if params.get("cloud_labels"):
        cloud_labels(params["cloud_labels"], "cloud_labels", params.get("name"))
    if params.get("zones"):
        kops_rules.zones(params["zones"], "zones")
    if params.get("machine_type") is not None:
        kops_rules.machine_types(params["machine_type"], "machine_type")
    check_spec_fields(params.get("spec"), IG_SPEC_FIELDS, "spec")
    if cluster_subnets is not None:
        unknown = [s for s in params.get("subnets") or [] if s not in cluster_subnets]
        if unknown:  # instancegroup.go:270-281 (CrossValidateInstanceGroup)
            raise RuleError("subnets: %s not in the cluster spec (it has %s)" % (", ".join(unknown), ", ".join(cluster_subnets)))


# AWS MaxInstanceLifetime: 0, or 86400 to 31536000 seconds (Auto Scaling API reference, CreateAutoScalingGroup).
MAX_LIFETIME_SECONDS = 31536000


def check_lifetime(value):
    """``max_instance_lifetime``: 0 or at least 24h (pkg/apis/kops/validation/aws.go:114-123
    awsValidateMaximumInstanceLifetime), and at most 365 days (AWS CreateAutoScalingGroup MaxInstanceLifetime:
    kops stores a longer one, the Auto Scaling API refuses it at ``update cluster --yes``)."""
    seconds = duration_seconds(value, "max_instance_lifetime")
    if 0 < seconds < 86400:
        raise RuleError("max_instance_lifetime: %s is under 24h; it must be 0 or at least 24h (aws.go awsValidateMaximumInstanceLifetime)" % value)
    if seconds > MAX_LIFETIME_SECONDS:
        raise RuleError("max_instance_lifetime: %s is over 365 days (8760h), the most AWS Auto Scaling accepts" % value)


def check_metadata(metadata):
    """``instance_metadata``: httpTokens optional|required, hop limit 1..64 (pkg/apis/kops/validation/aws.go:130-147
    awsValidateInstanceMetadata)."""
    if metadata.get("http_tokens") not in (None, "required", "optional"):
        raise RuleError("instance_metadata.http_tokens: %r must be required or optional" % (metadata["http_tokens"],))
    number(metadata.get("http_put_response_hop_limit"), "instance_metadata.http_put_response_hop_limit", 1, 64)


def check_load_balancers(lbs):
    """``external_load_balancers`` (pkg/apis/kops/validation/instancegroup.go:488-531 validateExternalLoadBalancer):
    not both a name and a target group (TooMany), a classic ELB name of at most 32 characters, a target group ARN
    whose resource is ``targetgroup/NAME/ID`` with NAME at most 32 characters. (An entry with neither attaches
    nothing; kops accepts it, so do we.) At most 10 classic load balancers: kops attaches them to an existing group
    in one AttachLoadBalancers call (upup/pkg/fi/cloudup/awstasks/autoscalinggroup.go:610-617), which takes up to
    10 names; target groups it attaches in chunks of 10 (autoscalinggroup.go:44, 628-636), so they have no such
    limit here (AWS' per-group quota is adjustable)."""
    classic = [lb for lb in lbs if lb.get("load_balancer_name")]
    if len(classic) > 10:
        raise RuleError(
            "external_load_balancers: %d classic load balancers (load_balancer_name) given; kops attaches "
            "them in one AttachLoadBalancers call, which takes at most 10" % len(classic)
        )
    for index, lb in enumerate(lbs):
        field = "external_load_balancers[%d]" % index
        for key in ("load_balancer_name", "target_group_arn"):
            text(lb.get(key), "%s.%s" % (field, key))
        name, arn = lb.get("load_balancer_name"), lb.get("target_group_arn")
        if name and arn:
            raise RuleError("%s: give one of load_balancer_name or target_group_arn, not both" % field)
        if name and len(name) > 32:
            raise RuleError("%s.load_balancer_name: %r has %d characters; at most 32" % (field, name, len(name)))
        if arn:
            match = re.match(r"^arn:aws(-cn|-us-gov|-iso[a-z]?)?:elasticloadbalancing:[^:]*:\d{12}:(?P<res>.*)$", arn, re.ASCII)
            parts = match.group("res").split("/") if match else []
            if len(parts) != 3 or parts[0] != "targetgroup":
                raise RuleError("%s.target_group_arn: %r is not a target group ARN (resource targetgroup/NAME/ID)" % (field, arn))
            if len(parts[1]) > 32:
                raise RuleError("%s.target_group_arn: target group name %r has %d characters; at most 32" % (field, parts[1], len(parts[1])))


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


# pkg/apis/kops/validation/instancegroup.go:412-421 validUserDataTypes
USER_DATA_TYPES = (
    "text/x-include-once-url",
    "text/x-include-url",
    "text/cloud-config-archive",
    "text/upstart-job",
    "text/cloud-config",
    "text/part-handler",
    "text/x-shellscript",
    "text/cloud-boothook",
)


def check_user_data(parts):
    """``additional_user_data``: name and content required, type one of kops' list (instancegroup.go:423-438
    validateExtraUserData; the type is required too: IsValidValue refuses the empty string)."""
    for index, item in enumerate(parts):
        for key in ("name", "content"):
            if not item.get(key):
                raise RuleError("additional_user_data[%d].%s: required (instancegroup.go validateExtraUserData)" % (index, key))
        if item.get("type") not in USER_DATA_TYPES:
            raise RuleError(
                "additional_user_data[%d].type: %r is not one of %s (instancegroup.go validUserDataTypes)"
                % (index, item.get("type"), ", ".join(USER_DATA_TYPES))
            )


# pkg/apis/kops/validation/instancegroup.go:284-287: the root volume types kops accepts on AWS.
ROOT_VOLUME_TYPES = ("standard", "gp3", "gp2", "io1", "io2")


def check_root_volume(volume):
    """``root_volume``: iops and throughput not negative (0 is kops' "default": pkg/apis/kops/validation/
    instancegroup.go:111-119), a type kops accepts on AWS (instancegroup.go:284-287). A negative size is refused
    too: kops stores it and silently uses its default size instead (pkg/model/awsmodel/autoscalinggroup.go:179)."""
    for key in ("size", "iops", "throughput"):
        number(volume.get(key), "root_volume.%s" % key)
        if volume.get(key) is not None and volume[key] < 0:
            raise RuleError("root_volume.%s: must be 0 (kops' default) or more, got %s" % (key, volume[key]))
    if volume.get("type") is not None and volume["type"] not in ROOT_VOLUME_TYPES:
        raise RuleError("root_volume.type: %r is not one of %s (instancegroup.go)" % (volume["type"], ", ".join(ROOT_VOLUME_TYPES)))


_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
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


def check_mixed(policy, max_size=None):
    """mixedInstancesPolicy rules (pkg/apis/kops/validation/aws.go:249-302 awsValidateMixedInstancesPolicy):
    onDemandBase 0 or more and not above the group's maxSize (aws.go:281-288), onDemandAboveBase 0..100
    (aws.go:290-297), a known spotAllocationStrategy (aws.go:299, instancegroup.go SpotAllocationStrategies);
    spotInstancePools whole and 0 or more. Raises RuleError."""
    if not policy:
        return
    above = number(policy.get("on_demand_above_base"), "mixed_instances_policy.on_demand_above_base")
    if above is not None and not 0 <= above <= 100:
        raise RuleError("mixed_instances_policy.on_demand_above_base: %s must be between 0 and 100 (aws.go)" % above)
    strategy = policy.get("spot_allocation_strategy")
    if strategy is not None and strategy not in SPOT_STRATEGIES:
        raise RuleError("mixed_instances_policy.spot_allocation_strategy: %r is not one of %s" % (strategy, ", ".join(SPOT_STRATEGIES)))
    for key in ("on_demand_base", "spot_instance_pools"):
        number(policy.get(key), "mixed_instances_policy.%s" % key, 0)
    base = policy.get("on_demand_base")
    if base is not None and max_size is not None and base > max_size:
        raise RuleError("mixed_instances_policy.on_demand_base: %s cannot be greater than max_size %s (aws.go)" % (base, max_size))
    instances = policy.get("instances")
    if instances is not None:
        if not isinstance(instances, list):
            raise RuleError("mixed_instances_policy.instances: %r must be a list of instance types" % (instances,))
        for index, value in enumerate(instances):
            kops_rules.machine_types(value, "mixed_instances_policy.instances[%d]" % index)


def check_warm_pool(pool, role, max_price):
    """Warm pool rules of kops (pkg/apis/kops/validation/instancegroup.go:289-307, CrossValidateInstanceGroup):
    while the pool is on (its maxSize unset or not 0) only on Node or APIServer groups and not with ``maxPrice``
    (kops' one spot test: a ``mixedInstancesPolicy``, even with spot capacity, is accepted); sizes not negative,
    maxSize not below minSize. ``max_size: 0`` turns the pool off, allowed on any group."""
    if not pool:
        return
    low = number(pool.get("min_size"), "warm_pool.min_size")
    high = number(pool.get("max_size"), "warm_pool.max_size")
    if high is None or high != 0:
        if role is not None and role not in ("Node", "APIServer"):
            raise RuleError("warm_pool: only allowed on instance groups with role Node or APIServer, not %s" % role)
        if max_price:
            raise RuleError("warm_pool: cannot be used with spot instances (max_price is set); kops refuses a warm pool with maxPrice")
    if high is not None and high < 0:
        raise RuleError("warm_pool.max_size: cannot be negative")
    if low is not None and high is not None and high < low:
        raise RuleError("warm_pool.max_size: %s cannot be lower than min_size %s" % (high, low))
    if low is not None and low < 0:
        raise RuleError("warm_pool.min_size: cannot be negative")


# v1alpha2 keeps the root volume in flat fields (pkg/apis/kops/v1alpha2/instancegroup.go: RootVolume is
# json:"-"; rootVolumeSize, rootVolumeType, rootVolumeIops, ...); a nested rootVolume is silently dropped.
ROOT_VOLUME_FIELDS = {
    "size": "rootVolumeSize",
    "type": "rootVolumeType",
    "iops": "rootVolumeIops",
    "throughput": "rootVolumeThroughput",
    "encryption": "rootVolumeEncryption",
    "encryption_key": "rootVolumeEncryptionKey",
    "delete_on_termination": "rootVolumeDeleteOnTermination",
    "optimization": "rootVolumeOptimization",
}


def overrides(params):
    """``{spec field: value}`` for every IG option given (not None), converted to the spec's form.

    Dict options are patches for :func:`kops_spec.desired_object`'s merge rule: they may hold ``None`` values
    (remove that key). ``root_volume`` becomes v1alpha2's flat ``rootVolume*`` fields, ``None`` removing one.
    """
    result = {}
    for option, field in IG_FIELDS.items():
        value = params.get(option)
        if value is None:
            continue
        if option == "root_volume":
            result.update({ROOT_VOLUME_FIELDS[k]: v for k, v in value.items()})
            continue
        if option in ("node_labels", "cloud_labels"):
            value = labels_as_text(value)
        elif isinstance(value, (dict, list)):
            value = to_camel(value)
        elif option == "max_instance_lifetime":
            value = go_duration(value)
        result[field] = value
    return result


def go_duration(value):
    """A duration as kops stores it (Go's time.Duration String of the metav1.Duration it parses: ``168h`` ->
    ``168h0m0s``, ``90m`` -> ``1h30m0s``, ``0`` -> ``0s``), so that a re-run compares equal to the stored spec. A value
    that is not whole seconds is kept as given (str)."""
    seconds = duration_seconds(value, "max_instance_lifetime")
    if seconds != int(seconds):
        return str(value)
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%dm%ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%ds" % (minutes, secs)
    return "%ds" % secs


def snake(name):
    """``httpPutResponseHopLimit`` -> ``http_put_response_hop_limit`` (the inverse of :func:`camel`)."""
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def to_snake(value):
    """Dict keys (recursively) back to the options' snake_case."""
    if isinstance(value, list):
        return [to_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    return dict((snake(k), to_snake(v)) for k, v in value.items())


def merged_params(params, spec):
    """``params`` with each dict option that was given replaced by its merged value in ``spec`` (the
    InstanceGroup spec to be stored, v1alpha2), so that the rules judge what will be stored, not only the fields
    given (e.g. ``warm_pool: {min_size: 3}`` against a stored ``maxSize: 2``). ``max_size``/``max_price`` given or
    not, come from ``spec`` too (the warm pool and mixed policy rules read them)."""
    result = dict(params)
    spec = spec or {}
    for option, field in IG_FIELDS.items():
        if option == "root_volume":
            if params.get(option) is not None:
                result[option] = dict((k, spec.get(f)) for k, f in ROOT_VOLUME_FIELDS.items() if spec.get(f) is not None)
        elif option in ("max_size", "max_price", "min_size"):
            result[option] = spec.get(field)
        elif option in ("node_labels", "cloud_labels") and (params.get(option) is not None or field in (params.get("spec") or {})):
            result[option] = spec.get(field) or {}  # given as the option or through ``spec``: judged alike
        elif params.get(option) is not None and isinstance(params[option], dict):
            result[option] = to_snake(spec.get(field) or {})
    return result


def new_manifest(cluster, name, role, fields):
    """A fresh v1alpha2 InstanceGroup manifest (dict) for ``kops create -f``."""
    return {
        "apiVersion": "kops.k8s.io/v1alpha2",
        "kind": "InstanceGroup",
        "metadata": {"name": name, "labels": {"kops.k8s.io/cluster": cluster}},
        "spec": dict({"role": "Master" if role == "ControlPlane" else role}, **fields),
    }


# EC2 user data: at most 16 KB in raw form, before base64 (EC2 RunInstances / launch template UserData). kops
# checks it for its Instance task only (upup/pkg/fi/cloudup/awstasks/instance.go:35 MaxUserDataSize = 16384);
# launch templates go to AWS unchecked (awstasks/launchtemplate_target_api.go:130-136), so an oversized one fails
# at ``update cluster --yes``, after the spec was stored.
MAX_USER_DATA = 16384
MIME_BOUNDARY = "MIMEBOUNDARY"
_MIME_HEAD = 'Content-Type: multipart/mixed; boundary="%s"\r\nMIME-Version: 1.0\r\n\r\n' % MIME_BOUNDARY


def aws_multipart_mime(boot_script, parts, bastion=False):
    """The user data kops renders for a group (bytes), as pkg/model/resources/nodeup.go:281-326 AWSMultipartMIME
    writes it: the nodeup script alone without additional parts; otherwise a multipart/mixed archive (boundary
    MIMEBOUNDARY) of nodeup.sh (not on bastions) and each part, headers in Go's mime/multipart order (sorted
    canonical keys), closed by ``\\r\\n--MIMEBOUNDARY--\\r\\n`` once (Close() writes its own closing line into a
    bufio.Writer that is never flushed again). ``compress_user_data`` gzips only the kube_env.yaml inside the
    nodeup script (nodeup.go:168-174): the additional parts are never compressed.

    :param boot_script: the nodeup script (str) as kops renders it for the group.
    :param parts: ``additional_user_data`` items (dicts with name, type, content).
    """
    if not parts:
        return boot_script.encode("utf-8")
    chunks = [_MIME_HEAD]
    items = ([] if bastion else [{"name": "nodeup.sh", "type": "text/x-shellscript", "content": boot_script}]) + list(parts)
    for index, part in enumerate(items):
        chunks.append(("\r\n--%s\r\n" if index else "--%s\r\n") % MIME_BOUNDARY)
        chunks.append('Content-Disposition: attachment; filename="%s"\r\n' % part.get("name"))
        chunks.append("Content-Transfer-Encoding: 7bit\r\n")
        chunks.append("Content-Type: %s\r\n" % part.get("type"))
        chunks.append("Mime-Version: 1.0\r\n\r\n")
        chunks.append(part.get("content") or "")
    chunks.append("\r\n--%s--\r\n" % MIME_BOUNDARY)
    return "".join(chunks).encode("utf-8")


def nodeup_script_of(user_data):
    """The nodeup script inside user data kops rendered (str): the nodeup.sh part of a MIMEBOUNDARY archive, or the
    whole text when there are no additional parts; None for a bastion archive (no nodeup part)."""
    if not user_data.startswith(_MIME_HEAD):
        return user_data
    marker = 'Content-Disposition: attachment; filename="nodeup.sh"\r\n'
    start = user_data.find(marker)
    if start < 0:
        return None
    body = user_data.index("\r\n\r\n", start) + 4
    end = user_data.find("\r\n--%s" % MIME_BOUNDARY, body)
    return user_data[body:end]


def user_data_problem(boot_script, spec, measured_from):
    """Why the user data kops would render for InstanceGroup ``spec`` (v1alpha2) exceeds EC2's limit (str naming
    ``additional_user_data``), or None. ``boot_script``: the group's nodeup script as kops last rendered it
    (``measured_from`` names the launch template it was read from)."""
    parts = spec.get("additionalUserData") or []
    rendered = aws_multipart_mime(boot_script, parts, normalize_role(spec.get("role")) == "Bastion")
    if len(rendered) <= MAX_USER_DATA:
        return None
    extra = sum(len((p.get("content") or "").encode("utf-8")) for p in parts)
    return (
        "additional_user_data: the launch template user data would be %d bytes, over EC2's limit of %d (nodeup "
        "script %d bytes as kops rendered it in %s, additional parts %d bytes, MIME framing the rest); EC2 would "
        "refuse it at update. Shrink the parts (compress_user_data compresses only kops' own kube_env inside the "
        "nodeup script, never additional parts), or fetch the larger part from S3 in a short script"
        % (len(rendered), MAX_USER_DATA, len(boot_script.encode("utf-8")), measured_from, extra)
    )
