"""Issue 15 item 3: a gossip cluster-name sweep. kops cuts generated AWS names at fixed lengths; each name below
puts a dash (a cluster-name dot, which kops turns into a dash, or a dash of a label) at the last position kops
keeps at every cut it makes for examples/gossip (private topology with a bastion), so the cut name ends in a dash
next to the dash kops adds before its hash (``kops-controller-cluster1--<hash>``). AWS accepts every such name;
each cluster is applied on the emulator with the real kops, and the names are read back from the emulator.

The cuts (k8s.io/kops@v1.36.2; ``TruncateString`` in pkg/truncate/truncate.go keeps ``MaxLength - 7``
characters, then adds ``-`` and a 6-character hash; ``AlwaysAddHash`` cuts even short names):
- ``GetResourceName32(cluster, prefix)`` (upup/pkg/fi/cloudup/awsup/aws_utils.go): ``prefix-<cluster, dots to
  dashes>``, 32, always: the API NLB (``api``, pkg/model/awsmodel/api_loadbalancer.go LBName32), its target groups
  ``tcp`` and ``kops-controller`` (NLBTargetGroupName), the bastion NLB and target group (``bastion``,
  pkg/model/awsmodel/bastion.go). The 25th character is the cluster name's character 23 - len(prefix);
- ``GetClusterName40(cluster)`` (aws_utils.go): EventBridge rule names ``<cut>-<event>``
  (pkg/model/awsmodel/nodeterminationhandler.go), 40: cluster character 32;
- ``QueueNamePrefix(cluster)`` (pkg/model/names.go): the SQS queue ``<cut>-nth``, dots to dashes, 75: character 67;
- IAM role and instance-profile names ``masters.``/``nodes.``/``bastions.`` + cluster (pkg/model/names.go
  IAMName, pkg/model/iam/types.go MaxLengthIAMRoleName 64): characters 48, 50 and 47.
(``tls`` and ``etcd-cilium`` target groups use GetResourceName32 as well, only with an API certificate or etcd-backed
Cilium: the same cut, with prefixes of the same lengths as ``tcp`` and within the sweep's labels.)
One emulator for the file (the session's), one cheap cluster per name (one zone, one node).
"""

import pytest
from test_examples import GOSSIP_REGION, offline, play

pytestmark = pytest.mark.kops

# Dots (dashes in the cut names) at 8, 16, 20, 32, 47 and 67; the control-plane and node roles are cut too.
DOTS = "cluster1.sweep16.abc.eventbridge.bastions-iam47.sqs-queue-prefix-67.k8s.local"
# Label dashes at 8, 16, 20, 32 and 67, dots at 48 and 50 (masters., nodes.).
DASHES = "inlabel8-sixteen-two-eventbridge-truncatedroles4.n.nodes-iam-and-sq-queue.k8s.local"


def kept(name, max_length, always=False):
    """What TruncateString keeps of ``name`` before ``-<hash>`` (pkg/truncate/truncate.go), or None when it keeps
    the whole name (short enough and no AlwaysAddHash)."""
    if not always and len(name) <= max_length:
        return None
    return name[: max_length - 7]


def cuts(cluster):
    """``{cut: (kind, name kept before the hash)}`` for every cut kops makes of ``cluster``'s names (module
    docstring); ``kind`` is the AWS service whose names it is."""
    dashed = cluster.replace(".", "-")
    found = {p: ("elbv2", kept(p + "-" + dashed, 32, always=True)) for p in ("api", "tcp", "kops-controller", "bastion")}
    found["eventbridge"] = ("events", kept(cluster, 40))
    found["sqs"] = ("sqs", kept(dashed, 75))
    found.update((r, ("iam", kept(r + "." + cluster, 64))) for r in ("masters", "nodes", "bastions"))
    return {cut: value for cut, value in found.items() if value[1] is not None}


def test_sweep_puts_a_dash_at_every_cut():
    """The names are what the sweep says: at every cut, one name keeps a dash last (a dot for IAM, which keeps
    dots), once from a cluster-name dot and once from a label's dash where the cut allows both."""
    dots, dashes = cuts(DOTS), cuts(DASHES)
    assert set(dots) == set(dashes) == {"api", "tcp", "kops-controller", "bastion", "eventbridge", "sqs", "masters", "nodes", "bastions"}
    at_dash = {cut for names in (dots, dashes) for cut, (_, base) in names.items() if base[-1] in "-."}
    assert at_dash == set(dots)
    assert {cut for cut, (_, base) in dots.items() if base[-1] in "-."} == {"api", "tcp", "kops-controller", "bastion", "eventbridge", "sqs", "bastions"}
    assert {cut for cut, (_, base) in dashes.items() if base[-1] in "-."} == {
        "api",
        "tcp",
        "kops-controller",
        "bastion",
        "eventbridge",
        "sqs",
        "masters",
        "nodes",
    }
    assert dots["kops-controller"][1] == "kops-controller-cluster1-"  # the name of issue 15


def aws_names(emulator):
    """``{kind: [names]}`` as the emulator lists them in the gossip example's region."""
    elbv2 = emulator.client("elbv2", GOSSIP_REGION)
    sqs = emulator.client("sqs", GOSSIP_REGION).list_queues().get("QueueUrls", [])
    return {
        "elbv2": [g["TargetGroupName"] for g in elbv2.describe_target_groups()["TargetGroups"]]
        + [lb["LoadBalancerName"] for lb in elbv2.describe_load_balancers()["LoadBalancers"]],
        "events": [r["Name"] for r in emulator.client("events", GOSSIP_REGION).list_rules()["Rules"]],
        "sqs": [url.rsplit("/", 1)[-1] for url in sqs],
        "iam": [r["RoleName"] for r in emulator.client("iam", GOSSIP_REGION).list_roles()["Roles"]]
        + [p["InstanceProfileName"] for p in emulator.client("iam", GOSSIP_REGION).list_instance_profiles()["InstanceProfiles"]],
    }


@pytest.mark.parametrize("cluster", [DOTS, DASHES], ids=["dots", "label-dashes"])
def test_gossip_names_cut_next_to_a_dash_apply(emulator, ssh_public_key, cluster):
    emulator.warm(GOSSIP_REGION)
    run = play(
        emulator, "gossip", "cluster.yml", offline(emulator, ssh_public_key, cluster_name=cluster, cluster_zones=[GOSSIP_REGION + "a"], cluster_node_count=1)
    )
    result = run.result("kopsible.kops.cluster : Cluster %s is present" % cluster)
    assert result["changed"] is True and result["plan"]["create"], result.get("msg")
    names = aws_names(emulator)
    limits = {"elbv2": 32, "events": 64, "sqs": 80, "iam": 64}
    for kind, base in sorted(cuts(cluster).values()):
        made = [n for n in names[kind] if n.startswith(base + "-")]
        assert made, (kind, base, names[kind])
        assert all(len(n) <= limits[kind] for n in made), made
    # Every resource the apply made is there: both NLBs, the three target groups, a queue, the rules, the roles.
    assert len(names["elbv2"]) == 5 and len(names["sqs"]) == 1 and len(names["events"]) >= 4, names
    assert len([n for n in names["iam"] if n.startswith(("masters.", "nodes.", "bastions."))]) == 6, names["iam"]
