# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""InstanceGroup options: their kops.k8s.io/v1alpha2 spec fields, and the rules kops applies to them.

Rules mirror kops v1.36.2 ``pkg/apis/kops/validation/instancegroup.go`` and ``aws.go`` (cited per
rule) and raise :class:`~kops_rules.RuleError` naming the option. Pure functions.
"""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.ig_labels import check_taints, cloud_labels, node_labels
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError, duration_seconds, text  # noqa: F401
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import ROLES, labels_as_text, normalize_role
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec_fields import IG_SPEC_FIELDS, check_spec_fields
from ansible_collections.kopsible.kops.plugins.module_utils._kops.user_data import check_user_data

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
