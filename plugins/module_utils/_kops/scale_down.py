# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scale-down that drains: the instances an Auto Scaling group would remove, drained first.

kops lowers an InstanceGroup's size with ``UpdateAutoScalingGroup`` (MinSize/MaxSize only; kops never sets the
desired capacity: upup/pkg/fi/cloudup/awstasks/autoscalinggroup.go RenderAWS), and AWS then lowers the desired
capacity to the new maximum and terminates instances of its own choosing at once, without a drain (kops#5646).
This module chooses those same instances beforehand (:func:`choose_instances`, by the group's termination
policies as AWS documents them), drains their Nodes as kops drains a node it rolls (:func:`drain_node`, kops'
pkg/instancegroups/instancegroups.go ``drainNode``: cordon, label the node out of external load balancers, evict
every pod but DaemonSet and mirror pods, retrying an eviction a PodDisruptionBudget refuses every 5 s, until
``drain_timeout``), and terminates exactly those instances with the desired capacity decremented
(:func:`terminate_instances`), so that kops' change of the maximum finds nothing more to remove.

The choice is a pure function of ``DescribeAutoScalingGroups`` and ``DescribeInstances`` data; the drain takes a
``kubernetes.client.CoreV1Api``; nothing here imports the kubernetes client.
"""

import time

# The ASG states whose instances count toward the desired capacity and that AWS may pick when it scales in
# (Pending and InService and their lifecycle-hook waits; not Terminating, Detaching, Standby or warm-pool ones).
CANDIDATE_STATES = ("Pending", "Pending:Wait", "Pending:Proceed", "InService")
EVICTION_RETRY_SECONDS = 5  # kops: EvictErrorRetryDelay 5 * time.Second (pkg/instancegroups/instancegroups.go)
DELETE_POLL_SECONDS = 1  # kubectl's drain helper polls for the evicted pods to be gone every second
EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"  # kops patchExcludeFromLB
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class DrainError(Exception):
    """A drain that did not finish: ``node`` (str), ``evicted`` (list of ``namespace/name`` evicted before it
    stopped) and ``remaining`` (list of ``namespace/name`` still on the node); the message says why."""

    def __init__(self, message, node, evicted, remaining):
        super().__init__(message)
        self.node, self.evicted, self.remaining = node, evicted, remaining


def default_sizes(role, min_size, max_size):
    """The ``(MinSize, MaxSize)`` kops gives the Auto Scaling group of an InstanceGroup whose spec sizes are
    ``min_size``/``max_size`` (int or None): a size not given is 2 for a Node group and 1 for any other role
    (pkg/model/awsmodel/autoscalinggroup.go: ``minSize := 1 ... else if ig.Spec.Role.HasNode() { minSize = 2 }``)."""
    fallback = 2 if role == "Node" else 1
    return (fallback if min_size is None else int(min_size)), (fallback if max_size is None else int(max_size))


def excess(asg, max_size):
    """How many instances AWS removes when the maximum of ``asg`` (a DescribeAutoScalingGroups item) becomes
    ``max_size`` (int): the desired capacity above it (AWS lowers the desired capacity to a new maximum below it)."""
    return max(0, int(asg.get("DesiredCapacity") or 0) - int(max_size))


def _version(instance):
    try:
        return int((instance.get("LaunchTemplate") or {}).get("Version"))
    except (TypeError, ValueError):
        return 0


def _outdated_rank(instance, asg):
    """The Default policy's outdated-configuration order (smaller is removed first): launched from a launch
    configuration, then from another launch template than the group's, then by the version of the current one."""
    if instance.get("LaunchConfigurationName") and not instance.get("LaunchTemplate"):
        return (0, 0)
    current = asg.get("LaunchTemplate") or ((asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("LaunchTemplateSpecification") or {}
    template = instance.get("LaunchTemplate") or {}
    if current.get("LaunchTemplateId") and template.get("LaunchTemplateId") != current.get("LaunchTemplateId"):
        return (1, 0)
    return (2, _version(instance))


def _to_next_hour(launch_time, now):
    """Seconds from ``now`` to the next billing hour of an instance launched at ``launch_time`` (epoch s)."""
    if launch_time is None:
        return 3600.0
    return 3600.0 - ((now - launch_time) % 3600.0)


def _policy_key(policy, asg, launch_times, now):
    """A sort key for one termination policy (smaller is removed first), or None for a policy that orders
    nothing here (``AllocationStrategy``, a Lambda ARN: the next policy decides)."""
    if policy == "OldestInstance":
        return lambda i: launch_times.get(i["InstanceId"], 0.0)
    if policy == "NewestInstance":
        return lambda i: -launch_times.get(i["InstanceId"], 0.0)
    if policy in ("OldestLaunchConfiguration", "OldestLaunchTemplate"):
        return lambda i: _outdated_rank(i, asg)
    if policy == "ClosestToNextInstanceHour":
        return lambda i: _to_next_hour(launch_times.get(i["InstanceId"]), now)
    if policy == "Default":
        return lambda i: (_outdated_rank(i, asg), _to_next_hour(launch_times.get(i["InstanceId"]), now))
    return None


def choose_instances(asg, count, launch_times, now=None):
    """The ``count`` instances AWS would terminate when it scales ``asg`` in by ``count``, in that order.

    As AWS documents it (Amazon EC2 Auto Scaling user guide, "Configure termination policies"): zone balance comes
    first (each pick is made among the unprotected instances of the zones holding the most instances, all zones
    when they are balanced); then the group's ``TerminationPolicies`` in order (``Default`` when none, and as the
    final tie-break): ``OldestInstance``/``NewestInstance`` by launch time, ``OldestLaunchConfiguration``/
    ``OldestLaunchTemplate`` and ``Default`` by outdated configuration (launch configuration, another launch
    template, the oldest version of the current one), ``ClosestToNextInstanceHour`` and ``Default`` by the time to
    the next billing hour. Where AWS picks at random among equals, the lowest instance id is taken (so a check run
    and the run that follows name the same instances). Instances protected from scale-in and those not in a
    :data:`CANDIDATE_STATES` state or not Healthy are never chosen.

    :param asg: a DescribeAutoScalingGroups item (``Instances``, ``TerminationPolicies``, ``LaunchTemplate``).
    :param count: how many to choose (int).
    :param launch_times: ``{instance id: launch time as epoch seconds}`` (DescribeInstances ``LaunchTime``).
    :param now: epoch seconds (default: the clock).
    :returns: list of instance ids, at most ``count`` (fewer when fewer can be chosen).
    """
    now = time.time() if now is None else now
    members = [i for i in asg.get("Instances") or [] if i.get("LifecycleState") in CANDIDATE_STATES]
    policies = [p for p in asg.get("TerminationPolicies") or [] if p] + ["Default"]
    keys = [k for k in (_policy_key(p, asg, launch_times, now) for p in policies) if k is not None]
    chosen = []
    while len(chosen) < count:
        left = [i for i in members if i["InstanceId"] not in chosen]
        pickable = [i for i in left if not i.get("ProtectedFromScaleIn") and i.get("HealthStatus", "Healthy") == "Healthy"]
        if not pickable:
            break
        per_zone = {}
        for instance in left:
            per_zone[instance.get("AvailabilityZone")] = per_zone.get(instance.get("AvailabilityZone"), 0) + 1
        most = max(per_zone[i.get("AvailabilityZone")] for i in pickable)
        pool = [i for i in pickable if per_zone[i.get("AvailabilityZone")] == most]
        pool.sort(key=lambda i: tuple(k(i) for k in keys) + (i["InstanceId"],))
        chosen.append(pool[0]["InstanceId"])
    return chosen


def node_of_instance(core, instance_id, timeout=15):
    """The Node (a ``V1Node``) whose ``spec.providerID`` ends in ``/<instance_id>`` (kops matches them so:
    pkg/validation/validate_cluster.go), or None when the instance has not registered one."""
    for node in core.list_node(_request_timeout=timeout).items:
        if ((node.spec and node.spec.provider_id) or "").rsplit("/", 1)[-1] == instance_id:
            return node
    return None


def _pods_to_evict(core, node_name, timeout):
    """The pods a kops drain evicts from ``node_name``: all but mirror pods and DaemonSet pods (kops' drain helper:
    ``Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true``), and not those already being deleted."""
    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node_name, _request_timeout=timeout).items
    found = []
    for pod in pods:
        meta = pod.metadata
        if MIRROR_ANNOTATION in (meta.annotations or {}):
            continue
        if any(ref.kind == "DaemonSet" and ref.controller for ref in meta.owner_references or []):
            continue
        found.append(pod)
    return found


def drain_node(core, client_module, node, timeout_seconds, clock=time.monotonic, sleep=time.sleep, log=None):
    """Drain ``node`` (a ``V1Node``) as kops drains a node it rolls: cordon, label it out of external load
    balancers, evict its pods through the Eviction API (policy/v1), retrying every 5 s an eviction a
    PodDisruptionBudget refuses (HTTP 429), and wait until the evicted pods are gone (deleted, or replaced by a
    pod of another UID).

    :param core: ``kubernetes.client.CoreV1Api``.
    :param client_module: the ``kubernetes.client`` module (for ``V1Eviction``, ``ApiException``).
    :param timeout_seconds: the whole drain's limit (float), kops' ``--drain-timeout``.
    :returns: dict ``{'node', 'evicted': [namespace/name], 'budget_refusals': int}``; ``budget_refusals``
        counts the evictions a PodDisruptionBudget refused before they were let through.
    :raises DrainError: the limit passed, or the API refused an eviction with anything but 429/404.
    :raises kubernetes.client.ApiException: the cordon or a listing failed.
    """
    name = node.metadata.name
    deadline = clock() + timeout_seconds
    labels = {EXCLUDE_LB_LABEL: ""} if EXCLUDE_LB_LABEL not in (node.metadata.labels or {}) else {}
    body = {"spec": {"unschedulable": True}}
    if labels:
        body["metadata"] = {"labels": labels}
    core.patch_node(name, body)
    pending = {"%s/%s" % (p.metadata.namespace, p.metadata.name): p for p in _pods_to_evict(core, name, 15)}
    evicted, uids, refusals = [], {}, 0
    while pending:
        for key in sorted(pending):
            pod = pending[key]
            eviction = client_module.V1Eviction(metadata=client_module.V1ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace))
            try:
                core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, eviction)
            except client_module.ApiException as exc:
                if exc.status == 429:  # "Cannot evict pod as it would violate the pod's disruption budget."
                    refusals += 1
                    continue
                if exc.status != 404:
                    raise DrainError(
                        "the API refused the eviction of pod %s on node %s: %s %s" % (key, name, exc.status, exc.reason), name, evicted, sorted(pending)
                    ) from exc
            evicted.append(key)
            uids[key] = pod.metadata.uid
            del pending[key]
        if pending:
            if clock() + EVICTION_RETRY_SECONDS > deadline:
                raise DrainError(
                    "drain of node %s timed out after %ss: a PodDisruptionBudget still refuses the eviction of %s"
                    % (name, int(timeout_seconds), ", ".join(sorted(pending))),
                    name,
                    evicted,
                    sorted(pending),
                )
            if log:
                log("node %s: %d pod(s) wait for their PodDisruptionBudget; retrying in %ss" % (name, len(pending), EVICTION_RETRY_SECONDS))
            sleep(EVICTION_RETRY_SECONDS)
    while True:
        left = [k for k in evicted if _still_there(core, client_module, k, uids[k])]
        if not left:
            break
        if clock() > deadline:
            message = "drain of node %s timed out after %ss waiting for %s to be deleted" % (name, int(timeout_seconds), ", ".join(left))
            raise DrainError(message, name, evicted, left)
        sleep(DELETE_POLL_SECONDS)
    return {"node": name, "evicted": sorted(evicted), "budget_refusals": refusals}


def _still_there(core, client_module, key, uid):
    namespace, pod_name = key.split("/", 1)
    try:
        pod = core.read_namespaced_pod(pod_name, namespace, _request_timeout=15)
    except client_module.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return pod.metadata.uid == uid


def lower_min_size(autoscaling, asg, remove, min_size):
    """Lower the Auto Scaling group's MinSize to ``min_size`` (the spec's, which kops sets next anyway) when it
    stands above the desired capacity left after removing ``remove`` instances: AWS refuses to decrement the desired
    capacity below the minimum (TerminateInstanceInAutoScalingGroup, ValidationError). Returns whether it wrote."""
    if int(asg.get("MinSize") or 0) <= int(asg.get("DesiredCapacity") or 0) - remove:
        return False
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg["AutoScalingGroupName"], MinSize=int(min_size))
    return True


def terminate_instances(autoscaling, instance_ids, done):
    """Terminate each of ``instance_ids`` through its Auto Scaling group, decrementing the desired capacity
    (``ShouldDecrementDesiredCapacity``), so the group replaces none of them. Each id is appended to ``done`` (a
    list) once AWS took it, so a failure part-way leaves there what was terminated. Returns ``done``.
    :raises botocore.exceptions.ClientError: AWS refused one (the caller names it and ``done``)."""
    for instance_id in instance_ids:
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance_id, ShouldDecrementDesiredCapacity=True)
        done.append(instance_id)
    return done
