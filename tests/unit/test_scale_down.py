"""Issue 34 item 1: the instances a scale-down removes (_kops.scale_down.choose_instances), on the cases of the Amazon
EC2 Auto Scaling user guide ("Configure termination policies": zone balance before any policy; the Default policy's
outdated configuration, then the next billing hour), and kops' default sizes (pkg/model/awsmodel/autoscalinggroup.go)."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import scale_down

NOW = 1_800_000_000.0
LT = {"LaunchTemplateId": "lt-0current", "LaunchTemplateName": "nodes.example", "Version": "$Latest"}


def member(instance_id, zone, version=3, protected=False, state="InService", health="Healthy", template="lt-0current", config=None):
    item = {"InstanceId": instance_id, "AvailabilityZone": zone, "LifecycleState": state, "HealthStatus": health, "ProtectedFromScaleIn": protected}
    if config:
        item["LaunchConfigurationName"] = config
    else:
        item["LaunchTemplate"] = {"LaunchTemplateId": template, "Version": str(version)}
    return item


def group(*members, policies=None, desired=None):
    return {
        "AutoScalingGroupName": "nodes.example",
        "DesiredCapacity": len(members) if desired is None else desired,
        "MinSize": len(members),
        "Instances": list(members),
        "TerminationPolicies": policies or ["Default"],
        "LaunchTemplate": LT,
    }


# launched 10, 20, 30 minutes before NOW (i-a oldest): to the next billing hour 50, 40, 30 minutes
TIMES = {"i-a": NOW - 600, "i-b": NOW - 1200, "i-c": NOW - 1800, "i-d": NOW - 2400}


def test_zone_balance_comes_before_the_policy():
    # NewestInstance would pick i-a (launched last), but us-east-1a holds more instances than us-east-1b
    asg = group(member("i-a", "us-east-1b"), member("i-b", "us-east-1a"), member("i-c", "us-east-1a"), policies=["NewestInstance"])
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-b"]


def test_balanced_zones_apply_the_policy_across_all_zones():
    asg = group(member("i-a", "us-east-1a"), member("i-b", "us-east-1b"), policies=["OldestInstance"])
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-b"]
    asg["TerminationPolicies"] = ["NewestInstance"]
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-a"]


def test_each_pick_rebalances_the_zones():
    asg = group(*(member(i, z) for i, z in (("i-a", "us-east-1a"), ("i-b", "us-east-1a"), ("i-c", "us-east-1b"), ("i-d", "us-east-1b"))))
    chosen = scale_down.choose_instances(asg, 2, TIMES, NOW)
    assert sorted({m["AvailabilityZone"] for m in asg["Instances"] if m["InstanceId"] in chosen}) == ["us-east-1a", "us-east-1b"]


def test_protected_instances_are_never_chosen_and_a_zone_of_only_protected_ones_is_passed_over():
    # "the Availability Zone(s) with the most instances and at least one instance that is not protected from scale in"
    asg = group(member("i-a", "us-east-1a", protected=True), member("i-b", "us-east-1a", protected=True), member("i-c", "us-east-1b"))
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-c"]
    assert scale_down.choose_instances(asg, 3, TIMES, NOW) == ["i-c"]  # fewer than asked when the rest are protected


def test_default_policy_removes_the_outdated_configuration_first():
    # launch configuration first, then another launch template, then the oldest version of the current one
    asg = group(member("i-a", "us-east-1a", version=2), member("i-b", "us-east-1a", version=3), member("i-c", "us-east-1a", template="lt-0other"))
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-c"]
    asg["Instances"].append(member("i-d", "us-east-1a", config="nodes-lc"))
    assert scale_down.choose_instances(asg, 3, TIMES, NOW) == ["i-d", "i-c", "i-a"]


def test_default_policy_then_takes_the_instance_closest_to_its_next_billing_hour():
    asg = group(member("i-a", "us-east-1a"), member("i-b", "us-east-1a"), member("i-c", "us-east-1a"))
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-c"]  # 30 minutes to its next hour, the closest


def test_ties_are_broken_by_the_lowest_instance_id_so_check_mode_and_the_run_agree():
    asg = group(member("i-b", "us-east-1a"), member("i-a", "us-east-1a"))
    assert scale_down.choose_instances(asg, 1, {}, NOW) == ["i-a"]


def test_instances_leaving_or_unhealthy_are_not_chosen():
    asg = group(member("i-a", "us-east-1a", state="Terminating"), member("i-b", "us-east-1a", health="Unhealthy"), member("i-c", "us-east-1a"))
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-c"]


def test_a_policy_that_orders_nothing_here_falls_through_to_the_next():
    asg = group(member("i-a", "us-east-1a"), member("i-b", "us-east-1a"), policies=["AllocationStrategy", "OldestInstance"])
    assert scale_down.choose_instances(asg, 1, TIMES, NOW) == ["i-b"]


@pytest.mark.parametrize("desired,maximum,expected", [(3, 2, 1), (2, 2, 0), (1, 2, 0), (5, 0, 5)])
def test_excess_is_the_desired_capacity_above_the_new_maximum(desired, maximum, expected):
    assert scale_down.excess({"DesiredCapacity": desired}, maximum) == expected


@pytest.mark.parametrize(
    "role,sizes,expected", [("Node", (None, None), (2, 2)), ("ControlPlane", (None, None), (1, 1)), ("Node", (0, 5), (0, 5)), ("APIServer", (None, 3), (1, 3))]
)
def test_kops_default_sizes(role, sizes, expected):
    assert scale_down.default_sizes(role, *sizes) == expected


class _Recorder:
    def __init__(self):
        self.calls = []

    def update_auto_scaling_group(self, **kwargs):
        self.calls.append(("update", kwargs))

    def terminate_instance_in_auto_scaling_group(self, **kwargs):
        self.calls.append(("terminate", kwargs))


def test_min_size_is_lowered_only_when_the_decrement_would_go_below_it():
    asg = {"AutoScalingGroupName": "nodes.example", "MinSize": 3, "DesiredCapacity": 3}
    aws = _Recorder()
    assert scale_down.lower_min_size(aws, asg, 1, 2) is True
    assert aws.calls == [("update", {"AutoScalingGroupName": "nodes.example", "MinSize": 2})]
    assert scale_down.lower_min_size(aws, {"AutoScalingGroupName": "n", "MinSize": 1, "DesiredCapacity": 3}, 1, 1) is False
    done = []
    scale_down.terminate_instances(aws, ["i-a"], done)
    assert done == ["i-a"] and aws.calls[-1] == ("terminate", {"InstanceId": "i-a", "ShouldDecrementDesiredCapacity": True})
