"""Fixes to moto's Auto Scaling backend (groups, their instances and launch template versions, warm pools, suspended processes)."""

from emulator_patches import patch


@patch
def describe_warm_pool_of_missing_group_is_validation_error():
    """autoscaling:DescribeWarmPool on a group that does not exist.

    moto: IndexError -> HTTP 500 (kops retries ~10 min, then every preview of a new group fails).
    AWS: HTTP 400 ValidationError, which kops' WarmPool.Find treats as "no warm pool yet"
    (upup/pkg/fi/cloudup/awstasks/warmpool.go).
    """
    from moto.autoscaling.exceptions import ValidationError
    from moto.autoscaling.models import AutoScalingBackend

    original = AutoScalingBackend.describe_warm_pool

    def describe_warm_pool(self, group_name):
        if not self.describe_auto_scaling_groups([group_name]):
            raise ValidationError("AutoScalingGroup name not found - AutoScalingGroup %s not found" % group_name)
        return original(self, group_name)

    AutoScalingBackend.describe_warm_pool = describe_warm_pool


@patch
def group_instances_keep_their_launch_template_version():
    """autoscaling:DescribeAutoScalingGroups, Instances[].LaunchTemplate.Version, and launches.

    moto: a group launches instances from the template's *default* version whatever version the
    group names (e.g. ``$Latest``), and every instance then reports the template's *current*
    default version; so after kops writes a new version, no instance ever looks out of date and
    ``kops rolling-update`` finds nothing to do. It also puts every instance in the first subnet.
    AWS: the group launches from the version it names; each instance keeps the version it was
    launched from (kops compares ``id:version``, upup/pkg/fi/cloudup/awsup/aws_cloud.go
    findInstanceLaunchConfiguration); new instances are balanced across the group's subnets/AZs.
    A replacement the group cannot launch because its launch template was deleted (``kops delete cluster``
    deletes templates and terminates instances in one pass) fails in the group's scaling activity, later;
    the TerminateInstances call that caused it succeeds (moto: IndexError -> HTTP 500 on TerminateInstances).
    """
    from moto.autoscaling import models as asg

    def launch_template(self):
        group = self.auto_scaling_group
        if group is None or group.ec2_launch_template is None:
            return None
        version = _instance_tag(self.instance, "aws:ec2launchtemplate:version")
        return {
            "LaunchTemplateId": group.ec2_launch_template.id,
            "LaunchTemplateName": group.ec2_launch_template.name,
            "Version": version or str(group.ec2_launch_template.default_version_number),
        }

    asg.InstanceState.launch_template = property(launch_template)

    original = asg.FakeAutoScalingGroup.replace_autoscaling_group_instances

    def replace_autoscaling_group_instances(self, count_needed, propagated_tags):
        if not self.ec2_launch_template:
            return original(self, count_needed, propagated_tags)
        if self.ec2_launch_template.id not in self.ec2_backend.launch_templates:
            return
        subnets = [s for s in (self.vpc_zone_identifier or "").split(",") if s]
        for _ in range(count_needed):
            _launch_one(self, propagated_tags, subnets)

    asg.FakeAutoScalingGroup.replace_autoscaling_group_instances = replace_autoscaling_group_instances


def _instance_tag(instance, key):
    """Value (str) of tag ``key`` on an EC2 instance model, or None."""
    for tag in instance.get_tags():
        if tag.get("key") == key:
            return tag.get("value")
    return None


def _launch_one(group, propagated_tags, subnets):
    """Launch one instance of ``group`` from its named template version, in its least used subnet."""
    from moto.autoscaling.models import ASG_NAME_TAG, InstanceState

    tags = dict(propagated_tags)
    tags[ASG_NAME_TAG] = group.name
    tags.update(group.instance_tags)
    version = group.ec2_launch_template.get_version(group.launch_template_version)
    subnet_id, zone = None, group.availability_zones[0] if group.availability_zones else None
    if subnets:
        used = {}
        for state in group.instance_states:
            used[state.instance.subnet_id] = used.get(state.instance.subnet_id, 0) + 1
        subnet_id = min(subnets, key=lambda s: (used.get(s, 0), subnets.index(s)))
        zone = group.ec2_backend.get_subnet(subnet_id).availability_zone
    reservation = group.autoscaling_backend.ec2_backend.run_instances(
        version.image_id,
        1,
        version.user_data,
        group.security_groups,
        instance_type=version.instance_type,
        tags={"instance": tags},
        placement=zone,
        launch_config=None,
        launch_template={"LaunchTemplateId": group.ec2_launch_template.id, "Version": str(version.number)},
        is_instance_type_default=False,
        associate_public_ip=None,
        subnet_id=subnet_id,
    )
    for instance in reservation.instances:
        instance.autoscaling_group = group
        group.instance_states.append(InstanceState(instance, protected_from_scale_in=group.new_instances_protected_from_scale_in))
        _join_target_groups(group, instance)


def _join_target_groups(group, instance):
    """Register a newly launched ``instance`` with each of ``group``'s target groups on the target group's port, as
    an Auto Scaling group does on AWS ("Amazon EC2 Auto Scaling registers the instances with the target group as they
    launch", Auto Scaling user guide, attach-load-balancer-asg). moto registers a group's instances only when the
    group is created or resized: a replacement launched after a termination (every rolling update) was in no target
    group, so the API load balancer of a rolled cluster had no targets. Target groups deleted since are skipped."""
    elbv2 = group.autoscaling_backend.elbv2_backend
    for arn in group.target_group_arns:
        target_group = elbv2.target_groups.get(arn)
        if target_group is not None:
            target_group.register([{"Id": instance.id, "Port": target_group.port}])


@patch
def auto_scaling_group_keeps_max_instance_lifetime():
    """autoscaling:CreateAutoScalingGroup / UpdateAutoScalingGroup with MaxInstanceLifetime, and DescribeAutoScalingGroups.

    moto: drops the parameter, so the group never shows it and kops plans
    ``MaxInstanceLifetime <nil> -> 172800`` on every update of a group that sets maxInstanceLifetime.
    AWS: stores it (seconds, 0 or 86400..31536000) and returns it.
    """
    from moto.autoscaling.responses import AutoScalingResponse

    for action in ("create_auto_scaling_group", "update_auto_scaling_group"):
        original = getattr(AutoScalingResponse, action)

        def wrapper(self, _original=original):
            response = _original(self)
            value = self._get_param("MaxInstanceLifetime")
            if value is not None:
                name = self._get_param("AutoScalingGroupName")
                group = self.autoscaling_backend.describe_auto_scaling_groups([name])[0]
                group.max_instance_lifetime = int(value)
            return response

        setattr(AutoScalingResponse, action, wrapper)


def _merged_mixed_instances_policy(current, update):
    """The policy an UpdateAutoScalingGroup leaves: ``current`` with the parts ``update`` names replaced.

    AWS keeps what the request leaves out: a request with only InstancesDistribution fields keeps the
    launch template and its overrides, one with only a launch template specification keeps the overrides
    (kops sends both kinds, awstasks/autoscalinggroup.go RenderAWS). The specification is reduced to
    the id and version so that moto resolves the template again rather than refusing id + name.
    """
    import copy

    current_template = current.get("LaunchTemplate") or {}
    spec = dict(current_template.get("LaunchTemplateSpecification") or {})
    if spec.get("LaunchTemplateId"):
        spec.pop("LaunchTemplateName", None)
    merged = {
        "LaunchTemplate": {"LaunchTemplateSpecification": spec, "Overrides": copy.deepcopy(current_template.get("Overrides") or [])},
        "InstancesDistribution": dict(current.get("InstancesDistribution") or {}),
    }
    update = update or {}
    template = update.get("LaunchTemplate") or {}
    if template.get("LaunchTemplateSpecification"):
        merged["LaunchTemplate"]["LaunchTemplateSpecification"] = dict(template["LaunchTemplateSpecification"])
    if "Overrides" in template:
        merged["LaunchTemplate"]["Overrides"] = copy.deepcopy(template["Overrides"])
    merged["InstancesDistribution"].update(update.get("InstancesDistribution") or {})
    return merged


@patch
def updating_a_group_keeps_its_mixed_instances_policy():
    """autoscaling:UpdateAutoScalingGroup of a group that has a MixedInstancesPolicy.

    moto: any update that does not restate the whole policy (a new MinSize, only InstancesDistribution,
    only the launch template) replaces it with what the request holds, often nothing, so the group
    shows neither a policy nor a launch template and kops' next rolling update fails ("error finding
    launch template or configuration for autoscaling group").
    AWS: the policy stays; the parts the request names are replaced; a LaunchTemplate or
    LaunchConfigurationName in the request replaces the policy.
    """
    from moto.autoscaling.models import FakeAutoScalingGroup

    original = FakeAutoScalingGroup.update

    def update(self, *args, **kwargs):
        if self.mixed_instances_policy and not args and not kwargs.get("launch_template") and not kwargs.get("launch_config_name"):
            kwargs["mixed_instances_policy"] = _merged_mixed_instances_policy(self.mixed_instances_policy, kwargs.get("mixed_instances_policy"))
        return original(self, *args, **kwargs)

    FakeAutoScalingGroup.update = update


@patch
def auto_scaling_group_update_stores_capacity_rebalance():
    """autoscaling:UpdateAutoScalingGroup with CapacityRebalance, then DescribeAutoScalingGroups.

    moto: CreateAutoScalingGroup stores it, UpdateAutoScalingGroup drops it, so a group whose
    capacityRebalance changed keeps showing the old value and kops plans the change on every run.
    AWS: stored and returned.
    """
    from moto.autoscaling.responses import AutoScalingResponse

    original = AutoScalingResponse.update_auto_scaling_group

    def update_auto_scaling_group(self):
        response = original(self)
        value = self._get_bool_param("CapacityRebalance", None)
        if value is not None:
            name = self._get_param("AutoScalingGroupName")
            self.autoscaling_backend.describe_auto_scaling_groups([name])[0].capacity_rebalance = value
        return response

    AutoScalingResponse.update_auto_scaling_group = update_auto_scaling_group


@patch
def auto_scaling_group_update_stores_termination_policies():
    """autoscaling:UpdateAutoScalingGroup with TerminationPolicies, then DescribeAutoScalingGroups.

    moto: CreateAutoScalingGroup stores them, UpdateAutoScalingGroup drops them ("not yet implemented"), so a
    group keeps showing the policies it was created with.
    AWS: stored and returned (and followed when the group scales in).
    """
    from moto.autoscaling.responses import AutoScalingResponse

    original = AutoScalingResponse.update_auto_scaling_group

    def update_auto_scaling_group(self):
        response = original(self)
        policies = self._get_param("TerminationPolicies", [])
        if policies:
            name = self._get_param("AutoScalingGroupName")
            self.autoscaling_backend.describe_auto_scaling_groups([name])[0].termination_policies = policies
        return response

    AutoScalingResponse.update_auto_scaling_group = update_auto_scaling_group


@patch
def terminate_with_decrement_keeps_the_min_size():
    """autoscaling:TerminateInstanceInAutoScalingGroup with ShouldDecrementDesiredCapacity=true on a group whose
    desired capacity equals its MinSize.

    moto: terminates the instance and lowers the desired capacity below the minimum.
    AWS: HTTP 400 ValidationError ("Currently, desiredSize equals minSize (N). Terminating instance without
    replacement will violate group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false
    or lower group's min size."), nothing terminated.
    """
    from moto.autoscaling.exceptions import ValidationError
    from moto.autoscaling.models import AutoScalingBackend

    original = AutoScalingBackend.terminate_instance

    def terminate_instance(self, instance_id, should_decrement):
        if should_decrement:
            for group in self.autoscaling_groups.values():
                if any(state.instance.id == instance_id for state in group.instance_states) and group.desired_capacity <= group.min_size:
                    raise ValidationError(
                        "Currently, desiredSize equals minSize (%d). Terminating instance without replacement will violate group's min size "
                        "constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size." % group.min_size
                    )
        return original(self, instance_id, should_decrement)

    AutoScalingBackend.terminate_instance = terminate_instance


@patch
def suspended_processes_keep_a_stable_order():
    """autoscaling:SuspendProcesses / ResumeProcesses, then DescribeAutoScalingGroups' SuspendedProcesses.

    moto: keeps the suspended processes as a Python set, so their order changes from one server start to the
    next (string hashes are randomised per process); kops compares the list it reads with the spec's in order
    (awstasks/autoscalinggroup.go Find, SuspendProcesses), so a group with two suspended processes plans
    ``SuspendProcesses [B, A] -> [A, B]`` on every run, depending on the start.
    AWS: a stable list. The emulator keeps the order they were suspended in (the request's order, no
    duplicates); AWS does not document its order.
    """
    from moto.autoscaling.models import AutoScalingBackend

    def suspend_processes(self, group_name, scaling_processes):
        group = self.autoscaling_groups[group_name]
        names = [p["ProcessName"] for p in group.suspended_processes]
        for name in scaling_processes or SUSPENDABLE_PROCESSES:
            if name not in names:
                names.append(name)
        group.suspended_processes = names

    def resume_processes(self, group_name, scaling_processes):
        group = self.autoscaling_groups[group_name]
        names = [p["ProcessName"] for p in group.suspended_processes]
        group.suspended_processes = [n for n in names if scaling_processes and n not in scaling_processes]

    AutoScalingBackend.suspend_processes = suspend_processes
    AutoScalingBackend.resume_processes = resume_processes


# The Auto Scaling processes (API reference, SuspendProcesses), in moto's order: all of them when none is named.
SUSPENDABLE_PROCESSES = (
    "Launch",
    "Terminate",
    "AddToLoadBalancer",
    "AlarmNotification",
    "AZRebalance",
    "HealthCheck",
    "InstanceRefresh",
    "ReplaceUnhealthy",
    "ScheduledActions",
)
