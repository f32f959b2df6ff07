"""InstanceGroup rules (kops_ig) against the kops v1.36.2 rule each mirrors (file:line in k8s.io/kops@v1.36.2),
or the Kubernetes / AWS rule when kops stores what the platform later refuses. Each case is the source's own
condition: what it refuses is refused (naming the option), what it accepts is accepted."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import ig as kops_ig
from ansible_collections.kopsible.kops.plugins.module_utils._kops import user_data
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

ALL_ON_DEMAND = {"instances": ["c5.large", "c5a.large"], "on_demand_above_base": 100}


def refused(params, role="Node"):
    with pytest.raises(RuleError) as err:
        kops_ig.check_fields(params, role)
    return str(err.value)


# --- warm pool: pkg/apis/kops/validation/instancegroup.go:289-307 ---------------------------------------------


@pytest.mark.parametrize("strategy", [None] + list(kops_ig.SPOT_STRATEGIES))
def test_warm_pool_with_all_on_demand_mixed_policy_is_accepted(strategy):
    """Issue 16 item 1: kops forbids a warm pool only with maxPrice (instancegroup.go:294-296)."""
    policy = dict(ALL_ON_DEMAND, spot_allocation_strategy=strategy) if strategy else ALL_ON_DEMAND
    kops_ig.check_fields({"warm_pool": {"min_size": 1, "max_size": 2}, "mixed_instances_policy": policy}, "Node")


def test_warm_pool_with_spot_capacity_in_a_mixed_policy_is_accepted_as_kops_does():
    """instancegroup.go:294 tests g.Spec.MaxPrice only; a mixed policy with spot capacity passes kops."""
    kops_ig.check_fields(
        {
            "warm_pool": {"min_size": 0},
            "mixed_instances_policy": {"instances": ["m5.large"], "on_demand_above_base": 0, "spot_allocation_strategy": "capacity-optimized"},
        },
        "Node",
    )


def test_warm_pool_with_max_price_is_refused():
    """instancegroup.go:294-296: "warm pool cannot be used with spot instances"."""
    assert refused({"warm_pool": {"min_size": 1}, "max_price": "0.10"}).startswith("warm_pool: cannot be used with spot")


@pytest.mark.parametrize("role", ["ControlPlane", "Bastion"])
def test_warm_pool_role_rule(role):
    """instancegroup.go:291-293: only Node or APIServer while the pool is on."""
    assert "only allowed on instance groups with role Node or APIServer" in refused({"warm_pool": {"min_size": 1}}, role)
    kops_ig.check_fields({"warm_pool": {"min_size": 1}}, "APIServer")


def test_warm_pool_off_with_max_size_zero_is_allowed_anywhere():
    """instancegroup.go:290: the role and maxPrice rules apply when maxSize is unset or not 0."""
    kops_ig.check_fields({"warm_pool": {"max_size": 0}, "max_price": "0.1"}, "Bastion")


@pytest.mark.parametrize(
    "pool, fragment",
    [
        ({"max_size": -1}, "warm_pool.max_size: cannot be negative"),  # instancegroup.go:299-300
        ({"min_size": 3, "max_size": 2}, "cannot be lower than min_size 3"),  # instancegroup.go:301-302
        ({"min_size": -1}, "warm_pool.min_size: cannot be negative"),  # instancegroup.go:305-306
    ],
)
def test_warm_pool_sizes(pool, fragment):
    assert fragment in refused({"warm_pool": pool})


# --- sizes: instancegroup.go:62-71, 94-98 ----------------------------------------------------------------------


def test_control_plane_may_have_zero_instances():
    """instancegroup.go:66-71 refuses minSize/maxSize > 1 only; 0 (a stopped control-plane group) is accepted."""
    kops_ig.check_sizes("ControlPlane", 0, 0)
    kops_ig.check_sizes("ControlPlane", 1, 1)
    with pytest.raises(RuleError, match="^max_size: 2; a ControlPlane InstanceGroup has at most 1"):
        kops_ig.check_sizes("ControlPlane", 1, 2)


def test_max_below_min_refused():
    with pytest.raises(RuleError, match="^max_size: 1 is less than min_size 2"):  # instancegroup.go:94-98
        kops_ig.check_sizes("Node", 2, 1)


# --- root volume: instancegroup.go:111-119, 284-287 ------------------------------------------------------------


def test_root_volume_zero_iops_and_throughput_are_kops_defaults():
    kops_ig.check_fields({"root_volume": {"size": 0, "iops": 0, "throughput": 0, "type": "io2"}}, "Node")


@pytest.mark.parametrize(
    "volume, fragment",
    [
        ({"iops": -1}, "root_volume.iops: must be 0"),
        ({"throughput": -5}, "root_volume.throughput: must be 0"),
        ({"type": "st1"}, "root_volume.type: 'st1' is not one of standard, gp3, gp2, io1, io2"),
    ],
)
def test_root_volume_refused(volume, fragment):
    assert fragment in refused({"root_volume": volume})


# --- additional user data: instancegroup.go:412-438 ------------------------------------------------------------


@pytest.mark.parametrize(
    "part, fragment",
    [
        ({"name": "a.sh", "content": "x"}, "additional_user_data[0].type: None is not one of"),
        ({"name": "a.sh", "type": "text/x-python", "content": "x"}, "'text/x-python' is not one of"),
        ({"name": "a.sh", "type": "text/x-shellscript"}, "additional_user_data[0].content: required"),
    ],
)
def test_user_data_parts(part, fragment):
    assert fragment in refused({"additional_user_data": [part]})


# --- taints: util/taints.go:27-57, instancegroup.go:199-211 ----------------------------------------------------


def test_duplicate_taint_refused():
    assert refused({"taints": ["a=b:NoSchedule", "a=b:NoSchedule"]}).startswith("taints[1]: 'a=b:NoSchedule' is listed twice")
    kops_ig.check_fields({"taints": ["a=b:NoSchedule", "a=b:NoExecute"]}, "Node")


def test_taints_sharing_a_key_and_effect_are_refused_as_kubernetes_refuses_the_node():
    """Kubernetes' own case (pkg/apis/core/validation/validation_test.go TestValidateNode, "duplicated-taints-with-
    same-key-effect": dedicated=special-user-1 and dedicated=special-user-2, both NoSchedule): kops stores them,
    the API server refuses the Node; the same key with another effect, or another key with the same effect, is what
    both take."""
    message = refused({"taints": ["dedicated=special-user-1:NoSchedule", "dedicated=special-user-2:NoSchedule"]})
    assert message.startswith(
        "taints[1]: 'dedicated=special-user-2:NoSchedule' has the key 'dedicated' and effect NoSchedule of taints[0] 'dedicated=special-user-1:NoSchedule'"
    ), message
    assert '"taints must be unique by key and effect pair", validateNodeTaints' in message
    assert refused({"taints": ["dedicated:NoSchedule", "dedicated=x:NoSchedule"]}).startswith("taints[1]")
    kops_ig.check_fields({"taints": ["dedicated=special-user-1:NoSchedule", "dedicated=special-user-1:NoExecute", "other=a:NoSchedule"]}, "Node")


# --- external load balancers: instancegroup.go:488-531 ---------------------------------------------------------


@pytest.mark.parametrize(
    "lb, fragment",
    [
        ({"load_balancer_name": "x", "target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/1"}, "not both"),
        ({"load_balancer_name": "n" * 33}, "has 33 characters; at most 32"),
        ({"target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/x/1"}, "is not a target group ARN"),
        ({"target_group_arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/%s/1" % ("t" * 33)}, "at most 32"),
    ],
)
def test_external_load_balancers(lb, fragment):
    assert fragment in refused({"external_load_balancers": [lb]})


def test_classic_load_balancers_at_most_10_target_groups_more():
    """awstasks/autoscalinggroup.go:610-617 attaches classic LBs in one AttachLoadBalancers call (up to 10 names);
    target groups go in chunks of 10 (autoscalinggroup.go:44, 628-636)."""
    assert "11 classic load balancers" in refused({"external_load_balancers": [{"load_balancer_name": "lb%d" % i} for i in range(11)]})
    arn = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t%d/1"
    kops_ig.check_fields(
        {"external_load_balancers": [{"target_group_arn": arn % i} for i in range(12)] + [{"load_balancer_name": "lb%d" % i} for i in range(10)]}, "Node"
    )


def test_external_load_balancer_in_china_partition_accepted():
    kops_ig.check_fields(
        {"external_load_balancers": [{"target_group_arn": "arn:aws-cn:elasticloadbalancing:cn-northwest-1:123456789012:targetgroup/t/1"}]}, "Node"
    )


# --- mixed instances policy: aws.go:249-302 --------------------------------------------------------------------


def test_on_demand_base_above_max_size_refused():
    """aws.go:285-287: onDemandBase "cannot be greater than max size"."""
    message = refused({"max_size": 2, "mixed_instances_policy": {"on_demand_base": 3}})
    assert message.startswith("mixed_instances_policy.on_demand_base: 3 cannot be greater than max_size 2")


# --- max instance lifetime: aws.go:114-123 and AWS' 365-day ceiling ---------------------------------------------


@pytest.mark.parametrize("value, ok", [("0", True), ("24h", True), ("23h59m", False), ("8760h", True), ("8761h", False)])
def test_max_instance_lifetime(value, ok):
    if ok:
        kops_ig.check_fields({"max_instance_lifetime": value}, "Node")
    else:
        assert refused({"max_instance_lifetime": value}).startswith("max_instance_lifetime: %s" % value)


# --- node labels: instancegroup.go:451-458 and apimachinery v0.36.0 content/kube.go:43-93 ------------------------


@pytest.mark.parametrize(
    "labels, fragment",
    [
        ({"team": "v" * 64}, "the value has 64 characters; at most 63"),  # kube.go:87 (issue 16 item 2)
        ({"a/b/c": "x"}, "at most one '/'"),  # instancegroup.go:454 (issue 16)
        ({"example.com/" + "n" * 64: "x"}, "the name part has 64 characters"),  # kube.go:64-66
        ({"Example.com/x": "1"}, "is not a lowercase DNS subdomain"),  # kube.go:53 (dns.go:64)
        ({"example.com\n/x": "1"}, "the prefix 'example.com\\n' is not a lowercase DNS subdomain"),  # Go's $ is the end of text
        ({"/x": "1"}, "the prefix before '/' is empty"),  # kube.go:51-52
        ({"-x": "1"}, "the name part must be"),  # kube.go:68
        ({"x": "-bad"}, "the value must be empty or"),  # kube.go:90
    ],
)
def test_node_labels_refused(labels, fragment):
    message = refused({"node_labels": labels})
    assert message.startswith("node_labels: ") and fragment in message and "kubelet" in message


def test_node_labels_accepted():
    kops_ig.check_fields({"node_labels": {"node.kubernetes.io/lifecycle": "spot", "a": "", "b": "v" * 63, "removed": None}}, "Node")


# --- cloud labels: cluster.go:122-153, instancegroup.go:466-486 ------------------------------------------------


@pytest.mark.parametrize(
    "labels, fragment",
    [
        ({"Name": "x"}, "'Name' is a label kops reserves"),
        ({"KubernetesCluster": "x"}, "reserves"),
        ({"kubernetes.io/cluster/foo": "owned"}, "starts with 'kubernetes.io/cluster/'"),
        ({"kops.k8s.io/foo": "x"}, "starts with 'kops.k8s.io/'"),
        ({"kops.k8s.io/instancegroup": "other"}, "must be the group's own name 'nodes'"),
        ({"aws:foo": "x"}, "not an AWS tag key"),
        ({"k": "v" * 257}, "at most 256"),
    ],
)
def test_ig_cloud_labels_refused(labels, fragment):
    assert fragment in refused({"name": "nodes", "cloud_labels": labels})


def test_ig_cloud_labels_own_name_accepted():
    kops_ig.check_fields({"name": "nodes", "cloud_labels": {"kops.k8s.io/instancegroup": "nodes", "team": "a"}}, "Node")


# --- user data size: EC2's 16 KB, kops' framing (pkg/model/resources/nodeup.go:281-326) --------------------------

NODEUP = "#!/bin/bash\nset -o errexit\n" + "echo nodeup\n" * 100
PART = {"name": "hello.sh", "type": "text/x-shellscript", "content": "#!/bin/sh\necho hi\n"}


def test_multipart_framing_is_kops_own():
    rendered = user_data.aws_multipart_mime(NODEUP, [PART]).decode()
    assert rendered.startswith(
        'Content-Type: multipart/mixed; boundary="MIMEBOUNDARY"\r\nMIME-Version: 1.0\r\n\r\n'
        '--MIMEBOUNDARY\r\nContent-Disposition: attachment; filename="nodeup.sh"\r\n'
        "Content-Transfer-Encoding: 7bit\r\nContent-Type: text/x-shellscript\r\nMime-Version: 1.0\r\n\r\n"
    )
    assert rendered.endswith(
        '\r\n--MIMEBOUNDARY\r\nContent-Disposition: attachment; filename="hello.sh"\r\n'
        "Content-Transfer-Encoding: 7bit\r\nContent-Type: text/x-shellscript\r\nMime-Version: 1.0\r\n"
        "\r\n#!/bin/sh\necho hi\n\r\n--MIMEBOUNDARY--\r\n"
    )
    assert user_data.nodeup_script_of(rendered) == NODEUP
    assert user_data.aws_multipart_mime(NODEUP, []) == NODEUP.encode() and user_data.nodeup_script_of(NODEUP) == NODEUP
    bastion = user_data.aws_multipart_mime(NODEUP, [PART], bastion=True).decode()
    assert "nodeup.sh" not in bastion and user_data.nodeup_script_of(bastion) is None


def test_user_data_over_16384_bytes_refused_naming_the_option():
    """EC2 refuses user data over 16 KB raw (kops' own limit for instances: awstasks/instance.go:35)."""
    room = 16384 - len(user_data.aws_multipart_mime(NODEUP, [dict(PART, content="")]))
    spec = {"role": "Node", "additionalUserData": [dict(PART, content="x" * room)]}
    assert user_data.user_data_problem(NODEUP, spec, "nodes.c.example.org") is None  # exactly 16384: accepted
    spec["additionalUserData"][0]["content"] += "x"
    problem = user_data.user_data_problem(NODEUP, spec, "nodes.c.example.org")
    assert problem.startswith(
        "additional_user_data: the launch template user data would be 16385 bytes, over EC2's "
        "limit of 16384 (nodeup script %d bytes as kops rendered it in nodes.c.example.org" % len(NODEUP)
    )
    assert "compress_user_data compresses only kops' own kube_env" in problem


@pytest.mark.parametrize(
    "given, stored", [("168h", "168h0m0s"), ("24h", "24h0m0s"), ("90m", "1h30m0s"), ("1h30m", "1h30m0s"), ("0", "0s"), ("86400s", "24h0m0s")]
)
def test_lifetime_is_written_as_kops_stores_it(given, stored):
    """kops keeps maxInstanceLifetime as a metav1.Duration and writes Go's Duration String: a re-run of the same
    option must compare equal to what kops stored (guide 003's lifetime group re-run was changed every time)."""
    assert kops_ig.overrides({"max_instance_lifetime": given}) == {"maxInstanceLifetime": stored}
