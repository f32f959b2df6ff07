# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """Options shared by the read-only modules kops_cluster_info and kops_instancegroup_info."""

    DOCUMENTATION = r"""
options:
  state_store:
    description:
      - The kOps state store, C(s3://BUCKET[/PREFIX]) or C(file://PATH). Falls back to the E(KOPS_STATE_STORE)
        environment variable.
      - Read directly (kops' own layout, C(NAME/config) and C(NAME/instancegroup/IG)), without the kops binary.
    type: str
  cloud:
    description:
      - Read the cloud side from AWS too, the Auto Scaling group of each InstanceGroup and its instances, and
        tell which instances need an update the way C(kops rolling-update cluster) does (the launch template
        version or launch configuration an instance runs differs from its group's current one).
      - C(false) reads the state store only.
    type: bool
    default: true
  kubeconfig:
    description:
      - A kubeconfig for the cluster's Kubernetes API (e.g. written by M(kopsible.kops.kops_cluster) with
        O(kopsible.kops.kops_cluster#module:export_kubeconfig=true)). When given, the cluster's Nodes are
        listed and joined to their instances. Its contents never appear in the result.
    type: path
  kube_context:
    description:
      - Context of O(kubeconfig) to use; default the context named after the cluster (as C(kops export kubecfg)
        names it), else the current context.
    type: str
notes:
  - Read-only; supports check mode (it does the same reads) and never reports C(changed).
  - AWS calls per cluster with O(cloud=true) are DescribeAutoScalingGroups (one per 50 groups),
    DescribeInstances, DescribeLaunchTemplates (only for groups on C($Latest) or C($Default)) and
    DescribeWarmPool (only for groups with a warm pool); the state store is read with one ListObjectsV2 and
    one GetObject per object.
"""
