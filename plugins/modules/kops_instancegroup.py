#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: kops_instancegroup
short_description: Manage a kOps InstanceGroup (an Auto Scaling group of a cluster)
version_added: 0.1.0
description:
  - Creates (C(kops create -f)), converges (C(kops replace), only when a given field differs) or deletes
    (C(kops delete instancegroup --yes)) one InstanceGroup of a cluster in a kOps state store.
  - Fields not given are left as they are. Dict options merge into the stored value (keys not given are kept,
    C(null) removes a key); list and scalar options replace it. Check mode and C(--diff) show the merged result.
    Every option is checked against kops' own InstanceGroup
    rules (pkg/apis/kops/validation/instancegroup.go and aws.go) before kops runs.
  - With O(apply=true), plans with C(kops update cluster) and applies (C(--yes)) only a non-empty plan. This is
    also how drift is repaired; when the Auto Scaling group was changed outside kops, the plan shows
    it and the apply brings the group back to the spec. With O(plan_before_apply=false), a run that wrote
    the group applies without the dry run.
  - Check mode writes nothing; with O(apply=true) it still shows the exact cloud plan of the change,
    computed from a temporary copy of the specs (the state store is only read).
author:
  - kopsible maintainers (!UNKNOWN)
options:
  cluster:
    description: Name of the cluster.
    type: str
    required: true
  name:
    description: Name of the InstanceGroup, e.g. C(nodes-us-east-1a).
    type: str
    required: true
  role:
    description:
      - C(ControlPlane), C(Node), C(Bastion) or C(APIServer); C(Master) is accepted for C(ControlPlane).
      - Required to create a group; compared with the stored one otherwise.
    type: str
  state:
    description: Whether the InstanceGroup should exist. The last control-plane group cannot be deleted.
    type: str
    choices: [present, absent]
    default: present
  apply:
    description: Apply the cluster's plan (C(kops update cluster --yes)) when it is not empty.
    type: bool
    default: false
  allow_kops_downgrade:
    description:
      - Apply although a newer kops applied the cluster last (C(kops update cluster --allow-kops-downgrade)). With
        V(false) the module refuses, before its first write, to change a cluster whose C(kops-version.txt) names a
        newer kops than O(kops_binary) (kops' own rule, upup/pkg/fi/cloudup/apply_cluster.go, which kops checks only at
        apply).
    type: bool
    default: false
  min_size: {description: Minimum size of the Auto Scaling group., type: int}
  max_size: {description: Maximum size (at least O(min_size))., type: int}
  machine_type: {description: "Instance type, e.g. C(t3.medium).", type: str}
  image: {description: "Machine image (C(ami-...), C(owner/name) or C(ssm:...)).", type: str}
  subnets: {description: Subnets of the cluster spec to run in (names such as C(us-east-1a))., type: list, elements: str}
  zones: {description: Availability zones to run in., type: list, elements: str}
  node_labels:
    description:
      - Kubernetes node labels; keys and values as kubelet registers them (a key of at most 63 characters with an optional
        DNS-subdomain prefix and one C(/), a value of at most 63 characters).
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
  taints: {description: "Taints, C(key=value:Effect) with Effect C(NoSchedule), C(PreferNoSchedule) or C(NoExecute).", type: list, elements: str}
  cloud_labels:
    description:
      - Tags of the group's cloud resources (the Auto Scaling group and its instances).
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
  suspend_processes: {description: Auto Scaling processes to suspend (e.g. C(AZRebalance))., type: list, elements: str}
  instance_protection: {description: Protect new instances from scale-in., type: bool}
  instance_metadata:
    description:
      - IMDS settings.
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
    suboptions:
      http_tokens: {description: "C(required) for IMDSv2, or C(optional).", type: str}
      http_put_response_hop_limit: {description: Hop limit of the metadata PUT response (1-64)., type: int}
  detailed_instance_monitoring: {description: CloudWatch detailed monitoring., type: bool}
  external_load_balancers:
    description:
      - Load balancers to attach, each with one of C(load_balancer_name) or C(target_group_arn); at most 10 classic ones.
      - A list; it replaces the stored list.
    type: list
    elements: dict
    suboptions:
      load_balancer_name: {description: "Name of a classic ELB (at most 32 characters).", type: str}
      target_group_arn: {description: "ARN of a target group (C(arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)).", type: str}
  additional_user_data:
    description:
      - Extra cloud-init parts.
      - A list; it replaces the stored list. The rendered user data (kops' nodeup script plus these parts) must fit
        EC2's 16,384 bytes; it is measured before anything is written (RV(user_data_bytes)).
        O(compress_user_data) does not compress these parts.
    type: list
    elements: dict
    suboptions:
      name: {description: File name of the part (not empty)., type: str, required: true}
      type:
        description: MIME type of the part.
        type: str
        required: true
        choices: [text/x-include-once-url, text/x-include-url, text/cloud-config-archive, text/upstart-job, text/cloud-config, text/part-handler,
                  text/x-shellscript, text/cloud-boothook]
      content: {description: The part's text (not empty)., type: str, required: true}
  compress_user_data: {description: "Compress kops' own kube_env inside the nodeup script (gzip, base64); additional parts are not compressed.", type: bool}
  packages: {description: Extra OS packages to install., type: list, elements: str}
  sysctl_parameters: {description: "Kernel parameters, C(name=value).", type: list, elements: str}
  mixed_instances_policy:
    description:
      - Spot/mixed instances.
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed. C(instances) is a list and replaces the stored list.
    type: dict
    suboptions:
      instances: {description: Instance types to mix., type: list, elements: str}
      instance_requirements:
        description: Attribute-based instance type selection.
        type: dict
        suboptions:
          cpu:
            description: vCPU range.
            type: dict
            suboptions:
              min: {description: "Lowest number of vCPUs (a Kubernetes quantity, e.g. C(2)).", type: raw}
              max: {description: Highest number of vCPUs., type: raw}
          memory:
            description: Memory range.
            type: dict
            suboptions:
              min: {description: "Least memory (a Kubernetes quantity, e.g. C(4Gi)).", type: raw}
              max: {description: Most memory., type: raw}
          excluded_instance_types: {description: Instance types never to use., type: list, elements: str}
      on_demand_allocation_strategy: {description: "How on-demand capacity is filled (e.g. C(prioritized)).", type: str}
      on_demand_base: {description: "On-demand instances before any spot (0 or more, at most the group's max size).", type: int}
      on_demand_above_base: {description: Percentage of on-demand instances above the base (0-100)., type: int}
      spot_allocation_strategy:
        description: "C(lowest-price), C(diversified), C(capacity-optimized), C(capacity-optimized-prioritized) or C(price-capacity-optimized)."
        type: str
      spot_instance_pools: {description: Spot pools to spread over (0 or more)., type: int}
  capacity_rebalance: {description: Capacity rebalancing for spot instances., type: bool}
  warm_pool:
    description:
      - "Warm pool (Node/APIServer groups, not with O(max_price)). C(max_size: 0) turns it off."
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
    suboptions:
      min_size: {description: Instances kept in the pool (0 or more)., type: int}
      max_size: {description: "Most instances in the pool and group together (at least C(min_size)); 0 turns the pool off.", type: int}
      enable_lifecycle_hook: {description: Add a lifecycle hook so that nodeup finishes before an instance enters the pool., type: bool}
      lifecycle_hook_timeout: {description: Seconds the lifecycle hook waits., type: int}
      additional_images: {description: Extra container images to pull while warming., type: list, elements: str}
  max_instance_lifetime: {description: "Replace instances older than this, a duration of at least C(24h) (or C(0) for never).", type: str}
  root_volume:
    description:
      - "Root volume; 0 for a number means kops' default."
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
    suboptions:
      size: {description: Size in GB., type: int}
      type: {description: "C(standard), C(gp3), C(gp2), C(io1) or C(io2).", type: str}
      iops: {description: Provisioned IOPS., type: int}
      throughput: {description: Throughput in MiB/s (gp3)., type: int}
      encryption: {description: Encrypt the volume., type: bool}
      encryption_key: {description: KMS key of the encryption., type: str}
      delete_on_termination: {description: Delete the volume with the instance., type: bool}
      optimization: {description: EBS-optimized instances., type: bool}
  max_price: {description: Maximum spot price., type: str}
  rolling_update:
    description:
      - Rolling update settings of the group.
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
    suboptions:
      max_surge: {description: "Extra instances during the update, a count or a percentage (C(20%)).", type: raw}
      max_unavailable: {description: "Instances that may be unavailable during the update, a count or a percentage.", type: raw}
      drain_and_terminate: {description: Drain and terminate the instances (false only cordons)., type: bool}
  spec:
    description:
      - Any other InstanceGroup spec fields (v1alpha2 names).
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed. Nested dicts merge the same way; lists replace.
    type: dict
  kubeconfig:
    description:
      - A kubeconfig for the cluster's Kubernetes API, to drain a scale-down. With O(apply=true), when the group's new
        maximum is below its Auto Scaling group's desired capacity, the run chooses the instances AWS would remove (by
        the group's termination policies, zone balance first, then each policy in order, C(Default) last; where AWS
        picks at random, the lowest instance id), cordons and drains their Nodes as kops drains a node it rolls
        (evictions through the Eviction API, DaemonSet and mirror pods left, an eviction a PodDisruptionBudget refuses
        retried every 5 s until O(drain_timeout)), terminates exactly those instances with the desired capacity
        decremented, and then applies. RV(scale_down) reports it.
      - Without it, the same instances are named in RV(scale_down) and a warning, and AWS terminates them undrained
        when kops lowers the maximum. In check mode nothing is drained or terminated.
    type: path
  kube_context:
    description: Context of O(kubeconfig) to use; default the context named after the cluster (as C(kops export kubecfg) names it), else the current context.
    type: str
  drain_timeout:
    description: How long the drain of a scale-down may take, a Go duration (kops' C(--drain-timeout), whose default is 15m).
    type: str
    default: 15m
extends_documentation_fragment:
  - kopsible.kops.kops
  - kopsible.kops.kops.apply
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
requirements:
  - kubernetes (Python client), only to drain a scale-down (O(kubeconfig))
notes:
  - Deleting a group (O(state=absent)) removes its Auto Scaling group without a drain, as C(kops delete instancegroup)
    does; scale it to 0 with O(kubeconfig) first to drain it.
  - Supports check mode and diff mode; a second identical run reports C(changed=false) after one kops call
    (C(kops get)), two with O(apply=true).
"""

EXAMPLES = r"""
- name: Scale the workers of us-east-1a to 3 (preview with --check --diff first)
  kopsible.kops.kops_instancegroup:
    cluster: mycluster01.kopsclustertest.example.org
    name: nodes-us-east-1a
    min_size: 3
    max_size: 3
    apply: true

- name: Scale the workers of us-east-1a down to 2, draining the instances that go (preview with --check first)
  kopsible.kops.kops_instancegroup:
    cluster: mycluster01.kopsclustertest.example.org
    name: nodes-us-east-1a
    min_size: 2
    max_size: 2
    apply: true
    kubeconfig: ~/.kube/mycluster01
    drain_timeout: 10m

- name: Scale and apply at once, without the dry run (the run wrote the spec, so it applies straight away)
  kopsible.kops.kops_instancegroup:
    cluster: mycluster01.kopsclustertest.example.org
    name: nodes-us-east-1a
    min_size: 4
    max_size: 4
    apply: true
    plan_before_apply: false

- name: A spot node group with mixed instances, IMDSv2 and a taint
  kopsible.kops.kops_instancegroup:
    cluster: mycluster01.kopsclustertest.example.org
    name: spot-nodes
    role: Node
    subnets: [us-east-1a, us-east-1b]
    machine_type: m5.large
    min_size: 0
    max_size: 10
    instance_metadata: {http_tokens: required, http_put_response_hop_limit: 1}
    mixed_instances_policy:
      instances: [m5.large, m5a.large, m6i.large]
      on_demand_base: 0
      on_demand_above_base: 0
      spot_allocation_strategy: price-capacity-optimized
    capacity_rebalance: true
    taints: ["spot=true:PreferNoSchedule"]
    apply: true
"""

RETURN = r"""
cluster:
  description: The normalised cluster name.
  returned: always
  type: str
name:
  description: The InstanceGroup's name.
  returned: always
  type: str
instance_group:
  description: The group after the run (name, role, min/max size, machine type, and the zones of its subnets).
  returned: when state=present
  type: dict
spec:
  description:
    - The InstanceGroup spec after the run, as kops stored it (read back with C(kops get) after a change).
    - In check mode, what kops stored in a temporary copy of the cluster's specs after the run's own C(kops replace)
      (or C(kops create -f)) there, that is kops' values, not the options (the copy is removed at the end of the run).
  returned: when state=present
  type: dict
dropped_fields:
  description:
    - Fields of the group's spec (dotted paths) that kops did not keep when it stored the group (in check mode, in the
      temporary copy). kops drops a field its API does not know without a word, so these are usually misspelled
      (O(spec)); the run also warns.
  returned: when kops dropped a field
  type: list
  elements: str
  sample: [spec.rootVolume.sizee]
changes:
  description: Field-level spec changes (path, before, after) written or that would be written.
  returned: always
  type: list
  elements: dict
plan:
  description:
    - The cluster's cloud plan (create, modify, delete, ignored), exact in check mode too.
    - Null when the dry run was skipped (O(plan_before_apply=false)).
  returned: when apply=true
  type: dict
plan_summary:
  description: "One line per planned item, e.g. C(modify AutoscalingGroup/nodes...: MaxSize 2 -> 3, MinSize 2 -> 3); empty when the dry run was skipped."
  returned: when apply=true
  type: list
  elements: str
plan_note:
  description: Why RV(plan) is missing or null (the dry run skipped with O(plan_before_apply=false); in check mode, a new cluster).
  returned: when O(apply=true) and no plan was computed
  type: str
scale_down:
  description:
    - The instances an apply of a lower maximum removes, chosen before kops ran, and what was done to them.
    - C(auto_scaling_group), C(desired_capacity) (before), C(max_size) (after), C(termination_policies) (the
      group's), C(instances) (the ids chosen; in check mode or without O(kubeconfig), the ones AWS would remove),
      C(drained) (whether they were drained), C(nodes_drained), C(pods_evicted) (C(namespace/name)),
      C(budget_refusals) (evictions a PodDisruptionBudget refused before letting them through),
      C(instances_terminated).
  returned: when O(apply=true) lowers the maximum below the desired capacity
  type: dict
  sample:
    auto_scaling_group: nodes-us-east-1a.mycluster01.kopsclustertest.example.org
    desired_capacity: 3
    max_size: 2
    termination_policies: [Default]
    instances: [i-0a1b2c3d4e5f60718]
    drained: true
    nodes_drained: [i-0a1b2c3d4e5f60718.ec2.internal]
    pods_evicted: [default/web-5d8c7b9f6-abcde]
    budget_refusals: 1
    instances_terminated: [i-0a1b2c3d4e5f60718]
kops_invocations:
  description:
    - The kops commands this run made (argv without secrets, rc, seconds).
    - In check mode, the commands kops ran against a temporary copy of the cluster's specs (C(kops replace),
      C(kops upgrade cluster --yes), C(kops get), the dry run of C(kops update cluster)) carry C(store=scratch);
      they wrote only that copy, which is removed at the end of the run.
  returned: always
  type: list
  elements: dict
previous_versions:
  description:
    - The state-store objects this run replaced with C(kops replace) and their version ids before it
      (C(null) when the object did not exist; C("null") when the bucket was never versioned). Restore one with
      C(aws s3api copy-object --copy-source BUCKET/KEY?versionId=ID --bucket BUCKET --key KEY).
  returned: always
  type: dict
  sample: {"s3://kops-state/mycluster01.kopsclustertest.example.org/config": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"}
user_data_bytes:
  description:
    - The size of the launch template user data kops would render for the group (nodeup script as kops last rendered
      it plus the additional parts in kops' MIME framing); more than 16384 fails before anything is written.
    - Null when no launch template of the group or of a group of its role exists yet (nothing to measure from).
  returned: when O(additional_user_data) (or O(compress_user_data)) changes
  type: int
state_store_safety:
  description:
    - C(versioning_warning) (str or null, also shown as a warning), C(lock) (C(url), C(waited_seconds),
      C(waited_for) (the owner of the lock this run waited for, or null),
      C(broken), the content of a lock removed with O(break_lock), C(replanned), true when another run wrote the
      spec while this one waited, so it planned again on the new spec) or null when no lock was taken (check mode,
      nothing to write), C(account) (the AWS account checked against O(allowed_account_ids), or null).
    - C(interrupted_run), the note an earlier run left when it was interrupted (SIGINT, SIGTERM, SIGHUP) while it held
      the lock (C(module), C(signal), C(at), C(host), C(pid), C(msg), C(left), C(written); also shown as a warning)
      or null; C(interruption_note), the note this run left when it was interrupted, or null. The next successful run
      of the interrupted module, holding the lock, deletes the note.
  returned: always
  type: dict
"""


from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops import user_data
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.instancegroup_state import ensure_and_apply
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import KopsRun, checked


def _options(**fields):
    """Suboptions of a dict option that patches the stored value: no defaults and nothing required, so that a key
    not given keeps the stored one (KopsModule drops the ``None`` the argument spec fills in for it) and ``null``
    removes it; enumerations are kops rules (kops_ig), since ``null`` must stay allowed."""
    return dict((name, dict(type=kind) if isinstance(kind, str) else kind) for name, kind in fields.items())


MIN_MAX = dict(type="dict", options=_options(min="raw", max="raw"))  # resource.Quantity, e.g. 2 or "4Gi"


def argument_spec():
    spec = kops_argument_spec()
    spec.update(
        cluster=dict(type="str", required=True),
        name=dict(type="str", required=True),
        role=dict(type="str"),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        apply=dict(type="bool", default=False),
        allow_kops_downgrade=dict(type="bool", default=False),
        plan_before_apply=dict(type="bool", default=True),
        min_size=dict(type="int"),
        max_size=dict(type="int"),
        machine_type=dict(type="str"),
        image=dict(type="str"),
        subnets=dict(type="list", elements="str"),
        zones=dict(type="list", elements="str"),
        node_labels=dict(type="dict"),
        taints=dict(type="list", elements="str"),
        cloud_labels=dict(type="dict"),
        suspend_processes=dict(type="list", elements="str"),
        instance_protection=dict(type="bool"),
        instance_metadata=dict(type="dict", options=_options(http_tokens=dict(type="str", no_log=False), http_put_response_hop_limit="int")),
        detailed_instance_monitoring=dict(type="bool"),
        external_load_balancers=dict(
            type="list",
            elements="dict",
            options=_options(load_balancer_name="str", target_group_arn="str"),
            # instancegroup.go validateExternalLoadBalancer: Forbidden when both are set
            mutually_exclusive=[("load_balancer_name", "target_group_arn")],
        ),
        additional_user_data=dict(
            type="list",
            elements="dict",
            # a list replaces the stored one, so its items are whole: instancegroup.go validateExtraUserData
            options=dict(
                name=dict(type="str", required=True),
                type=dict(type="str", required=True, choices=list(user_data.USER_DATA_TYPES)),
                content=dict(type="str", required=True),
            ),
        ),
        compress_user_data=dict(type="bool"),
        packages=dict(type="list", elements="str"),
        sysctl_parameters=dict(type="list", elements="str"),
        mixed_instances_policy=dict(
            type="dict",
            options=_options(
                instances=dict(type="list", elements="str"),
                instance_requirements=dict(
                    type="dict", options=_options(cpu=MIN_MAX, memory=MIN_MAX, excluded_instance_types=dict(type="list", elements="str"))
                ),
                on_demand_allocation_strategy="str",
                on_demand_base="int",
                on_demand_above_base="int",
                spot_allocation_strategy="str",
                spot_instance_pools="int",
            ),
        ),
        capacity_rebalance=dict(type="bool"),
        warm_pool=dict(
            type="dict",
            options=_options(
                min_size="int",
                max_size="int",
                enable_lifecycle_hook="bool",
                lifecycle_hook_timeout="int",
                additional_images=dict(type="list", elements="str"),
            ),
        ),
        max_instance_lifetime=dict(type="str"),
        root_volume=dict(
            type="dict",
            options=_options(
                size="int",
                type="str",
                iops="int",
                throughput="int",
                encryption="bool",
                encryption_key=dict(type="str", no_log=False),  # a KMS key id or ARN, not a secret
                delete_on_termination="bool",
                optimization="bool",
            ),
        ),
        max_price=dict(type="str"),
        # IntOrString (a count or a percentage such as "20%")
        rolling_update=dict(type="dict", options=_options(max_surge="raw", max_unavailable="raw", drain_and_terminate="bool")),
        spec=dict(type="dict"),
        kubeconfig=dict(type="path"),
        kube_context=dict(type="str"),
        drain_timeout=dict(type="str", default="15m"),
    )
    return spec


def check_name(params):
    """IG names are DNS labels or subdomains (kops_rules.instance_group_name)."""
    kops_rules.instance_group_name(params["name"], "name")


def check_names(params):
    """The names kops is called with and the flags it parses, before anything runs; every other rule runs once, on the
    merged spec (ensure). Raises kops_rules.RuleError."""
    check_name(params)
    kops_rules.cluster_name(params["cluster"], "cluster")
    if params["role"]:
        kops_ig.check_role(params["role"])
    kops_rules.duration_seconds(params["drain_timeout"], "drain_timeout")  # kops' --drain-timeout: a Go duration


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = dict(module.params)
    checked(module, check_names, params)
    group = "InstanceGroup %s" % params["name"]
    run = KopsRun(
        module,
        params["cluster"],
        "%s of %s" % (group, params["cluster"]),
        "kops failed for %s" % group,
        update_options={"allow_kops_downgrade": params["allow_kops_downgrade"]},
    )
    run.exit(run(lambda: ensure_and_apply(module, run.ops, params, run.guard)))


if __name__ == "__main__":
    main()
