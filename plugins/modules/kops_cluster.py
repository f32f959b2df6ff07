#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: kops_cluster
short_description: Create, converge, apply, validate and delete a kOps cluster
version_added: 0.1.0
description:
  - Drives the real C(kops) binary to manage one cluster in a kOps state store.
  - O(state=present) on a missing cluster runs C(kops create cluster) with the given options; on an
    existing one it compares the convergeable fields (O(kubernetes_version), O(cloud_labels),
    O(channel), O(admin_access), O(ssh_access), and any O(spec) fragment) with the stored cluster spec
    and writes only when they differ (C(kops replace)). Options that only shape a new cluster (zones,
    counts, sizes, networking, topology...) are not applied to an existing one; they are compared with the
    stored cluster and its instance groups, and a warning (and RV(create_only_differences)) names those that differ.
  - With O(apply=true), runs the C(kops update cluster) dry run and applies (C(--yes)) only when the
    plan is not empty; C(changed) follows the plan. With O(plan_before_apply=false), a run that wrote the
    spec applies without the dry run. O(target=terraform) writes Terraform into O(out) instead.
  - O(state=absent) runs C(kops delete cluster --yes) and then checks the cluster's hosted zone; no
    record under the cluster's name may remain.
  - Check mode writes nothing (state store, AWS, kubeconfig); it returns the spec kops would create
    (C(create cluster --dry-run -o yaml)) or the spec diff and the exact cloud plan of that diff
    (a kops dry run against a temporary copy of the specs; the state store is only read).
  - Every option is checked before kops runs; a broken rule fails naming the option.
  - Every C(kops create cluster) flag used by kops' own golden C(create_cluster) cases has an option here; the
    collection's docs/golden-cases.md maps each flag to its option, and its tests reproduce those cases.
author:
  - kopsible maintainers (!UNKNOWN)
options:
  name:
    description:
      - Cluster name, a fully qualified DNS name such as C(mycluster01.kopsclustertest.example.org),
        or a gossip name ending in C(.k8s.local).
    type: str
    required: true
  state:
    description: Whether the cluster should exist.
    type: str
    choices: [present, absent]
    default: present
  cloud:
    description: Cloud provider passed to C(kops create cluster).
    type: str
    default: aws
  zones:
    description: Availability zones for the nodes (all in one region). Required to create a cluster.
    type: list
    elements: str
  control_plane_zones:
    description: Availability zones for the control plane; an odd number (etcd quorum).
    type: list
    elements: str
  control_plane_count:
    description: Number of control-plane nodes (default one per control-plane zone).
    type: int
  node_count:
    description: Total number of worker nodes at creation (kops spreads them over per-zone instance groups).
    type: int
  node_size:
    description: Instance type of the workers, e.g. C(t3.medium).
    type: str
  control_plane_size:
    description: Instance type of the control-plane nodes.
    type: str
  kubernetes_version:
    description:
      - Kubernetes version, C(1.34.1) or C(v1.34.1). On an existing cluster it is converged, one minor
        version forward at a time; a downgrade or a skipped minor version fails unless O(allow_version_skip=true).
      - At least C(1.31.0), the oldest version kops v1.36.2 supports (C(upup/pkg/fi/cloudup/apply_cluster.go)); kops
        would store an older one and refuse every update, so it fails before anything is written.
    type: str
  allow_version_skip:
    description: Allow a Kubernetes version change that skips a minor version or goes backwards.
    type: bool
    default: false
  force:
    description: With O(state=absent), delete a cluster even when its spec carries the O(protection_label) cloud label.
    type: bool
    default: false
  protection_label:
    description:
      - A cloud label (C(spec.cloudLabels) key) that protects a cluster from deletion. When the cluster's spec has
        it with any value but C(false), O(state=absent) fails before anything is deleted unless O(force=true).
        Set it with O(cloud_labels), e.g. the key C(kopsible.io/protected) with the value C(true).
    type: str
    default: kopsible.io/protected
  upgrade:
    description:
      - Apply what C(kops upgrade cluster) recommends from the cluster's channel (or O(channel)) on an existing
        cluster; the Kubernetes version (the channel's recommended patch, or the next minor version when kops
        supports it) and the images of instance groups that use the channel's images. With O(kubernetes_version),
        that version is used and the channel picks the images for it.
      - The actions are returned in RV(upgrade); check mode lists them and, with O(apply), shows the cloud plan they
        lead to. Roll the instances afterwards with M(kopsible.kops.rolling_update).
    type: bool
    default: false
  networking:
    description: Networking mode (kops' C(--networking), default cilium).
    type: str
  topology:
    description: C(public) or C(private) subnets.
    type: str
    choices: [public, private]
  bastion:
    description: Add a bastion instance group (private topology).
    type: bool
    default: false
  dns:
    description: DNS type, C(public), C(private) or C(none).
    type: str
    choices: [public, private, none]
  dns_zone:
    description:
      - Hosted zone for the cluster's records; must enclose O(name), and be the closest zone of the cluster's kind
        (public, or private with O(dns=private)) that does so when a closer one is in use (a delegated public zone,
        or any private one); otherwise the records would be shadowed and the creation fails naming the closer zone.
    type: str
  ssh_public_key:
    description: SSH public key text (not a path) to install on the instances.
    type: str
  image:
    description: Machine image for all instances (an AMI id or an owner/name).
    type: str
  control_plane_image:
    description: Machine image for the control plane (takes precedence over O(image)).
    type: str
  node_image:
    description: Machine image for the workers (takes precedence over O(image)).
    type: str
  vpc:
    description: Id of an existing VPC to use.
    type: str
  network_cidr:
    description: CIDR of the cluster network, e.g. C(172.20.0.0/16).
    type: str
  subnets:
    description: Ids of existing subnets to use.
    type: list
    elements: str
  utility_subnets:
    description: Ids of existing utility subnets to use (private topology).
    type: list
    elements: str
  admin_access:
    description: CIDRs allowed to reach the Kubernetes API.
    type: list
    elements: str
  ssh_access:
    description: CIDRs allowed to reach SSH.
    type: list
    elements: str
  cloud_labels:
    description:
      - Tags for every cloud resource of the cluster (not C(Name), C(KubernetesCluster) or kops' own prefixes).
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed.
    type: dict
  additional_network_cidrs:
    description:
      - More CIDRs for the cluster network after O(network_cidr) (kops' C(--network-cidr) with several values; kops
        stores them in C(additionalNetworkCIDRs) and gives each a subnet per zone in turn). Needs O(network_cidr).
    type: list
    elements: str
  egress:
    description:
      - How the cluster's zone subnets reach the Internet, an existing C(nat-...) NAT gateway, C(eipalloc-...) Elastic IP
        for a new one, C(i-...) NAT instance, C(tgw-...) transit gateway, or C(External). Anything but C(External)
        needs O(topology=private) (or O(ipv6)). C(kops create cluster) has no flag for it (kops' NewClusterOptions
        Egress); the module writes it on the zone subnets right after creation, as kops would.
    type: str
  node_security_groups:
    description: Ids of existing security groups added to the worker groups (C(additionalSecurityGroups)).
    type: list
    elements: str
  control_plane_security_groups:
    description: Ids of existing security groups added to the control-plane groups (C(additionalSecurityGroups)).
    type: list
    elements: str
  ipv6:
    description: An IPv6 cluster (kops' C(--ipv6)); kops then defaults the topology to private and gives subnets IPv6 CIDRs.
    type: bool
    default: false
  instance_manager:
    description: What manages the worker instances, C(cloudgroups) (Auto Scaling groups) or C(karpenter) (needs O(discovery_store)).
    type: str
    choices: [cloudgroups, karpenter]
  api_server_count:
    description:
      - Number of API-server-only nodes (an APIServer instance group). kops offers it only with the C(APIServerNodes)
        feature flag, so O(kops_env) C(KOPS_FEATURE_FLAGS) must include C(+APIServerNodes).
    type: int
  encrypt_etcd_storage:
    description: Encrypt the etcd volumes (kops encrypts them on AWS by default; C(false) turns it off).
    type: bool
  discovery_store:
    description:
      - A public store for the OIDC discovery documents (e.g. C(s3://my-oidc-bucket)); enables IAM roles for service
        accounts. kops keeps them under a directory named after the cluster.
    type: str
  kubernetes_feature_gates:
    description:
      - Kubernetes feature gates for every component, C(Name) or C(+Name) to enable, C(-Name) to disable
        (kops' C(--kubernetes-feature-gates)).
    type: list
    elements: str
  set:
    description:
      - kops' C(--set) values applied when the cluster is created, C(cluster.spec.PATH=VALUE) (e.g.
        C(cluster.spec.networking.calico.bpfEnabled=true)). Unlike O(spec), kops applies them before it derives its
        defaults, so defaults that follow from them (such as kube-proxy turned off for Calico's eBPF mode) follow.
      - Only used to create a cluster; on an existing one use O(spec).
    type: list
    elements: str
  api_loadbalancer_type:
    description: Type of the API load balancer.
    type: str
    choices: [public, internal]
  channel:
    description: kOps channel (C(stable), C(alpha), C(none) or a URL).
    type: str
  spec:
    description:
      - A fragment of the Cluster C(spec) (kops.k8s.io/v1alpha2 field names). Applied after creation too.
      - Merged into the stored value; keys given are set, keys not given are kept,
        a key set to C(null) is removed. Nested dicts merge the same way; lists replace.
    type: dict
  apply:
    description: Apply the spec to the cloud (C(kops update cluster --yes)) when the plan is not empty.
    type: bool
    default: false
  instance_group_roles:
    description:
      - With O(apply=true), plan and apply only the InstanceGroups of these roles (C(kops update cluster
        --instance-group-roles)), of C(control-plane), C(apiserver), C(node), C(bastion), read as kops reads them (any
        case, plural, C(master) for the control plane). The cluster-wide resources are planned and applied as usual.
      - The first step of kOps' upgrade order for Kubernetes 1.31 and later (kops docs/tutorial/upgrading-kubernetes.md,
        C(kops reconcile cluster)) is C([control-plane, apiserver]); roll those groups before applying the rest, so
        that no worker gets a kubelet newer than the control plane.
      - Not with O(target=terraform), where kops would leave the other groups out of the files; the kOps page above
        gives Terraform users a targeted C(terraform apply) of the control-plane Auto Scaling groups instead.
    type: list
    elements: str
  reconcile:
    description:
      - With O(apply=true), apply with C(kops reconcile cluster --yes) instead of C(kops update cluster --yes); kops
        updates the control-plane and API-server groups, waits for the API, rolls them, updates every group, rolls the
        rest and prunes, in one call (cmd/kops/reconcile_cluster.go; kOps' order for Kubernetes 1.31 and later). It
        rolls instances, so it needs the Kubernetes API (O(kubeconfig)) and takes kops' default rolling-update settings.
      - The plan is the C(kops update cluster) dry run, as kops' own C(reconcile) without C(--yes) prints it; a run
        whose plan is empty still reconciles when an instance needs a rolling update (a reconcile stopped part-way).
      - Not with O(target=terraform) (kops refuses it) or O(instance_group_roles).
    type: bool
    default: false
  allow_kops_downgrade:
    description:
      - Apply the cluster although a newer kops applied it last (C(kops update cluster --allow-kops-downgrade)).
      - kops writes its version to C(kops-version.txt) in the cluster's folder of the state store when it applies, and
        refuses to apply with an older kops (upup/pkg/fi/cloudup/apply_cluster.go). kops checks that only at apply; with
        V(false) this module checks it before its first write, so an older binary writes nothing, not even the spec.
        The inventory plugin's C(kops_version_applied) shows each cluster's version.
    type: bool
    default: false
  prune:
    description:
      - With O(apply=true), also delete the old revisions of cloud resources that kops kept while instances still used
        them (C(kops update cluster --prune)), the last step of kOps' upgrade order, once every group is rolled.
    type: bool
    default: false
  target:
    description: C(direct) applies to AWS; C(terraform) writes Terraform files into O(out).
    type: str
    choices: [direct, terraform]
    default: direct
  out:
    description: Directory for O(target=terraform); required with it.
    type: path
  validate:
    description:
      - Run C(kops validate cluster) after the other steps and fail when it does not pass.
      - With O(zones) and O(control_plane_zones) given, it also fails when the control-plane nodes do not sit in every
        control-plane zone, or when the workers sit in one zone while two or more were asked for (O(node_count)) over
        several zones (the C(validation.placement) result).
    type: bool
    default: false
  validation_timeout:
    description:
      - How long C(kops validate cluster --wait) may wait, a Go duration such as C(10m) (the name and unit of
        M(kopsible.kops.rolling_update)'s O(kopsible.kops.rolling_update#module:validation_timeout), after kops'
        C(--validation-timeout)).
      - The old name C(validate_timeout) is deprecated and still accepted until 1.0.0.
    type: str
    default: 10m
    aliases: [validate_timeout]
  export_kubeconfig:
    description:
      - Write cluster credentials to O(kubeconfig) with C(kops export kubecfg).
      - kops mints a new admin certificate on every export, so the module first exports into a private temporary
        file (removed at once) and compares it with the cluster's entries in O(kubeconfig). The credential is kept
        (C(changed=false), one kops call) when server, TLS server name, CA and user equal what kops writes now, the
        user's client certificate was issued by the cluster's CA, and it is valid for at least half of O(admin) and
        no longer than O(admin). Otherwise kops exports again into O(kubeconfig) (which also makes it the current
        context); RV(kubeconfig.renewed) and RV(kubeconfig.reason) say whether and why.
      - With E(KUBECONFIG) listing several files and no O(kubeconfig), the first file is the one compared.
    type: bool
    default: false
  kubeconfig:
    description:
      - Path of the kubeconfig file to write or clean up (default kops' own, E(KUBECONFIG) or C(~/.kube/config)).
      - Every kops command of the run reads it too (as E(KUBECONFIG)). With it C(kops update cluster) reads the
        kubelet versions of the control-plane Nodes (through the context named after the cluster, as C(kops export
        kubecfg) writes it) and keeps the workers' launch configuration at the oldest of them until the control plane
        runs the new version (cmd/kops/update_cluster.go C(checkControlPlaneRunningVersion)); without a kubeconfig
        that answers, kops moves every group to the new version at once.
    type: path
  admin:
    description:
      - Lifetime of the exported admin credentials, a Go duration such as C(18h). C(0) is refused (kops would export
        a kubeconfig without a user). The credential's expiry is returned in RV(kubeconfig.admin_expires).
    type: str
    default: 18h
extends_documentation_fragment:
  - kopsible.kops.kops
  - kopsible.kops.kops.apply
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
notes:
  - Supports check mode and diff mode. A second identical run reports C(changed=false); a no-op
    run with O(apply=true) calls kops twice (C(get cluster), C(update cluster) dry run); with create-only options the
    first call is C(get all --name), which reads the instance groups too, and a given O(ssh_public_key) is compared
    with the key kops stored, read from the state store (C(pki/ssh/public/admin/); C(kops get sshpublickeys) when
    that store is not on S3).
  - Part of the C(kopsible.kops.kops) action group.
"""

EXAMPLES = r"""
- name: The HA cluster of the kOps guide (3 control-plane zones, 2 workers), applied
  kopsible.kops.kops_cluster:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://kopsclustertest-state
    zones: [us-east-1a, us-east-1b, us-east-1c]
    control_plane_zones: [us-east-1a, us-east-1b, us-east-1c]
    node_count: 2
    node_size: t3.medium
    control_plane_size: t3.medium
    dns_zone: kopsclustertest.example.org
    ssh_public_key: "{{ lookup('file', '~/.ssh/id_rsa.pub') }}"
    apply: true

- name: Apply what the cluster's channel recommends (kops upgrade cluster), then the cloud changes
  kopsible.kops.kops_cluster:
    name: mycluster01.kopsclustertest.example.org
    upgrade: true
    apply: true

- name: Preview an upgrade (check mode shows the spec diff and the plan)
  kopsible.kops.kops_cluster:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://kopsclustertest-state
    kubernetes_version: 1.35.0
    apply: true
  check_mode: true

- name: Delete the cluster and prove its DNS records are gone
  kopsible.kops.kops_cluster:
    name: mycluster01.kopsclustertest.example.org
    state_store: s3://kopsclustertest-state
    state: absent
"""

RETURN = r"""
name:
  description: The normalised cluster name.
  returned: always
  type: str
cluster:
  description: Key facts read back from the stored spec (empty after deletion).
  returned: always
  type: dict
  contains:
    kubernetes_version: {description: Kubernetes version., type: str}
    dns_zone: {description: Hosted zone of the cluster records., type: str}
    zones: {description: Zones of the cluster subnets., type: list, elements: str}
    control_plane_groups: {description: "InstanceGroups of the main etcd cluster's members (the control plane).", type: list, elements: str}
    cloud_labels: {description: Cloud labels., type: dict}
    topology: {description: "C(public) or C(private) (a Private or DualStack subnet), the meaning of O(topology).", type: str}
    subnet_types: {description: "Types of the cluster's subnets (C(Public), C(Private), C(Utility), C(DualStack)).", type: list, elements: str}
    network_cidr: {description: The network's CIDR (C(spec.networkCIDR))., type: str}
    api_name: {description: "Public name of the Kubernetes API (C(spec.masterPublicName)).", type: str}
spec:
  description:
    - The Cluster spec after the run, as kops stored it.
    - In check mode for a new cluster, the spec kops' own dry run (C(kops create cluster --dry-run -o yaml)) would
      store, with only the O(spec) fragment merged in (a real run writes it with C(kops replace)); options are
      never laid over it, so RV(requested) and this differ where a value did not reach kops.
    - In check mode for an existing cluster, the spec kops stored in a temporary copy of the cluster's specs after
      the run's own C(kops upgrade cluster --yes) and C(kops replace) there, read back with C(kops get), that is kops' values,
      not the options (the copy is removed at the end of the run; nothing is written to the state store).
  returned: when state=present
  type: dict
dropped_fields:
  description:
    - Fields of O(spec) (dotted paths) that kops did not keep when it stored the spec (in check mode, in the temporary
      copy). kops drops a field its API does not know without a word, so these are usually misspelled; the run also
      warns.
  returned: when kops dropped a field
  type: list
  elements: str
  sample: [spec.kubeAPIServer.auditLogMaxAges]
requested:
  description: What the run was asked to shape the cluster with, apart from what kops reports; each cluster option
    given (create options, convergeable fields, O(spec)).
  returned: when state=present
  type: dict
  sample: {"kubernetes_version": "1.34.1", "zones": ["us-east-1a"], "cloud_labels": {"team": "platform"}}
instance_groups:
  description: Instance groups kops created or would create (name, role, min/max size, the zones of their subnets), when the cluster was created by this run.
  returned: when the cluster is created
  type: list
  elements: dict
changes:
  description: Field-level spec changes (path, before, after) that were or would be written.
  returned: always
  type: list
  elements: dict
plan:
  description:
    - The cloud plan of C(kops update cluster) (create, modify, delete lists; modify items carry field changes).
    - Null when the dry run was skipped (O(plan_before_apply=false)).
  returned: when apply=true or a cluster was created
  type: dict
plan_summary:
  description: "One line per planned item, e.g. C(modify AutoscalingGroup/nodes...: MaxSize 2 -> 3); empty when the dry run was skipped."
  returned: when apply=true
  type: list
  elements: str
create_only_differences:
  description:
    - The options that only shape a new cluster which were given for an existing cluster with other values (not
      applied; also warned), e.g. C(node_size (given t3.large; the cluster has ['t3.medium'])). Empty when they match.
  returned: when the cluster existed and such options were given
  type: list
  elements: str
kubeconfig:
  description: The exported kubeconfig (never its content).
  returned: when O(export_kubeconfig=true)
  type: dict
  contains:
    path: {description: The file written., type: str}
    changed: {description: "Whether the file changed (or would change, in check mode).", type: bool}
    renewed: {description: "Whether the admin credential was exported again (in check mode, would be).", type: bool}
    reason:
      description: Why the credential was renewed, or why the one in the file was kept.
      type: str
      sample: "the credential expires at 2026-12-01T09:32:05Z, in less than half of admin (18h)"
    user: {description: The kubeconfig user of the cluster's context (kops names it after the cluster)., type: str}
    admin_expires:
      description:
        - When the admin credential in the file expires (its client certificate's NotAfter, ISO 8601 UTC).
        - In check mode, the one in the file now (null for none).
      type: str
      sample: "2026-12-01T17:32:05Z"
    note: {description: "C(not written in check mode) when the credential would be exported again.", type: str}
state_store:
  description: The state store URL the run used (O(state_store) or E(KOPS_STATE_STORE), without a trailing C(/)).
  returned: always
  type: str
  sample: s3://kops-state
terraform:
  description: What C(kops update cluster --target terraform) wrote.
  returned: when O(target=terraform) and O(apply=true)
  type: dict
  contains:
    out: {description: The directory (O(out))., type: str}
    changed: {description: Whether a file in it changed., type: bool}
    files: {description: The files under O(out)., type: list, elements: str}
written:
  description:
    - What a failed C(kops create cluster) left in the state store (C(cluster), C(instance_groups), C(ssh_public_keys)
      count); empty when it wrote nothing. The failure message says how to finish (re-run; the stored spec is
      continued, the create-only options compared with it) or remove it (O(state=absent)).
  returned: when creating the cluster failed
  type: dict
  sample: {cluster: mycluster01.kopsclustertest.example.org, instance_groups: [control-plane-us-east-1a, nodes-us-east-1a],
           ssh_public_keys: 1}
msg:
  description: What happened when there was nothing to do, e.g. that the cluster to delete does not exist.
  returned: when O(state=absent) and the cluster does not exist
  type: str
validation:
  description:
    - Result of C(kops validate cluster) (failures, nodes, ok, placement, problems, attempts).
    - Each failure is kops' own (C(type) Node, Pod, Machine, InstanceGroup..., C(name), C(message)), with the
      InstanceGroup it concerns as C(instance_group) (its name).
  returned: when validate=true
  type: dict
  contains:
    ok: {description: Whether the cluster validated (and its nodes span the expected zones)., type: bool}
    failures: {description: "kops' failures (C(type), C(name), C(message), C(instance_group)).", type: list, elements: dict}
    nodes: {description: The nodes kops saw., type: list, elements: dict}
    problems: {description: The failures and placement problems as sentences., type: list, elements: str}
    attempts: {description: Validation attempts kops printed., type: int}
    placement:
      description: Zones of the ready control-plane and worker nodes against O(zones) and O(control_plane_zones).
      type: dict
      contains:
        control_plane_zones: {description: Zones of the ready control-plane nodes., type: list, elements: str}
        node_zones: {description: Zones of the ready worker nodes., type: list, elements: str}
        problems: {description: What is missing (e.g. control-plane nodes in fewer zones than asked)., type: list, elements: str}
deleted_resources:
  description: The cloud resources kops deleted (or would delete in check mode), type, name, id.
  returned: when state=absent and the cluster existed
  type: list
  elements: dict
dns_records_left:
  description: Records still under the cluster's name in its hosted zone after deletion (should be empty).
  returned: when state=absent and the cluster existed
  type: list
  elements: dict
plan_note:
  description: Why RV(plan) is missing or null (the dry run skipped with O(plan_before_apply=false); in check mode, a new cluster).
  returned: when O(apply=true) and no plan was computed
  type: str
kops_invocations:
  description:
    - The kops commands this run made (argv without secrets, rc, seconds).
    - In check mode, the commands kops ran against a temporary copy of the cluster's specs (C(kops replace),
      C(kops upgrade cluster --yes), C(kops get), the dry run of C(kops update cluster)) carry C(store=scratch);
      they wrote only that copy, which is removed at the end of the run.
  returned: always
  type: list
  elements: dict
upgrade:
  description: The actions of C(kops upgrade cluster) (applied, or in check mode to be applied); empty when none is required.
  returned: when O(upgrade=true) on an existing cluster
  type: list
  elements: dict
  sample: [{item: Cluster, property: KubernetesVersion, old: 1.34.1, new: 1.35.2},
           {item: InstanceGroup/nodes-us-east-1a, property: Image, old: "099720109477/ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20260218",
            new: "099720109477/ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20261101"}]
previous_versions:
  description:
    - The state-store objects this run replaced with C(kops replace) and their version ids before it
      (C(null) when the object did not exist; C("null") when the bucket was never versioned). Restore one with
      C(aws s3api copy-object --copy-source BUCKET/KEY?versionId=ID --bucket BUCKET --key KEY).
  returned: always
  type: dict
  sample: {"s3://kops-state/mycluster01.kopsclustertest.example.org/config": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"}
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

import functools

from ansible_collections.kopsible.kops.plugins.module_utils._kops import (
    create_rules,
    dns_zones,
    ig_labels,
    kube_versions,
    spec_fields,
)
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rolling as kops_rolling
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_state import ensure_absent, ensure_present
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule, kops_argument_spec, kops_setting
from ansible_collections.kopsible.kops.plugins.module_utils._kops.run import KopsRun, checked
from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53


def argument_spec():
    spec = kops_argument_spec()
    spec.update(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        cloud=dict(type="str", default="aws"),
        zones=dict(type="list", elements="str"),
        control_plane_zones=dict(type="list", elements="str"),
        control_plane_count=dict(type="int"),
        node_count=dict(type="int"),
        node_size=dict(type="str"),
        control_plane_size=dict(type="str"),
        kubernetes_version=dict(type="str"),
        allow_version_skip=dict(type="bool", default=False),
        upgrade=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        protection_label=dict(type="str", default="kopsible.io/protected"),
        networking=dict(type="str"),
        topology=dict(type="str", choices=["public", "private"]),
        bastion=dict(type="bool", default=False),
        dns=dict(type="str", choices=["public", "private", "none"]),
        dns_zone=dict(type="str"),
        ssh_public_key=dict(type="str"),
        image=dict(type="str"),
        control_plane_image=dict(type="str"),
        node_image=dict(type="str"),
        vpc=dict(type="str"),
        network_cidr=dict(type="str"),
        subnets=dict(type="list", elements="str"),
        utility_subnets=dict(type="list", elements="str"),
        admin_access=dict(type="list", elements="str"),
        ssh_access=dict(type="list", elements="str"),
        cloud_labels=dict(type="dict"),
        api_loadbalancer_type=dict(type="str", choices=["public", "internal"]),
        additional_network_cidrs=dict(type="list", elements="str"),
        egress=dict(type="str"),
        node_security_groups=dict(type="list", elements="str"),
        control_plane_security_groups=dict(type="list", elements="str"),
        ipv6=dict(type="bool", default=False),
        instance_manager=dict(type="str", choices=["cloudgroups", "karpenter"]),
        api_server_count=dict(type="int"),
        encrypt_etcd_storage=dict(type="bool"),
        discovery_store=dict(type="str"),
        kubernetes_feature_gates=dict(type="list", elements="str"),
        set=dict(type="list", elements="str"),
        channel=dict(type="str"),
        spec=dict(type="dict"),
        apply=dict(type="bool", default=False),
        instance_group_roles=dict(type="list", elements="str"),
        prune=dict(type="bool", default=False),
        allow_kops_downgrade=dict(type="bool", default=False),
        reconcile=dict(type="bool", default=False),
        plan_before_apply=dict(type="bool", default=True),
        target=dict(type="str", default="direct", choices=["direct", "terraform"]),
        out=dict(type="path"),
        validate=dict(type="bool", default=False),
        validation_timeout=dict(
            type="str",
            default="10m",
            aliases=["validate_timeout"],
            deprecated_aliases=[dict(name="validate_timeout", version="1.0.0", collection_name="kopsible.kops")],
        ),
        export_kubeconfig=dict(type="bool", default=False),
        kubeconfig=dict(type="path"),
        admin=dict(type="str", default="18h"),
    )
    return spec


# What the argument spec can say (Ansible's checks); kops_rules say the rest (check_params).
ARGUMENT_CHECKS = dict(required_if=[("target", "terraform", ("out",))])


def check_params(params, region):
    """Apply the input rules; returns the normalised name. Raises kops_rules.RuleError."""
    name = kops_rules.cluster_name(params["name"])
    if params["state"] == "absent":
        return name
    if params["zones"] is not None:
        kops_rules.zones(params["zones"], "zones", region)
    if params["control_plane_zones"]:
        kops_rules.control_plane_zones(params["control_plane_zones"], params["zones"] or [])
    for field in ("node_count",):
        kops_rules.non_negative(params[field], field)
    kops_rules.control_plane_count(params["control_plane_count"], params["control_plane_zones"])
    kops_rules.one_of(params["cloud"], kops_rules.CLOUDS, "cloud")
    if params["networking"] is not None:
        kops_rules.one_of(params["networking"], kops_rules.NETWORKING_MODES, "networking")
    for field in ("node_size", "control_plane_size"):
        if params[field] is not None:
            kops_rules.machine_types(params[field], field)
    kops_rules.duration_seconds(params["validation_timeout"], "validation_timeout")
    kops_rules.admin_lifetime(params["admin"])
    if params["ssh_public_key"] is not None:
        kops_rules.ssh_public_key(params["ssh_public_key"])
    spec_fields.check_spec_fields(params["spec"], spec_fields.CLUSTER_SPEC_FIELDS)
    if params["spec"]:  # policy, role, certificate ARNs: of the cluster's partition and region
        kops_rules.arn_partitions(params["spec"], region or kops_rules.region_of_zone((params["zones"] or [""])[0]), "spec")
    if params["kubernetes_version"]:
        kube_versions.supported_kubernetes_version(params["kubernetes_version"], too_new_allowed=kops_setting(params, "KOPS_RUN_TOO_NEW_VERSION"))
    if params["dns_zone"]:
        params["dns_zone"] = dns_zones.dns_zone_encloses(params["dns_zone"], name)
    if params["cloud_labels"]:
        ig_labels.cloud_labels(params["cloud_labels"], "cloud_labels")  # kops cluster.go validateCloudLabels
    if params["network_cidr"]:
        kops_rules.cidr(params["network_cidr"], "network_cidr")
    for field in ("admin_access", "ssh_access"):
        for value in params[field] or []:
            kops_rules.cidr(value, field)
    check_creation_options(params)
    update_options(params)
    if params["bastion"] and params["topology"] != "private":
        # cmd/kops/create_cluster.go: "bastion supports --topology='private' only"
        raise kops_rules.RuleError("bastion: a bastion needs topology: private (public subnets need none)")
    return name


def update_options(params):
    """The options of every ``kops update cluster`` of the run (ClusterOps.update_options): ``instance_group_roles`` in
    kops' names (kops_rolling.rolling_role, the parse kops' update and rolling update share), ``prune`` and
    ``reconcile`` (apply with ``kops reconcile cluster --yes``; not with terraform or roles) and ``allow_kops_downgrade``. Raises
    kops_rules.RuleError for an unknown role, or for roles with ``target: terraform`` (kops would leave the other
    groups out of the files; docs/tutorial/upgrading-kubernetes.md gives Terraform a targeted apply)."""
    roles = [kops_rolling.rolling_role(role) for role in params["instance_group_roles"] or []]
    if roles and params["target"] == "terraform":
        raise kops_rules.RuleError(
            "instance_group_roles: not with target: terraform (kops would write only those groups and drop the others from "
            "the files); for the control plane first, apply the control-plane Auto Scaling groups with a targeted terraform "
            "apply as kops docs/tutorial/upgrading-kubernetes.md shows, roll them, then apply the rest"
        )
    if params["reconcile"] and (params["target"] == "terraform" or roles):
        # cmd/kops/reconcile_cluster.go: "reconcile is not supported with terraform"; it updates every group in turn
        raise kops_rules.RuleError(
            "reconcile: not with %s (kops reconcile cluster updates and rolls every group itself, and refuses terraform)"
            % ("target: terraform" if params["target"] == "terraform" else "instance_group_roles")
        )
    return {"instance_group_roles": roles, "prune": params["prune"], "reconcile": params["reconcile"], "allow_kops_downgrade": params["allow_kops_downgrade"]}


def check_creation_options(params):
    """The rules of the options kops only takes at creation (kops_rules cites kops' source for each)."""
    for cidr in params["additional_network_cidrs"] or []:
        kops_rules.cidr(cidr, "additional_network_cidrs")
    if params["additional_network_cidrs"] and not params["network_cidr"]:
        raise kops_rules.RuleError("additional_network_cidrs: needs network_cidr (kops takes the first CIDR as the network's)")
    create_rules.egress(params["egress"], params["topology"], params["ipv6"])
    for field in ("node_security_groups", "control_plane_security_groups"):
        create_rules.security_groups(params[field], field)
    if params["discovery_store"] is not None:
        create_rules.discovery_store(params["discovery_store"])
    create_rules.instance_manager(params["instance_manager"], params["discovery_store"])
    create_rules.api_server_count(params["api_server_count"], kops_setting(params, "KOPS_FEATURE_FLAGS"))
    create_rules.feature_gates(params["kubernetes_feature_gates"])
    create_rules.spec_set(params["set"])


def main():
    module = KopsModule(argument_spec=argument_spec(), supports_check_mode=True, **ARGUMENT_CHECKS)
    params = dict(module.params)
    if "PRIVATE KEY" in (params["ssh_public_key"] or ""):
        module.no_log_values.add(params["ssh_public_key"])  # a private key given by mistake: never echo it
    name = checked(module, check_params, params, module.region)
    route53_client = functools.partial(module.client, "route53", retry_decorator=route53.retry_decorator())
    failure = "kops failed for cluster %s" % name
    run = KopsRun(module, name, "cluster %s" % name, failure, params["kubeconfig"], route53=route53_client, update_options=update_options(params))
    present = params["state"] == "present"
    run.exit(run(lambda: ensure_present(module, run.ops, name, params, run.guard.s3) if present else ensure_absent(module, run.ops, name, params)))


if __name__ == "__main__":
    main()
