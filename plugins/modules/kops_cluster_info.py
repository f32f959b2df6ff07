#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: kops_cluster_info
short_description: Gather facts about kOps clusters, their instance groups, Auto Scaling groups and nodes
version_added: 0.2.0
description:
  - Reads one cluster (O(name)) or every cluster of a kOps state store, that is the cluster spec and a summary
    of it (Kubernetes version, zones, topology, DNS zone, networking, cloud labels), its InstanceGroups with their
    sizes and machine types, and from AWS each group's Auto Scaling group, its instances and which of them
    need an update.
  - With O(kubeconfig), the cluster's Nodes (ready, kubelet version, instance group) joined to the instances;
    with O(validate=true) also C(kops validate cluster), the only kops call this module makes.
  - A cluster that does not exist gives an empty RV(clusters) list, as the C(amazon.aws) C(*_info) modules do.
author:
  - kopsible maintainers (!UNKNOWN)
options:
  name:
    description: Name of the cluster. Omit it to read every cluster of the state store.
    type: str
    aliases: [cluster]
  validate:
    description:
      - Run C(kops validate cluster -o json) once (no waiting) through O(kubeconfig) and return its result in
        RV(clusters[].validation). Needs O(name) and O(kubeconfig).
    type: bool
    default: false
  upgrade_to:
    description:
      - A target Kubernetes version; returns RV(clusters[].upgrade_plan), the plan of the upgrade in kOps' order for
        Kubernetes 1.31 and later (kops docs/tutorial/upgrading-kubernetes.md), one hop per minor version, each
        updating and rolling the control plane and API servers only, and the workers (and bastions) once at the end,
        or in between where the next hop would leave their kubelets more than three minor versions behind the
        control plane (the Kubernetes version-skew policy). Needs O(name). Nothing is written.
      - With O(kubeconfig), the hops start from the kubelet versions the Nodes report, so a plan made after a run
        that stopped part-way first finishes the hop it stopped in; without it, the Nodes are taken to run the
        stored spec's version, and a spec already at O(upgrade_to) gets one resumed hop at its version (applied and
        rolled where the cloud differs), since only the Nodes would show a run that wrote it and stopped before its rolls.
      - Every hop is checked against the range kops v1.36.2 applies (1.31.0 up to below 1.37.0).
    type: str
  hop_versions:
    description:
      - The versions of the intermediate minor versions of O(upgrade_to)'s plan, e.g. C([1.33.12, 1.34.8]); a minor
        version not listed hops to its C(.0) release.
    type: list
    elements: str
  allow_version_skip:
    description: With O(upgrade_to), one hop straight to the target (or back), the control plane still first.
    type: bool
    default: false
  etcd_backups:
    description:
      - Read the backups etcd-manager wrote for each etcd cluster of the spec (C(main), C(events)) from its
        C(backups.backupStore), by default C(<configBase>/backups/etcd/<name>) in the state store, and return them in
        RV(clusters[].etcd_backups). One listing per etcd cluster and one read of the newest backup's meta file;
        C(s3://) and C(file://) backup stores.
    type: bool
    default: false
  etcd_backup_max_age:
    description:
      - A Go duration such as C(24h) or C(90m); implies O(etcd_backups). Each etcd cluster's RV(clusters[].etcd_backups[].stale)
        is true when it has no backup or its newest one is older than this. etcd-manager backs up every 15 minutes
        by default, so a healthy cluster's newest backup is younger than that.
    type: str
  adopt:
    description:
      - Return RV(clusters[].adoption), the options of M(kopsible.kops.kops_cluster) and
        M(kopsible.kops.kops_instancegroup) that describe each cluster exactly as its state store holds it (a run with
        them changes nothing), and what no option can say. Read only; the P(kopsible.kops.adopt#role) role writes them
        as variables and a playbook and proves the no-op.
    type: bool
    default: false
extends_documentation_fragment:
  - kopsible.kops.kops_info
  - kopsible.kops.kops.read_only
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Every cluster of the state store, with its Auto Scaling groups
  kopsible.kops.kops_cluster_info:
    state_store: s3://example-kops-state
  register: found

- name: Clusters with instances that need a rolling update
  ansible.builtin.debug:
    msg: "{{ found.clusters | selectattr('needs_update') | map(attribute='cluster_name') | list }}"

- name: One cluster, its nodes and kops' validation
  kopsible.kops.kops_cluster_info:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    kubeconfig: /tmp/mycluster01.kubeconfig
    validate: true
  register: cluster

- name: The plan of an upgrade over several minor versions (hops, versions at each point, rolls counted)
  kopsible.kops.kops_cluster_info:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    kubeconfig: /tmp/mycluster01.kubeconfig
    upgrade_to: 1.35.0
  register: plan

- name: The etcd backups, with the etcd clusters whose newest backup is older than a day
  kopsible.kops.kops_cluster_info:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    etcd_backup_max_age: 24h
    cloud: false
  register: backups

- name: Stop when an etcd cluster has no backup of the last day
  ansible.builtin.assert:
    that: backups.clusters[0].etcd_backups | selectattr('stale') | list | length == 0

- name: The options that describe an existing cluster (for kops_cluster and kops_instancegroup)
  kopsible.kops.kops_cluster_info:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://example-kops-state
    cloud: false
    adopt: true
  register: adopted

- name: Stop unless the cluster validates
  ansible.builtin.assert:
    that: cluster.clusters[0].validation.ok
"""

RETURN = r"""
clusters:
  description: The clusters found, sorted by name; empty when O(name) does not exist.
  returned: always
  type: list
  elements: dict
  contains:
    cluster_name: {description: Name of the cluster., returned: always, type: str, sample: mycluster01.kopsclustertest.example.org}
    state_store: {description: The state store it was read from., returned: always, type: str, sample: "s3://example-kops-state"}
    config_base: {description: C(spec.configBase)., returned: always, type: str}
    cloud_provider: {description: The cloud (C(aws))., returned: always, type: str, sample: aws}
    kubernetes_version: {description: C(spec.kubernetesVersion)., returned: always, type: str, sample: 1.34.1}
    kubernetes_minor: {description: Its C(MAJOR.MINOR)., returned: always, type: str, sample: "1.34"}
    region: {description: "The AWS region, from the subnets' zones.", returned: always, type: str, sample: us-east-1}
    zones: {description: The subnets' availability zones., returned: always, type: list, elements: str}
    control_plane_zones: {description: Zones of the control-plane InstanceGroups., returned: always, type: list, elements: str}
    subnets: {description: "The subnets (C(name), C(zone), C(type), C(cidr)).", returned: always, type: list, elements: dict}
    topology: {description: C(public) or C(private)., returned: always, type: str}
    dns_type: {description: "C(spec.topology.dns.type): C(Public), C(Private) or C(None) (gossip).", returned: always, type: str}
    dns_zone: {description: C(spec.dnsZone)., returned: always, type: str}
    cloud_labels: {description: C(spec.cloudLabels)., returned: always, type: dict}
    networking: {description: "The CNI, e.g. C(cilium).", returned: always, type: str}
    node_count_min: {description: Sum of the Node groups' C(minSize)., returned: always, type: int}
    node_count_max: {description: Sum of the Node groups' C(maxSize)., returned: always, type: int}
    kops_version_applied:
      description:
        - The kops version that last applied the cluster (C(kops-version.txt) in its folder of the store, which kops
          writes at apply); null when the cluster was never applied. kops refuses to apply it with an older version.
      returned: always
      type: str
    spec_fingerprint:
      description:
        - A short hash of each stored object (C(config), C(instancegroup/<name>)) and the C(kops-version.txt) version;
          it changes exactly when someone writes the cluster's spec or applies it with another kops. A fleet run's
          approved plan keeps it (M(kopsible.kops.fleet_run) O(kopsible.kops.fleet_run#module:approved)).
      returned: always
      type: dict
      sample: {config: 3f2a9c0d1e4b5a67, instancegroup/nodes-us-east-1a: 9b8c7d6e5f4a3b21, kops-version.txt: 1.36.2}
    spec: {description: The stored cluster spec (kOps API field names)., returned: always, type: dict}
    needs_update:
      description: Names of the InstanceGroups with an instance that needs an update (empty with O(cloud=false)).
      returned: always
      type: list
      elements: str
    instance_groups:
      description: The cluster's InstanceGroups, sorted by name.
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
    nodes:
      description: The cluster's Nodes, sorted by name; null without O(kubeconfig).
      returned: always
      type: list
      elements: dict
      contains:
        name: {description: Node name., returned: success, type: str}
        instance_id: {description: EC2 instance id from C(spec.providerID)., returned: success, type: str}
        instance_group: {description: "The C(kops.k8s.io/instancegroup) label.", returned: success, type: str}
        role: {description: "From the C(node-role.kubernetes.io/*) label, e.g. C(control-plane), C(node).", returned: success, type: str}
        zone: {description: "The C(topology.kubernetes.io/zone) label.", returned: success, type: str}
        ready: {description: Whether its C(Ready) condition is C(True)., returned: success, type: bool}
        kubelet_version: {description: "The kubelet's version, e.g. C(v1.34.1).", returned: success, type: str}
        unschedulable: {description: Whether it is cordoned., returned: success, type: bool}
    validation:
      description: The result of C(kops validate cluster); null unless O(validate=true).
      returned: always
      type: dict
      contains:
        ok: {description: Whether the cluster validated (and its nodes span the expected zones)., returned: success, type: bool}
        failures: {description: "kops' failures (C(type), C(name), C(message), C(instance_group)).", returned: success, type: list, elements: dict}
        nodes: {description: The nodes kops saw., returned: success, type: list, elements: dict}
        problems: {description: The failures as sentences., returned: success, type: list, elements: str}
        attempts: {description: Validation attempts kops printed., returned: success, type: int}
        placement: {description: Zones of the ready control-plane and worker nodes against the spec., returned: success, type: dict}
    upgrade_plan:
      description: The plan of the upgrade to O(upgrade_to); null without it.
      returned: always
      type: dict
      contains:
        target: {description: The target version., returned: success, type: str, sample: 1.35.0}
        current:
          description:
            - "Where the cluster stands: C(spec) (its spec's version), C(control_plane) (the oldest kubelet of the
              control-plane Nodes) and C(workers) (the oldest of the others)."
          returned: success
          type: dict
        hops:
          description: One per control-plane hop, in order.
          returned: success
          type: list
          elements: dict
          contains:
            version: {description: The version this hop sets., returned: success, type: str}
            roles: {description: "The roles updated and rolled in it, C([control-plane, apiserver]).", returned: success, type: list, elements: str}
            api_before: {description: The oldest kube-apiserver before the hop., returned: success, type: str}
            api_after: {description: The kube-apiserver version after it., returned: success, type: str}
            kubelets: {description: The oldest worker kubelet during the hop., returned: success, type: str}
            workers_after:
              description: The version the workers are rolled to right after this hop (the skew policy needs it), or null.
              returned: success
              type: str
            why: {description: Why the hop is there., returned: success, type: str}
            resume: {description: "True for a hop written by an earlier run whose control plane is not rolled yet.", returned: success, type: bool}
        control_plane_rolls: {description: Rolls of the control plane (one per hop)., returned: success, type: int}
        worker_rolls: {description: Rolls of the workers (the end one included)., returned: success, type: int}
        steps: {description: The plan as sentences., returned: success, type: list, elements: str}
    etcd_backups:
      description: The backups of each etcd cluster of the spec, in its order; null unless O(etcd_backups) or O(etcd_backup_max_age).
      returned: always
      type: list
      elements: dict
      contains:
        name: {description: "The etcd cluster, e.g. C(main).", returned: success, type: str, sample: main}
        backup_store:
          description: Where its backups are.
          returned: success
          type: str
          sample: "s3://example-kops-state/mycluster01.kopsclustertest.example.org/backups/etcd/main"
        count: {description: Number of backups., returned: success, type: int}
        total_size: {description: Bytes of their data files (C(etcd.backup.gz))., returned: success, type: int}
        newest:
          description: "The newest backup (C(name), C(time), C(age_seconds), C(size) in bytes, C(etcd_version) from its meta file); null without backups."
          returned: success
          type: dict
        oldest: {description: "The oldest backup (C(name), C(time), C(age_seconds), C(size)); null without backups.", returned: success, type: dict}
        max_age_seconds: {description: O(etcd_backup_max_age) in seconds; null without it., returned: success, type: float}
        stale:
          description: True when there is no backup or the newest is older than O(etcd_backup_max_age); null without it.
          returned: success
          type: bool
    adoption:
      description: With O(adopt=true), the cluster as the modules' options; null without it.
      returned: always
      type: dict
      contains:
        cluster:
          description: Options of M(kopsible.kops.kops_cluster), C(name) and C(spec) (every spec field it takes, as stored).
          returned: success
          type: dict
        instance_groups:
          description:
            - Options of M(kopsible.kops.kops_instancegroup) per InstanceGroup, sorted by name, C(cluster), C(name),
              C(role), the sizes, machine type, image, subnets or zones, labels and taints as their options, and every
              other field it takes in C(spec), as stored.
          returned: success
          type: list
          elements: dict
        not_expressed:
          description:
            - What no option can say, left out and named (spec fields the modules do not take, labels and annotations of
              the objects' metadata other than kops' own); empty when the options describe the cluster fully.
          returned: success
          type: list
          elements: str
          sample: ["InstanceGroup nodes-us-east-1a.metadata.annotations.example.com/owner"]
state_store:
  description: The state store read (O(state_store) or E(KOPS_STATE_STORE), without a trailing C(/)).
  returned: always
  type: str
  sample: s3://example-kops-state
kops_invocations:
  description: The kops commands run (C(argv), C(rc), C(seconds)); empty unless O(validate=true).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.kopsible.kops.plugins.module_utils._kops import adopt
from ansible_collections.kopsible.kops.plugins.module_utils._kops import info as kops_info
from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec, kops_setting
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import checked, read_only_store
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError, runner_from_module
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError


def argument_spec():
    spec = dict(
        name=dict(type="str", aliases=["cluster"]),
        cloud=dict(type="bool", default=True),
        kubeconfig=dict(type="path"),
        kube_context=dict(type="str"),
        validate=dict(type="bool", default=False),
        upgrade_to=dict(type="str"),
        hop_versions=dict(type="list", elements="str"),
        allow_version_skip=dict(type="bool", default=False),
        etcd_backups=dict(type="bool", default=False),
        etcd_backup_max_age=dict(type="str"),
        adopt=dict(type="bool", default=False),
    )
    spec.update(kops_argument_spec())
    return spec


def check_params(module):
    """``(name, max_age)`` after the option rules: the cluster name (str, or None for every cluster of the store) and
    ``etcd_backup_max_age`` in seconds (float, or None); fails the module naming the option."""
    params = module.params
    name = checked(module, kops_rules.cluster_name, params["name"]) if params["name"] is not None else None
    if params["validate"] and not (name and params["kubeconfig"]):
        module.fail_json(msg="validate: needs name (one cluster) and kubeconfig (kops validates through the Kubernetes API)")
    if params["upgrade_to"] and not name:
        module.fail_json(msg="upgrade_to: needs name (the plan is of one cluster)")
    if params["kubeconfig"] and not kops_pdb.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    max_age = None
    if params["etcd_backup_max_age"] is not None:
        max_age = checked(module, kops_rules.duration_seconds, params["etcd_backup_max_age"], "etcd_backup_max_age")
    return name, max_age


def describe(module, record, runner, state_store, max_age, backup_clients):
    """The ``clusters`` entry of the cluster of ``record`` (kops_info.read_records): its spec summary, cloud, nodes, and
    as asked its validation, upgrade plan and etcd backups."""
    params = module.params
    cloud, nodes = kops_info.cloud_and_nodes(module, record, params["cloud"], params["kubeconfig"], params["kube_context"])
    info = kops_info.cluster_info(record, cloud, nodes, validate(module, runner, state_store, record) if runner else None)
    info["upgrade_plan"] = upgrade_plan(module, info) if params["upgrade_to"] else None
    info["etcd_backups"] = etcd_backups(module, record, max_age, backup_clients) if params["etcd_backups"] or max_age is not None else None
    info["adoption"] = adopt.adoption(record) if params["adopt"] else None
    return info


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    name, max_age = check_params(module)
    state_store = read_only_store(module, "kops_cluster_info")
    runner = runner_from_module(module, state_store, kubeconfig=params["kubeconfig"]) if params["validate"] else None
    backup_clients = {}  # the S3 client of the etcd backup reads, made once for every cluster
    records = kops_info.read_records(module, state_store, [name] if name else None)
    clusters = [describe(module, record, runner, state_store, max_age, backup_clients) for record in records]
    module.exit_json(changed=False, state_store=state_store, clusters=clusters, kops_invocations=runner.calls if runner else [])


def upgrade_plan(module, info):
    """kops_upgrade.plan_upgrade for the cluster of ``info`` (kops_info.cluster_info) from its Nodes' kubelets."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops import upgrade as kops_upgrade

    params = module.params
    nodes = info.get("nodes")
    control_plane = workers = None
    if nodes is not None:
        control_plane = [n["kubelet_version"] for n in nodes if n.get("role") in ("control-plane", "api-server")]
        workers = [n["kubelet_version"] for n in nodes if n.get("role") not in ("control-plane", "api-server")]
    try:
        return kops_upgrade.plan_upgrade(
            info["kubernetes_version"],
            params["upgrade_to"],
            control_plane or None,
            workers or None,
            hop_versions=params["hop_versions"],
            allow_version_skip=params["allow_version_skip"],
            too_new_allowed=bool(kops_setting(params, "KOPS_RUN_TOO_NEW_VERSION")),
        )
    except kops_rules.RuleError as exc:
        module.fail_json(msg="%s (cluster %s; nothing was written)" % (exc, info["cluster_name"]))


def etcd_backups(module, record, max_age, clients):
    """The etcd backups of the cluster of ``record`` (_state_store.etcd_backups.read_cluster_backups); ``clients`` (dict)
    keeps the S3 client made for the first cluster with an ``s3://`` backup store. Fails naming the backup store that
    could not be read."""
    from ansible_collections.kopsible.kops.plugins.module_utils._state_store import etcd_backups as backups
    from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import s3_client

    if "s3" not in clients and any(store.startswith("s3://") for dummy, store in backups.backup_stores(record["cluster"])):
        clients["s3"] = s3_client(module)
    try:
        return backups.read_cluster_backups(clients.get("s3"), record["cluster"], max_age)
    except StoreError as exc:
        module.fail_json(msg="etcd_backups: cannot read the etcd backups of cluster %s: %s" % (record["name"], exc))


def validate(module, runner, state_store, record):
    """kops' validation of the cluster of ``record`` (one kops call, no waiting)."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_ops import ClusterOps
    from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import summarize_cluster

    summary = summarize_cluster(record)
    try:
        return ClusterOps(runner, state_store).validate(record["name"], "0s", summary["control_plane_zones"], summary["zones"])
    except KopsError as exc:
        module.fail_json(msg="kops validate cluster failed for %s: %s" % (record["name"], exc.message), **dict(exc.to_result(), kops_invocations=runner.calls))


if __name__ == "__main__":
    main()
