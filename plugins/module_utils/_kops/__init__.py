# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kOps' own rules the collection reads stored objects and AWS resources by, in one private package (not an API of
the collection; names may change).

- :mod:`.facts`: one function per fact kops derives from a cluster spec or names an AWS resource by: a spec's
  topology and region, an InstanceGroup's zones and Auto Scaling group name, and the InstanceGroup of a group name.
- :mod:`.scale_down`: a scale-down that drains: the instances an Auto Scaling group would remove (its termination
  policies), their Nodes drained as kops drains a node it rolls, and exactly those terminated.
- :mod:`.run`: the run of a kops module (KopsRun): its parts, the step under the guard, the one failure shape.
- :mod:`.cluster_state`, :mod:`.instancegroup_state`: the steps of kops_cluster and kops_instancegroup behind their main().
- :mod:`.kube_versions`, :mod:`.create_rules`, :mod:`.dns_zones`, :mod:`.spec_fields`, :mod:`.ig_labels`,
  :mod:`.user_data`: kops' rules by topic.
- :mod:`.create_options`, :mod:`.create_args`, :mod:`.update_plan`, :mod:`.rolling_log`, :mod:`.ec2_reads`: the
  create-only options, the create argv, the cloud plan, the roll log, EC2 reads.
- :mod:`.diagnostics`: a diagnostics dump: the Kubernetes objects kops' resource dumper lists, and the redaction of
  Secret values, PEM private keys and credentials that kops does not do.

The kops runs themselves live here too: :mod:`.runner` (running kops: environment, timeouts, redaction),
:mod:`.argv` (each option's flag), :mod:`.cluster_ops` (one method per kops command), :mod:`.output` (parsing kops'
output), :mod:`.rules` (input rules), :mod:`.spec` and :mod:`.ig` (desired vs stored specs), :mod:`.rolling` and
:mod:`.pdb` (rolling updates), :mod:`.info` and :mod:`.upgrade` (read-only views, upgrade plans), :mod:`.preview`
(check mode's scratch store), :mod:`.kubeconfig`, and :mod:`.common` (the module class and shared options).
"""
