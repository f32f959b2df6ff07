# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``kops rolling-update cluster``: flags from options, and which instances a roll replaced.

Flags mirror cmd/kops/rolling-update_cluster.go of kops v1.36.2; each option maps to the flag of
the same meaning. Order of a roll (pkg/instancegroups/rollingupdate.go): bastions, then the control
plane one group at a time, then API servers, then nodes.
"""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import argv as kops_argv
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import instance_group_of_asg
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import normalize_role

try:
    from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry
except ImportError:  # pragma: no cover - amazon.aws is a dependency of the collection (galaxy.yml)
    AWSRetry = None

ROLES = ("control-plane", "apiserver", "node", "bastion")
DURATION_OPTIONS = ("validation_timeout", "drain_timeout", "control_plane_interval", "node_interval", "bastion_interval", "post_drain_delay")
DURATION_FLAGS = tuple((option, kops_argv.FLAGS[option][0]) for option in DURATION_OPTIONS)  # (option, kops flag)
# rolling_update options passed to kops, in argv order (their flags and formats: kops_argv.FLAGS)
ROLLING_UPDATE_OPTIONS = (
    ("instance_groups", "instance_group_roles", "cloudonly", "force")
    + DURATION_OPTIONS
    + (
        "validate_count",
        "fail_on_validate_error",
        "fail_on_drain_error",
    )
)


def rolling_role(value):
    """A ``--instance-group-roles`` value as kops reads it (pkg/apis/kops/parse.go ParseInstanceGroupRole, lenient, as
    cmd/kops/rolling-update_cluster.go:329 calls it): case-insensitive, a plural ``s`` dropped, ``controlplane`` and
    ``master`` for the control plane (the guides' ``Node``, ``Master``, ``nodes``). Returns the kops name
    (one of :data:`ROLES`). :raises RuleError: a role kops does not know."""
    found = str(value).lower()
    if found.endswith("s"):
        found = found[:-1]
    found = found.replace("controlplane", "control-plane", 1)
    if found == "master":
        return "control-plane"
    for role in ROLES:
        if role.rstrip("s") == found:
            return role
    raise RuleError("instance_group_roles: %r is not one of %s (any case, plural, or master for control-plane)" % (value, ", ".join(ROLES)))


def rolling_update_args(cluster, params, yes):
    """argv (list of str) after ``kops`` for ``rolling-update cluster``.

    :param params: module options (dict); ``None`` values are left to kops' defaults.
    :param yes: add ``--yes`` (roll) instead of listing what needs it.
    :raises RuleError: an unknown role, a negative validate_count.
    """
    values = dict(params, instance_group_roles=[rolling_role(role) for role in params.get("instance_group_roles") or []])
    if params.get("validate_count") is not None and params["validate_count"] < 0:
        raise RuleError("validate_count: must be 0 or more")
    return kops_argv.command(["rolling-update", "cluster"], [("name", cluster)] + [(o, values.get(o)) for o in ROLLING_UPDATE_OPTIONS] + [("yes", yes)])


# kops tags every cloud resource of a cluster with KubernetesCluster=<cluster name> (pkg/model/context.go
# CloudTags, awsup.TagClusterName in upup/pkg/fi/cloudup/awsup/aws_cloud.go).
CLUSTER_TAG = "KubernetesCluster"


def _retried(function):
    return AWSRetry.jittered_backoff()(function) if AWSRetry is not None else function


@_retried
def cluster_auto_scaling_groups(client, cluster):
    """The cluster's Auto Scaling groups (list of DescribeAutoScalingGroups items): only the groups tagged
    ``KubernetesCluster=<cluster>`` (a filter AWS applies, so an account's other groups are not read), every page.

    The whole listing is retried (jittered backoff on throttling), as amazon.aws does for paginators: a
    client's retry decorator does not apply to a paginator's calls.

    :param client: a boto3 ``autoscaling`` client. :raises botocore.exceptions.ClientError: after retries.
    """
    paginator = client.get_paginator("describe_auto_scaling_groups")
    pages = paginator.paginate(Filters=[{"Name": "tag:" + CLUSTER_TAG, "Values": [cluster]}])
    return pages.build_full_result().get("AutoScalingGroups", [])


def group_instances(groups, cluster):
    """``{instance group name: sorted instance ids}`` from DescribeAutoScalingGroups items of ``cluster``; the
    InstanceGroup of each group is read from the name kops gave it (``_kops.facts.instance_group_of_asg``)."""
    result = {}
    for group in groups:
        ig = instance_group_of_asg(group["AutoScalingGroupName"], cluster)
        if ig is not None:
            result[ig] = sorted(i["InstanceId"] for i in group.get("Instances", []))
    return result


# kops tags an instance it detaches from its Auto Scaling group (a surge: maxSurge, the AWS default) with the group's
# name before DetachInstances (upup/pkg/fi/cloudup/awsup/aws_cloud.go detachInstance, tagNameDetachedInstance); the
# instance keeps running, out of the group, until kops drains and terminates it (a later run finishes it).
DETACHED_TAG = "kops.k8s.io/detached-from-asg"


@_retried
def detached_instances(client, cluster):
    """The cluster's instances kops detached from their Auto Scaling groups and not yet terminated: a list (sorted by
    instance id) of ``{'instance', 'instance_group', 'auto_scaling_group', 'state'}``, read with DescribeInstances
    (tagged ``KubernetesCluster=<cluster>`` and :data:`DETACHED_TAG`; every page). :param client: a boto3 ``ec2``
    client. :raises botocore.exceptions.ClientError: after retries."""
    paginator = client.get_paginator("describe_instances")
    pages = paginator.paginate(
        Filters=[
            {"Name": "tag:" + CLUSTER_TAG, "Values": [cluster]},
            {"Name": "tag-key", "Values": [DETACHED_TAG]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
        ]
    )
    found = []
    for reservation in pages.build_full_result().get("Reservations", []):
        for instance in reservation.get("Instances", []):
            tags = dict((t["Key"], t["Value"]) for t in instance.get("Tags", []))
            found.append(
                {
                    "instance": instance["InstanceId"],
                    "instance_group": tags.get("kops.k8s.io/instancegroup"),
                    "auto_scaling_group": tags[DETACHED_TAG],
                    "state": instance["State"]["Name"],
                }
            )
    return sorted(found, key=lambda i: i["instance"])


def left_behind(detached):
    """What a stopped roll left, one str per detached instance (:func:`detached_instances`), for messages and the
    interruption note."""
    return [
        "instance %s of group %s detached from its Auto Scaling group %s and %s (its node cordoned or drained; a re-run of "
        "the rolling update drains and terminates it)" % (i["instance"], i["instance_group"], i["auto_scaling_group"], i["state"])
        for i in detached
    ]


def replaced(before, after):
    """Per group, the instances that went and came: ``{ig: {'before': [...], 'after': [...]}}`` for groups that changed."""
    changes = {}
    for ig in sorted(set(before) | set(after)):
        gone = sorted(set(before.get(ig, [])) - set(after.get(ig, [])))
        new = sorted(set(after.get(ig, [])) - set(before.get(ig, [])))
        if gone or new:
            changes[ig] = {"before": gone, "after": new}
    return changes


def roll_report(log, changes, would_roll, succeeded=False):
    """Per group, what a roll did: kops' log (:func:`rolling_log.parse_rolling_log`) joined with the
    instances read from AWS before and after (:func:`replaced`).

    :param log: the parsed log (dict). :param changes: ``{ig: {'before': [...], 'after': [...]}}``.
    :param would_roll: the groups that needed a roll (list of str), in kops' order.
    :param succeeded: kops exited 0. kops logs "Completed rolling update" after its pass over the groups
        even when some failed (pkg/instancegroups/rollingupdate.go), so only a successful run marks every
        group of ``would_roll`` done.
    :returns: ``(groups, remaining)``: ``groups`` is a list in the order kops rolled them of ``{'name',
        'instances': [{'old', 'new', 'node'}], 'nodes_drained', 'pods_evicted' (count), 'evicted'
        ({node: [NS/POD]}), 'evictions_refused' (count of refused eviction attempts, e.g. by a
        PodDisruptionBudget, each retried by kops' drain), 'refusals' (the first few: pod and reason),
        'validations' (count), 'validation_seconds', 'validation_failures' (messages), 'seconds',
        'done' (bool: every old instance stopped)}``; ``remaining`` lists the groups of ``would_roll``
        not done (in kops' order).
    """
    groups = []
    for name in log["order"]:
        entry = log["groups"][name]
        new = list((changes.get(name) or {}).get("after", []))
        instances = []
        for index, inst in enumerate(entry["instances"]):
            instances.append({"old": inst["id"], "node": inst["node"], "stopped": inst["stopped"], "new": new[index] if index < len(new) else None})
        validations = entry["validations"]
        groups.append(
            {
                "name": name,
                "instances": instances,
                "nodes_drained": entry["nodes_drained"],
                "pods_evicted": sum(len(p) for p in entry["pods_evicted"].values()),
                "evicted": entry["pods_evicted"],
                "evictions_refused": len(entry["evictions_refused"]),
                "refusals": entry["evictions_refused"][:5],
                "validations": len(validations),
                "validation_seconds": round(sum(v["seconds"] or 0 for v in validations), 3),
                "validation_failures": [v["message"] for v in validations if not v["ok"]],
                "seconds": entry["seconds"],
                "done": bool(instances) and all(i["stopped"] for i in instances),
            }
        )
    done = {g["name"] for g in groups if g["done"]}
    if succeeded and log.get("completed"):
        done |= set(would_roll) - set(log.get("disabled") or [])
    remaining = [g for g in would_roll if g not in done]
    return groups, remaining


def drain_disabled(cluster, groups):
    """The groups whose rolling update kops disables, with why: ``{ig name: reason}``.

    kops resolves ``rollingUpdate.drainAndTerminate`` from the InstanceGroup, else the Cluster, else true
    (pkg/instancegroups/settings.go:27-46 resolveSettings), and when it is false a roll of the group still
    validates the cluster, taints its nodes and detaches up to ``maxSurge`` instances for new ones before it stops
    with "Rolling updates for InstanceGroup ... are disabled" (pkg/instancegroups/instancegroups.go:146-240
    rollingUpdateInstanceGroup). So such groups never become up to date through a roll.

    :param cluster: the Cluster object (v1alpha2 dict) or None; ``groups``: ``{ig name: InstanceGroup dict}``.
    """
    default = ((cluster or {}).get("spec") or {}).get("rollingUpdate") or {}
    disabled = {}
    for name, group in (groups or {}).items():
        own = ((group.get("spec") or {}).get("rollingUpdate") or {}).get("drainAndTerminate")
        if own is False:
            disabled[name] = "rollingUpdate.drainAndTerminate: false on the InstanceGroup"
        elif own is None and default.get("drainAndTerminate") is False:
            disabled[name] = "rollingUpdate.drainAndTerminate: false in the cluster spec (the InstanceGroup sets none)"
    return disabled


# pkg/instancegroups/rollingupdate.go:110-235 RollingUpdate: bastions, the control plane, API servers, nodes
ROLL_PHASES = ("Bastion", "ControlPlane", "APIServer", "Node")


def roll_order(names, groups):
    """The groups ``names`` in the order kops rolls them (pkg/instancegroups/rollingupdate.go:110-235 RollingUpdate):
    bastions first, then the control plane, then API servers, then nodes, each phase by name (``sortGroups``: Go's
    ``sort.Strings``, byte order).

    :param names: ig names (list of str), e.g. RV(would_roll).
    :param groups: ``{ig name: InstanceGroup dict}`` (``spec.role`` read with kops_spec.normalize_role); a name
        missing from it counts as a node group, kops' default role.
    :returns: list of ``{'name', 'role'}`` (role in the ControlPlane spelling).
    """

    def role(name):
        found = normalize_role(((groups or {}).get(name, {}).get("spec") or {}).get("role") or "Node")
        return found if found in ROLL_PHASES else "Node"

    ordered = sorted(names, key=lambda name: (ROLL_PHASES.index(role(name)), name.encode()))
    return [{"name": name, "role": role(name)} for name in ordered]


def roll_args(cluster, params, groups):
    """argv of the ``--yes`` call that rolls exactly ``groups`` (list of ig names, kops' order kept by kops itself):
    :func:`rolling_update_args` with ``--instance-group`` naming them (kops intersects it with
    ``--instance-group-roles``, cmd/kops/rolling-update_cluster.go:301-343)."""
    return rolling_update_args(cluster, dict(params, instance_groups=list(groups)), yes=True)
