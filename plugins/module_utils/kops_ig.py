# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""InstanceGroup options: their kops.k8s.io/v1alpha2 spec fields, and the rules kops applies to them.

Rules mirror kops v1.36.2 ``pkg/apis/kops/validation/instancegroup.go`` and ``aws.go`` (cited per
rule) and raise :class:`~kops_rules.RuleError` naming the option. Pure functions.
"""
import re

from ansible_collections.kopsible.kops.plugins.module_utils import kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils.kops_rules import RuleError, duration_seconds  # noqa: F401
from ansible_collections.kopsible.kops.plugins.module_utils.kops_spec import IG_SPEC_FIELDS, ROLES, check_spec_fields, normalize_role

# Option -> v1alpha2 InstanceGroup spec field (pkg/apis/kops/v1alpha2/instancegroup.go json tags).
IG_FIELDS = {
    "min_size": "minSize", "max_size": "maxSize", "machine_type": "machineType", "image": "image",
    "subnets": "subnets", "zones": "zones", "node_labels": "nodeLabels", "taints": "taints",
    "cloud_labels": "cloudLabels", "suspend_processes": "suspendProcesses",
    "instance_protection": "instanceProtection", "instance_metadata": "instanceMetadata",
    "detailed_instance_monitoring": "detailedInstanceMonitoring",
    "external_load_balancers": "externalLoadBalancers", "additional_user_data": "additionalUserData",
    "compress_user_data": "compressUserData", "packages": "packages", "sysctl_parameters": "sysctlParameters",
    "mixed_instances_policy": "mixedInstancesPolicy", "capacity_rebalance": "capacityRebalance",
    "warm_pool": "warmPool", "max_instance_lifetime": "maxInstanceLifetime", "root_volume": "rootVolume",
    "max_price": "maxPrice", "rolling_update": "rollingUpdate",
}

# Known keys of the dict options (snake_case on our side), so a typo fails instead of being ignored.
NESTED_KEYS = {
    "instance_metadata": {"http_tokens", "http_put_response_hop_limit"},
    "external_load_balancers": {"load_balancer_name", "target_group_arn"},
    "additional_user_data": {"name", "type", "content"},
    "mixed_instances_policy": {"instances", "instance_requirements", "on_demand_allocation_strategy",
                               "on_demand_base", "on_demand_above_base", "spot_allocation_strategy",
                               "spot_instance_pools"},
    "instance_requirements": {"cpu", "memory", "excluded_instance_types"},
    "warm_pool": {"min_size", "max_size", "enable_lifecycle_hook", "lifecycle_hook_timeout", "additional_images"},
    "root_volume": {"size", "type", "iops", "throughput", "encryption", "encryption_key", "delete_on_termination",
                    "optimization"},
    "rolling_update": {"max_surge", "max_unavailable", "drain_and_terminate"},
}
# pkg/apis/kops/instancegroup.go SpotAllocationStrategies
SPOT_STRATEGIES = ("lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized",
                   "price-capacity-optimized")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # k8s.io/api core/v1 TaintEffect
SUSPENDABLE = ("Launch", "Terminate", "AddToLoadBalancer", "AlarmNotification", "AZRebalance", "HealthCheck",
               "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions")  # AWS Auto Scaling process names
_TAINT_RE = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>\w+)$")


def camel(name):
    """``http_put_response_hop_limit`` -> ``httpPutResponseHopLimit``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_camel(value, option=None):
    """Convert dict keys (recursively) to the spec's camelCase; values are kept. ``option`` names
    the option for :data:`NESTED_KEYS` checks (raises RuleError on an unknown key)."""
    if isinstance(value, list):
        return [to_camel(v, option) for v in value]
    if not isinstance(value, dict):
        return value
    allowed = NESTED_KEYS.get(option)
    result = {}
    for key, item in value.items():
        if allowed is not None and key not in allowed:
            raise RuleError("%s: unknown key %r (known: %s)" % (option, key, ", ".join(sorted(allowed))))
        child = key if key in NESTED_KEYS else None
        result[camel(key)] = to_camel(item, child)
    return result


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
    """instancegroup.go: sizes >= 0, maxSize >= minSize, control plane exactly 1/1."""
    for field, value in (("min_size", min_size), ("max_size", max_size)):
        if value is not None and value < 0:
            raise RuleError("%s: must be 0 or more, got %d" % (field, value))
    if min_size is not None and max_size is not None and max_size < min_size:
        raise RuleError("max_size: %d is less than min_size %d (maxSize must be greater than or equal to minSize)" % (max_size, min_size))
    if role == "ControlPlane":
        if min_size not in (None, 1) or max_size not in (None, 1):
            raise RuleError("min_size/max_size: a ControlPlane InstanceGroup must have minSize and maxSize 1; "
                            "add more control-plane InstanceGroups instead")


def check_fields(params, role, cluster_subnets=None):
    """All other rules; ``params`` are the module options (snake_case). ``cluster_subnets``: names
    of the cluster spec's subnets, when known."""
    lifetime = params.get("max_instance_lifetime")
    if lifetime is not None and 0 < duration_seconds(lifetime, "max_instance_lifetime") < 86400:
        raise RuleError("max_instance_lifetime: %s is under 24h; it must be 0 or at least 24h (aws.go "
                        "awsValidateMaximumInstanceLifetime)" % lifetime)
    metadata = params.get("instance_metadata") or {}
    if metadata.get("http_tokens") not in (None, "required", "optional"):
        raise RuleError("instance_metadata.http_tokens: %r must be required or optional" % (metadata["http_tokens"],))
    number(metadata.get("http_put_response_hop_limit"), "instance_metadata.http_put_response_hop_limit", 1, 64)
    check_mixed(params.get("mixed_instances_policy"))
    check_warm_pool(params.get("warm_pool"), role, params.get("mixed_instances_policy"), params.get("max_price"))
    lbs = params.get("external_load_balancers") or []
    if len(lbs) > 10:
        raise RuleError("external_load_balancers: %d given; at most 10 per Auto Scaling group" % len(lbs))
    for index, lb in enumerate(lbs):
        for key in ("load_balancer_name", "target_group_arn"):
            text(lb.get(key), "external_load_balancers[%d].%s" % (index, key))
        if bool(lb.get("load_balancer_name")) == bool(lb.get("target_group_arn")):
            raise RuleError("external_load_balancers[%d]: give exactly one of load_balancer_name or target_group_arn" % index)
        arn = lb.get("target_group_arn")
        if arn and not re.match(r"^arn:aws(-cn|-us-gov)?:elasticloadbalancing:[^:]+:\d{12}:targetgroup/", arn):
            raise RuleError("external_load_balancers[%d].target_group_arn: %r is not a target group ARN" % (index, arn))
    for index, taint in enumerate(params.get("taints") or []):
        match = _TAINT_RE.fullmatch(text(taint, "taints[%d]" % index))
        if not match or match.group("effect") not in TAINT_EFFECTS:
            raise RuleError("taints[%d]: %r must be key[=value]:Effect with Effect one of %s (instancegroup.go "
                            "ParseTaint)" % (index, taint, ", ".join(TAINT_EFFECTS)))
    for process in params.get("suspend_processes") or []:
        if process not in SUSPENDABLE:
            raise RuleError("suspend_processes: %r is not an Auto Scaling process (%s)" % (process, ", ".join(SUSPENDABLE)))
    for index, item in enumerate(params.get("additional_user_data") or []):
        for key in ("name", "content"):
            if not item.get(key):
                raise RuleError("additional_user_data[%d].%s: required (instancegroup.go validateUserData)" % (index, key))
    for index, value in enumerate(params.get("sysctl_parameters") or []):
        if "=" not in value:
            raise RuleError("sysctl_parameters[%d]: %r must contain a '=' character" % (index, value))
    volume = params.get("root_volume") or {}
    for key in ("size", "iops", "throughput"):
        number(volume.get(key), "root_volume.%s" % key)
        if volume.get(key) is not None and volume[key] <= 0:
            raise RuleError("root_volume.%s: must be greater than 0, got %s" % (key, volume[key]))
    if params.get("zones"):
        kops_rules.zones(params["zones"], "zones")
    if params.get("machine_type") is not None:
        kops_rules.machine_types(params["machine_type"], "machine_type")
    check_spec_fields(params.get("spec"), IG_SPEC_FIELDS, "spec")
    if cluster_subnets is not None:
        unknown = [s for s in params.get("subnets") or [] if s not in cluster_subnets]
        if unknown:
            raise RuleError("subnets: %s not in the cluster spec (it has %s)" % (", ".join(unknown), ", ".join(cluster_subnets)))


def check_mixed(policy):
    """mixedInstancesPolicy rules (aws.go awsValidateMixedInstancesPolicy): onDemandAboveBase 0..100, a
    known spotAllocationStrategy, whole non-negative onDemandBase and spotInstancePools. Raises RuleError."""
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
    instances = policy.get("instances")
    if instances is not None:
        if not isinstance(instances, list):
            raise RuleError("mixed_instances_policy.instances: %r must be a list of instance types" % (instances,))
        for index, value in enumerate(instances):
            kops_rules.machine_types(value, "mixed_instances_policy.instances[%d]" % index)


def check_warm_pool(pool, role, mixed, max_price):
    """instancegroup.go: Node or APIServer only, not with spot, sizes >= 0 and max >= min."""
    if not pool:
        return
    if role is not None and role not in ("Node", "APIServer"):
        raise RuleError("warm_pool: only allowed on instance groups with role Node or APIServer, not %s" % role)
    if max_price or (mixed and ((mixed.get("on_demand_above_base") is not None and mixed["on_demand_above_base"] < 100)
                                or mixed.get("spot_allocation_strategy"))):
        raise RuleError("warm_pool: cannot be used with spot instances (max_price or a mixed_instances_policy with spot)")
    low = number(pool.get("min_size"), "warm_pool.min_size")
    high = number(pool.get("max_size"), "warm_pool.max_size")
    if low is not None and low < 0:
        raise RuleError("warm_pool.min_size: cannot be negative")
    if high is not None and high < 0:
        raise RuleError("warm_pool.max_size: cannot be negative")
    if low is not None and high is not None and high < low:
        raise RuleError("warm_pool.max_size: %s cannot be lower than min_size %s" % (high, low))


# v1alpha2 keeps the root volume in flat fields (pkg/apis/kops/v1alpha2/instancegroup.go: RootVolume is
# json:"-"; rootVolumeSize, rootVolumeType, rootVolumeIops, ...); a nested rootVolume is silently dropped.
ROOT_VOLUME_FIELDS = {"size": "rootVolumeSize", "type": "rootVolumeType", "iops": "rootVolumeIops",
                      "throughput": "rootVolumeThroughput", "encryption": "rootVolumeEncryption",
                      "encryption_key": "rootVolumeEncryptionKey", "delete_on_termination": "rootVolumeDeleteOnTermination",
                      "optimization": "rootVolumeOptimization"}


def overrides(params):
    """``{spec field: value}`` for every IG option given (not None), converted to the spec's form."""
    result = {}
    for option, field in IG_FIELDS.items():
        value = params.get(option)
        if value is None:
            continue
        if option == "root_volume":
            to_camel(value, option)  # unknown keys fail
            result.update({ROOT_VOLUME_FIELDS[k]: v for k, v in value.items() if v is not None})
            continue
        if option in NESTED_KEYS:
            value = to_camel(value, option)
        elif option in ("node_labels", "cloud_labels"):
            value = {str(k): str(v) for k, v in value.items()}
        elif option == "max_instance_lifetime":
            value = str(value)
        result[field] = value
    return result


def new_manifest(cluster, name, role, fields):
    """A fresh v1alpha2 InstanceGroup manifest (dict) for ``kops create -f``."""
    return {"apiVersion": "kops.k8s.io/v1alpha2", "kind": "InstanceGroup",
            "metadata": {"name": name, "labels": {"kops.k8s.io/cluster": cluster}},
            "spec": dict({"role": "Master" if role == "ControlPlane" else role}, **fields)}
