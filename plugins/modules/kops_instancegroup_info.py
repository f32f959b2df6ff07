#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: kops_instancegroup_info
short_description: Gather facts about the InstanceGroups of a kOps cluster and their Auto Scaling groups
version_added: 0.2.0
description:
  - Reads the InstanceGroups of one cluster from the kOps state store (all of them, one by O(name), or those
    of some O(roles)), and from AWS each group's Auto Scaling group, its instances and which of them need an
    update (as C(kops rolling-update cluster) decides it). With O(kubeconfig), each instance's Node.
  - Runs no kops command. A cluster or group that does not exist gives an empty RV(instance_groups) list, as
    the C(amazon.aws) C(*_info) modules do.
author:
  - kopsible maintainers (!UNKNOWN)
options:
  cluster:
    description: Name of the cluster.
    type: str
    required: true
  name:
    description: Name of one InstanceGroup, e.g. C(nodes-us-east-1a). Omit it for every group of the cluster.
    type: str
  roles:
    description:
      - Only groups of these roles, of C(ControlPlane), C(Node), C(Bastion), C(APIServer).
      - Any case; C(Master) and C(control-plane) mean C(ControlPlane), as in kops.
    type: list
    elements: str
extends_documentation_fragment:
  - kopsible.kops.kops_info
  - kopsible.kops.kops.read_only
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: The worker groups of a cluster and their instances
  kopsible.kops.kops_instancegroup_info:
    cluster: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    roles: [Node]
  register: workers

- name: Instances that a rolling update would replace
  ansible.builtin.debug:
    msg: "{{ workers.instance_groups | map(attribute='cloud.instances') | flatten | selectattr('need_update') | map(attribute='id') | list }}"
"""

RETURN = r"""
instance_groups:
  description: The InstanceGroups found, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: Name of the InstanceGroup., returned: always, type: str, sample: nodes-us-east-1a}
    role:
      description: "C(ControlPlane), C(Node), C(Bastion) or C(APIServer) (the stored C(Master) is given as C(ControlPlane), as kops shows it)."
      returned: always
      type: str
    min_size: {description: C(spec.minSize)., returned: always, type: int}
    max_size: {description: C(spec.maxSize)., returned: always, type: int}
    machine_type: {description: C(spec.machineType)., returned: always, type: str, sample: t3.medium}
    image: {description: C(spec.image)., returned: always, type: str}
    zones: {description: "Its zones: C(spec.zones), else its subnets' zones.", returned: always, type: list, elements: str}
    subnets: {description: C(spec.subnets)., returned: always, type: list, elements: str}
    spec: {description: The stored InstanceGroup spec., returned: always, type: dict}
    cloud:
      description: Its Auto Scaling group; null with O(cloud=false) or when the group does not exist (not applied yet).
      returned: always
      type: dict
      contains:
        name: {description: "Name of the Auto Scaling group (C(IG.CLUSTER), control plane C(IG.masters.CLUSTER)).", returned: success, type: str}
        min_size: {description: Its MinSize., returned: success, type: int}
        desired_capacity: {description: Its DesiredCapacity., returned: success, type: int}
        max_size: {description: Its MaxSize., returned: success, type: int}
        launch: {description: "Its launch template and version (C(lt-ID:VERSION)) or launch configuration name.", returned: success, type: str}
        status: {description: "C(NeedsUpdate) when an instance needs an update, else C(Ready) (kops' STATUS column).", returned: success, type: str}
        need_update: {description: Number of instances that need an update., returned: success, type: int}
        ready: {description: Number of instances that do not., returned: success, type: int}
        instances:
          description: Its instances (warm pool included), sorted by id.
          returned: success
          type: list
          elements: dict
          contains:
            id: {description: The EC2 instance id., returned: success, type: str}
            status: {description: "C(UpToDate), C(NeedsUpdate) or C(Detached).", returned: success, type: str}
            need_update: {description: Whether kops would replace it in a rolling update., returned: success, type: bool}
            state: {description: "C(InService) or C(WarmPool).", returned: success, type: str}
            lifecycle_state: {description: "Its Auto Scaling lifecycle state, e.g. C(InService).", returned: success, type: str}
            launch: {description: The launch template version or configuration it was started from., returned: success, type: str}
            zone: {description: Its availability zone., returned: success, type: str}
            machine_type: {description: Its instance type., returned: success, type: str}
            private_ip: {description: Its private IP address., returned: success, type: str}
            roles: {description: "Its roles from the C(k8s.io/role/*) tags, e.g. C([control-plane]).", returned: success, type: list, elements: str}
            node: {description: Name of its Node; null when no node has its instance id., returned: when O(kubeconfig) is given, type: str}
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.kopsible.kops.plugins.module_utils._kops import info as kops_info
from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import checked, read_only_store
from ansible_collections.kopsible.kops.plugins.module_utils._kops.spec import normalize_role
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import summarize_cluster

ROLES = ("ControlPlane", "Node", "Bastion", "APIServer")  # pkg/apis/kops/instancegroup.go AllInstanceGroupRoles


def argument_spec():
    spec = dict(
        cluster=dict(type="str", required=True),
        name=dict(type="str"),
        roles=dict(type="list", elements="str"),
        cloud=dict(type="bool", default=True),
        kubeconfig=dict(type="path"),
        kube_context=dict(type="str"),
    )
    spec.update(kops_argument_spec())
    return spec


def check_params(params):
    """The cluster name after the name and role rules. Raises kops_rules.RuleError."""
    cluster = kops_rules.cluster_name(params["cluster"], "cluster")
    if params["name"] is not None:
        kops_rules.instance_group_name(params["name"])
    for index, role in enumerate(params["roles"] or []):
        # case-insensitive, Master for ControlPlane: pkg/apis/kops/parse.go ParseInstanceGroupRole
        kops_rules.one_of(normalize_role(role), ROLES, "roles[%d]" % index)
    return cluster


def selected(params, record):
    """The InstanceGroups of ``record`` (kops_info.read_records) that ``name`` and ``roles`` select (list of dicts)."""
    roles = {normalize_role(r) for r in params["roles"] or []}
    return [
        ig
        for ig in record["instance_groups"]
        if (params["name"] is None or (ig.get("metadata") or {}).get("name") == params["name"])
        and (not roles or normalize_role((ig.get("spec") or {}).get("role")) in roles)
    ]


def describe(module, record):
    """The ``instance_groups`` entries of the selected groups of ``record``: spec summary, Auto Scaling group, nodes."""
    params = module.params
    cloud, nodes = kops_info.cloud_and_nodes(module, record, params["cloud"], params["kubeconfig"], params["kube_context"])
    by_instance = {n["instance_id"]: n for n in nodes or [] if n["instance_id"]} if nodes is not None else None
    summary = summarize_cluster(record)
    return [kops_info.group_info(ig, summary, (cloud or {}).get(ig["metadata"]["name"]), by_instance) for ig in record["instance_groups"]]


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    cluster = checked(module, check_params, params)
    if params["kubeconfig"] and not kops_pdb.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    state_store = read_only_store(module, "kops_instancegroup_info")
    groups = []
    for record in kops_info.read_records(module, state_store, [cluster]):
        record = dict(record, instance_groups=selected(params, record))
        groups = describe(module, record) if record["instance_groups"] else groups
    module.exit_json(changed=False, instance_groups=groups)


if __name__ == "__main__":
    main()
