# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """Options shared by every module that runs kops."""

    DOCUMENTATION = r"""
options:
  state_store:
    description:
      - The kOps state store, e.g. C(s3://my-kops-state). Falls back to the E(KOPS_STATE_STORE) environment variable.
    type: str
  kops_binary:
    description:
      - Path or command name of the kops binary (v1.36 is what this collection is tested with).
    type: str
    default: kops
  kops_env:
    description:
      - Extra environment variables for kops, e.g. C(KOPS_FEATURE_FLAGS) or C(KOPS_BASE_URL) for a local artifact mirror.
      - Credentials should come from the AWS options instead; this is not logged but is not treated as secret either.
    type: dict
    default: {}
  kops_timeout:
    description: Seconds one kops command may run before it is stopped.
    type: int
    default: 1800
  allowed_account_ids:
    description:
      - Refuse to run unless the AWS credentials belong to one of these 12-digit account ids (checked with
        STS GetCallerIdentity before anything is written, also in check mode).
    type: list
    elements: str
  lock_timeout:
    description:
      - Seconds to wait for the cluster's state-store lock while another run holds it, then fail naming the
        holder. The lock is an object C(.kopsible-locks/<cluster>.json) in the state store, created with a
        conditional put (C(If-None-Match)); check mode takes no lock.
      - A run that waited while another run wrote the cluster's spec reads it again under the lock and plans
        on it before writing (C(state_store_safety.lock.replanned)); it fails, writing nothing, only when
        the other run changed a field this run sets (C(conflicting_fields) names them).
    type: int
    default: 600
  break_lock:
    description:
      - Delete the cluster's lock before taking it, whoever holds it. Only for a run that crashed and left its
        lock behind; the result's C(state_store_safety.lock.broken) shows what was broken.
    type: bool
    default: false
notes:
  - Every run with an C(s3://) state store checks the bucket's versioning and warns when it is off (kOps asks
    for a versioned bucket). Before kops replaces a cluster or InstanceGroup spec, the result's
    C(previous_versions) gives the object version it replaced, for a roll-back with C(aws s3api copy-object).
  - kops receives the module's AWS settings (O(region), O(endpoint_url), credentials or O(profile)) as
    environment variables; with O(endpoint_url) the state store is reached through the same endpoint
    (C(S3_ENDPOINT)), which is how the collection runs against a local AWS emulator.
  - >-
    kops' own warnings reach the result's C(warnings), each once per run, named by the kops command that printed it,
    e.g. C(kops upgrade cluster: cluster version "1.35.4" is greater than the desired version "1.35.2"). They are
    klog C(W) lines, the notices kops frames in lines of C(*) (a new kops version, a deprecated Kubernetes version)
    and plain lines on standard error (e.g. C(Unable to reach the kubernetes API.)), failed runs included.
"""

    # Modules of the action group that run no kops (route53_subdomain): the group's shared options are accepted, so
    # that module_defaults for group/kopsible.kops.kops can carry them once; the kops-only ones do nothing here.
    GROUP = r"""
options:
  allowed_account_ids:
    description:
      - Refuse to run unless the AWS credentials belong to one of these 12-digit account ids (checked with
        STS GetCallerIdentity before anything is written, also in check mode), as the kops modules do.
    type: list
    elements: str
  state_store:
    description:
      - Ignored (this module runs no kops). Accepted so that C(module_defaults) for C(group/kopsible.kops.kops)
        can set the kops modules' state store once for every module of the collection.
    type: str
  kops_binary:
    description: Ignored (this module runs no kops); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: str
    default: kops
  kops_env:
    description: Ignored (this module runs no kops); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: dict
    default: {}
  kops_timeout:
    description: Ignored (this module runs no kops); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: int
    default: 1800
  lock_timeout:
    description:
      - Ignored (this module takes no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: int
    default: 600
  break_lock:
    description:
      - Ignored (this module takes no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: bool
    default: false
"""

    # The read-only modules (kops_cluster_info, kops_instancegroup_info): the group's shared options are accepted, so
    # that module_defaults for group/kopsible.kops.kops can carry them once; state_store is in the kops_info fragment.
    READ_ONLY = r"""
options:
  allowed_account_ids:
    description:
      - Refuse to run unless the AWS credentials belong to one of these 12-digit account ids (checked with
        STS GetCallerIdentity before anything is read), as the other modules of the collection do.
    type: list
    elements: str
  kops_binary:
    description:
      - Path or command name of the kops binary. Used only by M(kopsible.kops.kops_cluster_info) with
        O(kopsible.kops.kops_cluster_info#module:validate=true); otherwise the state store is read without kops.
    type: str
    default: kops
  kops_env:
    description: Extra environment variables for kops (used where O(kops_binary) is).
    type: dict
    default: {}
  kops_timeout:
    description: Seconds a kops command (C(kops validate cluster)) may run before it is stopped.
    type: int
    default: 1800
  lock_timeout:
    description: Ignored (read-only modules take no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: int
    default: 600
  break_lock:
    description: Ignored (read-only modules take no state-store lock); accepted for C(module_defaults) of C(group/kopsible.kops.kops).
    type: bool
    default: false
"""

    # Modules that plan and apply (kops_cluster, kops_instancegroup): ClusterOps.plan_and_apply.
    APPLY = r"""
options:
  plan_before_apply:
    description:
      - With O(apply=true), plan (C(kops update cluster) dry run) before applying, and return the plan.
      - C(false) skips the dry run when this run itself wrote the spec, and applies straight away
        (C(kops update cluster --yes)); the run is changed anyway, and it saves one full read of the
        cluster's cloud resources, which grows with the cluster (docs/benchmarks.md has the figures).
        RV(plan) is then null and RV(plan_note) says why.
      - The price of C(false) is that nothing is shown before C(--yes), and C(--yes) applies all that is
        pending, also drift or a spec another run wrote.
      - A run that wrote nothing (or only deleted an InstanceGroup, whose cloud resources kops removes at
        once) always plans, since only the plan tells whether anything is pending. Check mode ignores the
        option.
    type: bool
    default: true
notes:
  - >-
    With C(--diff), a non-empty cloud plan is shown after the spec diff, one line per planned item under
    "cloud plan of kops update cluster (to apply)" (or "(applied)"), so a change the plan alone decides (the spec
    already stored, the cloud behind it or drifted) shows what changes.
"""
