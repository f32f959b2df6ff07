# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read-only view of kOps clusters behind ``kops_cluster_info`` and ``kops_instancegroup_info``.

Three sources, each read the way kops itself reads it, none through the kops binary:

- the **state store** (the Cluster and InstanceGroup objects): :mod:`_state_store.reader` (``read_stores`` for ``s3://``
  stores, ``read_file_store`` for ``file://`` stores: the same layout on disk, util/pkg/vfs/fs.go);
- the **cloud side** (:func:`read_cloud_groups`): the Auto Scaling group of each InstanceGroup and its
  instances, and which instances need an update. kops v1.36.2 decides that in
  upup/pkg/fi/cloudup/awsup/aws_cloud.go: an instance needs an update when the launch configuration or
  launch template version it was started from (``findInstanceLaunchConfiguration``) differs from the
  group's current one (``findAutoscalingGroupLaunchConfiguration``, which resolves ``$Latest`` and
  ``$Default`` with DescribeLaunchTemplates); terminating instances and instances EC2 no longer lists are
  skipped (``buildCloudInstance``); instances tagged ``kops.k8s.io/detached-from-asg`` are Detached;
  instances in the warm pool are listed with ``state: WarmPool``. The group of an InstanceGroup is named
  as in pkg/model/names.go ``AutoscalingGroupName``;
- the **Kubernetes API** (optional, :func:`read_nodes`): Nodes, joined to instances by
  ``spec.providerID`` as kops' ``cloudinstances.GetNodeMap`` does.

AWS calls per cluster: DescribeAutoScalingGroups (one per 50 groups), DescribeLaunchTemplates (one, only
for groups on ``$Latest``/``$Default``), DescribeInstances (one paginated call for the cluster),
DescribeWarmPool (one per group that has a warm pool).
"""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import asg_name
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import normalize_role
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import reader
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import s3_client
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import summarize_cluster
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError, normalize_store_url

TAG_CLUSTER = "KubernetesCluster"  # awsup.TagClusterName
TAG_INSTANCE_GROUP = "kops.k8s.io/instancegroup"  # identity_aws.CloudTagInstanceGroupName
TAG_DETACHED = "kops.k8s.io/detached-from-asg"  # awsup tagNameDetachedInstance
TAG_ROLE_PREFIX = "k8s.io/role/"  # awsup.TagNameRolePrefix
LISTED_STATES = ["pending", "running", "stopping", "stopped"]  # awsup findInstances
ASG_BATCH = 50  # awsup FindAutoscalingGroups: names per DescribeAutoScalingGroups request


def _launch_of_group(group):
    """``(name, template id, version)`` of the group's launch configuration or template, as kops'
    ``findAutoscalingGroupLaunchConfiguration`` reads it (version may still be ``$Latest``/``$Default``)."""
    if group.get("LaunchConfigurationName"):
        return group["LaunchConfigurationName"], None, None
    spec = group.get("LaunchTemplate") or ((group.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("LaunchTemplateSpecification") or {}
    return None, spec.get("LaunchTemplateId"), spec.get("Version") or ""


def _launch_of_instance(instance):
    """kops' ``findInstanceLaunchConfiguration``: the launch configuration name, or ``ID:VERSION``, or ''."""
    if instance.get("LaunchConfigurationName"):
        return instance["LaunchConfigurationName"]
    template = instance.get("LaunchTemplate") or {}
    return "%s:%s" % (template["LaunchTemplateId"], template.get("Version") or "") if template.get("LaunchTemplateId") else ""


def _tags(instance):
    return {t.get("Key"): t.get("Value") for t in instance.get("Tags") or []}


def read_cloud_groups(autoscaling, ec2, cluster, instance_groups):
    """The cloud side of ``instance_groups`` (InstanceGroup dicts) of ``cluster`` (str).

    :param autoscaling: boto3 Auto Scaling client; ``ec2``: boto3 EC2 client (both read only).
    :returns: ``{ig name: group}`` for the groups whose Auto Scaling group exists, each ``{'name' (the Auto
        Scaling group), 'min_size', 'desired_capacity', 'max_size', 'launch' (launch configuration name or
        ``TEMPLATE_ID:VERSION``, versions resolved), 'instances': [instance, ...]}`` with each instance
        ``{'id', 'status' ('UpToDate' | 'NeedsUpdate' | 'Detached'), 'need_update' (bool), 'state'
        ('InService', ... or 'WarmPool'), 'lifecycle_state', 'launch', 'zone', 'machine_type',
        'private_ip', 'roles' (['control-plane'] / ['node'] ...)}`` sorted by id.
    :raises botocore.exceptions.ClientError, BotoCoreError: an AWS call failed.
    """
    by_asg = {asg_name(cluster, ig): (ig.get("metadata") or {}).get("name") for ig in instance_groups}
    by_asg.pop(None, None)
    asgs = []
    names = sorted(by_asg)
    for start in range(0, len(names), ASG_BATCH):
        pages = autoscaling.get_paginator("describe_auto_scaling_groups").paginate(AutoScalingGroupNames=names[start : start + ASG_BATCH])
        for page in pages:
            # a group being deleted is skipped, as kops does (its Status is only set then)
            asgs.extend(g for g in page["AutoScalingGroups"] if not g.get("Status"))
    resolve = sorted({t for dummy, t, v in map(_launch_of_group, asgs) if t and v in ("", "$Latest", "$Default")})
    templates = {}
    if resolve:
        for template in ec2.describe_launch_templates(LaunchTemplateIds=resolve)["LaunchTemplates"]:
            templates[template["LaunchTemplateId"]] = template
    instances = {}
    for page in ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "tag:" + TAG_CLUSTER, "Values": [cluster]}, {"Name": "instance-state-name", "Values": LISTED_STATES}]
    ):
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                instances[instance["InstanceId"]] = instance
    groups = {}
    for asg in asgs:
        ig = by_asg.get(asg["AutoScalingGroupName"])
        if ig is None:
            continue
        groups[ig] = _cloud_group(autoscaling, asg, ig, templates, instances)
    return groups


def _cloud_group(autoscaling, asg, ig, templates, instances):
    """One group of :func:`read_cloud_groups` (kops' ``awsBuildCloudInstanceGroup``)."""
    config, template_id, version = _launch_of_group(asg)
    if config:
        launch = config
    else:
        if version in ("", "$Latest", "$Default") and template_id in templates:
            key = "LatestVersionNumber" if version == "$Latest" else "DefaultVersionNumber"
            version = str(templates[template_id][key])
        launch = "%s:%s" % (template_id, version)
    members = list(asg.get("Instances") or [])
    if asg.get("WarmPoolConfiguration"):
        for page in autoscaling.get_paginator("describe_warm_pool").paginate(AutoScalingGroupName=asg["AutoScalingGroupName"]):
            members.extend(page.get("Instances") or [])
    seen, found = set(), []
    for member in members:
        instance_id = member.get("InstanceId")
        if not instance_id:
            continue
        seen.add(instance_id)
        if member.get("LifecycleState") == "Terminating" or instance_id not in instances:
            continue
        current = _launch_of_instance(member)
        status = "UpToDate" if current == launch else "NeedsUpdate"
        state = "WarmPool" if str(member.get("LifecycleState", "")).startswith("Warmed") else "InService"
        found.append(_instance(instances[instance_id], status, state, member.get("LifecycleState"), current))
    for instance_id, instance in sorted(instances.items()):
        tags = _tags(instance)
        if instance_id not in seen and TAG_DETACHED in tags and tags.get(TAG_INSTANCE_GROUP) == ig:
            found.append(_instance(instance, "Detached", "InService", None, None))
    return {
        "name": asg["AutoScalingGroupName"],
        "min_size": asg.get("MinSize"),
        "desired_capacity": asg.get("DesiredCapacity"),
        "max_size": asg.get("MaxSize"),
        "launch": launch,
        "instances": sorted(found, key=lambda i: i["id"]),
    }


def _instance(instance, status, state, lifecycle_state, launch):
    tags = _tags(instance)
    roles = sorted(
        {
            "control-plane" if k[len(TAG_ROLE_PREFIX) :] in ("master", "control-plane") else k[len(TAG_ROLE_PREFIX) :]
            for k in tags
            if k.startswith(TAG_ROLE_PREFIX)
        }
    )
    return {
        "id": instance["InstanceId"],
        "status": status,
        "need_update": status != "UpToDate",
        "state": state,
        "lifecycle_state": lifecycle_state,
        "launch": launch,
        "zone": (instance.get("Placement") or {}).get("AvailabilityZone"),
        "machine_type": instance.get("InstanceType"),
        "private_ip": instance.get("PrivateIpAddress"),
        "roles": roles,
    }


def read_nodes(kubeconfig, context=None, timeout=15):
    """The cluster's Nodes (list of dicts in the API's JSON shape), read with the kubernetes client.

    :raises Exception: what the kubernetes client raises when the API cannot be reached or refuses.
    """
    k8s_client, k8s_config = kops_pdb.kubernetes_client()
    api = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
    items = k8s_client.CoreV1Api(api).list_node(_request_timeout=timeout).items
    return [api.sanitize_for_serialization(node) for node in items]


def node_summary(node):
    """``{'name', 'instance_id', 'instance_group', 'role', 'zone', 'ready' (bool), 'kubelet_version',
    'unschedulable' (bool)}`` of a Node (dict): the role from the ``node-role.kubernetes.io/*`` label,
    the group from ``kops.k8s.io/instancegroup`` (pkg/nodelabels/builder.go)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    status = node.get("status") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return {
        "name": (node.get("metadata") or {}).get("name"),
        "instance_id": kops_pdb.instance_id_of(node),
        "instance_group": labels.get(kops_pdb.INSTANCE_GROUP_LABEL),
        "role": roles[0] if roles else None,
        "zone": labels.get("topology.kubernetes.io/zone"),
        "ready": ready,
        "kubelet_version": (status.get("nodeInfo") or {}).get("kubeletVersion"),
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
    }


def group_info(ig, cluster_summary, cloud=None, nodes=None):
    """One InstanceGroup as the info modules return it.

    :param ig: the InstanceGroup object (dict). :param cluster_summary: :func:`_state_store.summary.summarize_cluster`
        of its cluster (for zones). :param cloud: its entry of :func:`read_cloud_groups`, or None (not read,
        or no Auto Scaling group). :param nodes: ``{instance id: node_summary}`` or None (no kubeconfig).
    :returns: dict: the stored fields (``name``, ``role`` (kops' name: the v1alpha2 API stores ``Master`` for
        ``ControlPlane``), ``min_size``, ``max_size``, ``machine_type``,
        ``image``, ``zones``, ``subnets``, ``spec``), and ``cloud``: None, or the Auto Scaling group with its
        ``instances`` (each with ``node``: its node's name or None when a kubeconfig was given) and the counts
        ``need_update``/``ready`` and ``status`` as ``kops rolling-update cluster`` shows them (NeedsUpdate when
        an instance needs one, else Ready).
    """
    name = (ig.get("metadata") or {}).get("name")
    summary = next((g for g in cluster_summary["instance_groups"] if g["name"] == name), {})
    result = dict(summary, spec=ig.get("spec") or {}, role=normalize_role(summary.get("role")))
    if cloud is not None:
        cloud = dict(cloud, instances=[dict(i) for i in cloud["instances"]])
        for instance in cloud["instances"]:
            if nodes is not None:
                instance["node"] = (nodes.get(instance["id"]) or {}).get("name")
        need = sum(1 for i in cloud["instances"] if i["need_update"])
        cloud.update(need_update=need, ready=len(cloud["instances"]) - need, status="NeedsUpdate" if need else "Ready")
    result["cloud"] = cloud
    return result


def cluster_info(record, cloud=None, nodes=None, validation=None):
    """One cluster as ``kops_cluster_info`` returns it: :func:`_state_store.summary.summarize_cluster` of ``record``
    (a :func:`_state_store.reader.read_stores` record) plus ``spec`` (the stored cluster spec), ``instance_groups``
    replaced by :func:`group_info` of each group, ``nodes`` (list of :func:`node_summary`, or None without a
    kubeconfig), ``needs_update`` (names of the groups with an instance that needs an update) and
    ``validation`` (kops' result, or None when not asked for)."""
    info = summarize_cluster(record)
    info["spec"] = (record.get("cluster") or {}).get("spec") or {}
    by_instance = {n["instance_id"]: n for n in nodes or [] if n["instance_id"]}
    info["instance_groups"] = [
        group_info(ig, info, (cloud or {}).get((ig.get("metadata") or {}).get("name")), by_instance if nodes is not None else None)
        for ig in record.get("instance_groups") or []
    ]
    info["needs_update"] = [g["name"] for g in info["instance_groups"] if g["cloud"] and g["cloud"]["need_update"]]
    info["nodes"] = nodes
    info["validation"] = validation
    return info


def read_records(module, state_store, names=None):
    """The stored clusters of ``state_store`` (``names``: only these, list of str; missing ones are left out),
    as :func:`_state_store.reader.read_stores` records. Fails the module naming the store when it cannot be read."""
    try:
        if state_store.startswith("file://"):
            return reader.read_file_store(state_store, names)
        store = normalize_store_url(state_store)
        return reader.read_stores(s3_client(module), [store], names={store: list(names)} if names else None)
    except (StoreError, ValueError, OSError) as exc:
        module.fail_json(msg="state_store: %s" % exc)


def cloud_and_nodes(module, record, read_cloud=True, kubeconfig=None, kube_context=None):
    """``(cloud groups or None, node summaries or None)`` of one cluster record: the Auto Scaling groups read
    from AWS (when ``read_cloud``) and the Nodes through ``kubeconfig`` (when given; ``kube_context`` or the
    context named after the cluster). Fails the module naming the cluster and what could not be read."""
    from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

    name = record["name"]
    cloud = nodes = None
    if read_cloud:
        retry = AWSRetry.jittered_backoff()
        try:
            cloud = read_cloud_groups(
                module.client("autoscaling", retry_decorator=retry), module.client("ec2", retry_decorator=retry), name, record["instance_groups"]
            )
        except Exception as exc:  # botocore's ClientError/BotoCoreError; fail_json_aws formats both
            module.fail_json_aws(exc, msg="cannot read the Auto Scaling groups and instances of cluster %s" % name)
    if kubeconfig:
        context = kube_context or kops_pdb.default_context(kubeconfig, name)
        try:
            nodes = [node_summary(n) for n in read_nodes(kubeconfig, context)]
        except Exception as exc:  # the kubernetes client raises many types (urllib3, ApiException, ConfigException)
            module.fail_json(
                msg="kubeconfig: cannot list the nodes of cluster %s through %s (%s: %s)"
                % (name, kubeconfig, type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else "")
            )
        nodes.sort(key=lambda n: n["name"] or "")
    return cloud, nodes
