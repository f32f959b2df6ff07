"""Targeted fixes to moto's backends so that the emulator answers as AWS does where kops needs it.

Each fix restores one documented AWS behaviour that moto 5.2.5 gets wrong and that kops v1.36.2
relies on; none of them changes what kops does. docs/emulator.md lists, per fix, the exact call,
what moto does, what AWS does and how kops reacts; tests/integration/test_emulator_patches.py pins
each one through boto3 over HTTP. They are applied by tools/emulator.py before the server starts.
"""

import base64
import hashlib

PATCHES = []


def patch(func):
    """Register ``func`` (no arguments, returns None) as a fix applied by :func:`apply_all`."""
    PATCHES.append(func)
    return func


def apply_all():
    """Apply every registered fix once. Returns the list of fix names applied (list of str)."""
    applied = []
    for func in PATCHES:
        func()
        applied.append(func.__name__)
    return applied


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
def launch_template_version_user_data_is_base64():
    """ec2:CreateLaunchTemplateVersion with UserData.

    moto: stores the raw string, unlike CreateLaunchTemplate; a later RunInstances from that
    version fails its ``isinstance(Base64EncodedString)`` check -> HTTP 500, so an Auto Scaling
    group can no longer launch (scale-up and rolling update silently shrink the group).
    AWS: UserData of every version is base64 text, decoded the same way.
    """
    from moto.core.types import Base64EncodedString
    from moto.ec2.models.launch_templates import LaunchTemplate
    from moto.ec2.utils import parse_user_data

    original = LaunchTemplate.create_version

    def create_version(self, data, description):
        user_data = data.get("UserData") if isinstance(data, dict) else None
        if user_data is not None and not isinstance(user_data, Base64EncodedString):
            data = dict(data, UserData=parse_user_data(data["UserData"]))
        return original(self, data, description)

    LaunchTemplate.create_version = create_version


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
def subnet_private_dns_attributes_are_stored():
    """ec2:ModifySubnetAttribute with PrivateDnsHostnameTypeOnLaunch, EnableResourceNameDnsAAAARecordOnLaunch
    or EnableDns64.

    moto: ignores them, so DescribeSubnets keeps HostnameType ``ip-name`` and kops plans
    ``Subnet ResourceBasedNaming false -> true`` on every update (a no-op run never looks clean).
    AWS: stores them in PrivateDnsNameOptionsOnLaunch / EnableDns64.
    """
    from moto.ec2.responses.subnets import Subnets

    original = Subnets.modify_subnet_attribute

    def modify_subnet_attribute(self):
        subnet = self.ec2_backend.get_subnet(self._get_param("SubnetId"))
        hostname_type = self._get_param("PrivateDnsHostnameTypeOnLaunch")
        if hostname_type:
            subnet.private_dns_name_options_on_launch["HostnameType"] = hostname_type
        aaaa = self._get_param("EnableResourceNameDnsAAAARecordOnLaunch.Value")
        if aaaa is not None:
            subnet.private_dns_name_options_on_launch["EnableResourceNameDnsAAAARecord"] = _bool(aaaa)
        dns64 = self._get_param("EnableDns64.Value")
        if dns64 is not None:
            subnet.enable_dns64 = _bool(dns64)
        return original(self)

    Subnets.modify_subnet_attribute = modify_subnet_attribute


def _bool(value):
    return value if isinstance(value, bool) else str(value).lower() == "true"


@patch
def imported_ed25519_key_fingerprint_is_openssh_sha256():
    """ec2:ImportKeyPair / DescribeKeyPairs, KeyFingerprint of an imported ED25519 key.

    moto: colon-separated hex SHA-256 of the DER SubjectPublicKeyInfo.
    AWS: "the base64-encoded SHA-256 digest, which is the default for OpenSSH" (KeyPairInfo docs): the
    padded base64 of the SHA-256 of the key blob, without a prefix. kops trims the ``=`` and adds
    ``SHA256:`` itself (upup/pkg/fi/cloudup/awstasks/sshkey.go ``Find``) to compare it with ssh-keygen's
    form (pkg/pki/sshkey.go); any other value makes every update plan an SSHKey change.
    """
    from moto.ec2.models.key_pairs import KeyPairBackend

    original = KeyPairBackend.import_key_pair

    def import_key_pair(self, key_name, public_key_material, tags):
        keypair = original(self, key_name, public_key_material, tags)
        if keypair.key_type == "ed25519":
            material = public_key_material.decode() if isinstance(public_key_material, bytes) else public_key_material
            blob = base64.b64decode(material.split()[1])
            keypair.key_fingerprint = base64.b64encode(hashlib.sha256(blob).digest()).decode()
        return keypair

    KeyPairBackend.import_key_pair = import_key_pair


@patch
def deleting_a_subnet_drops_its_route_table_associations():
    """ec2:DeleteSubnet then ec2:DeleteRouteTable.

    moto: the subnet's route-table association survives it, so DeleteRouteTable answers
    DependencyViolation and ``kops delete cluster --yes`` retries for ~10 minutes, then gives up.
    AWS: deleting a subnet removes its route-table associations with it, and the table can then go.
    """
    from moto.ec2.models.subnets import SubnetBackend

    original = SubnetBackend.delete_subnet

    def delete_subnet(self, subnet_id):
        subnet = original(self, subnet_id)
        for table in getattr(self, "route_tables", {}).values():
            for association_id, target in list(table._associations.items()):
                if target == subnet_id:
                    del table._associations[association_id]
        return subnet

    SubnetBackend.delete_subnet = delete_subnet


@patch
def deleting_a_vpc_keeps_its_dhcp_options_set():
    """ec2:DeleteVpc then ec2:DeleteDhcpOptions.

    moto: DeleteVpc also deletes the VPC's DHCP options set, so kops' later DeleteDhcpOptions
    answers InvalidDhcpOptionID.NotFound and ``kops delete cluster --yes`` retries until it gives up.
    AWS: a DHCP options set outlives the VPC it was associated with (it is only disassociated)
    and is deleted on its own, which is what kops does (pkg/resources/aws/aws.go).
    """
    from moto.ec2.models.vpcs import VPCBackend

    original = VPCBackend.delete_vpc

    def delete_vpc(self, vpc_id):
        vpc = self.vpcs.get(vpc_id)
        options = vpc.dhcp_options if vpc is not None else None
        if vpc is not None:
            vpc.dhcp_options = None
        try:
            result = original(self, vpc_id)
        except Exception:
            if vpc is not None:
                vpc.dhcp_options = options
            raise
        if options is not None:
            options.vpc = None
        return result

    VPCBackend.delete_vpc = delete_vpc


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


@patch
def user_service_specific_credentials_can_be_listed():
    """iam:ListServiceSpecificCredentials.

    moto: NotImplementedError -> HTTP 500. amazon.aws.iam_user (state=absent) lists them before it
    deletes a user, so removing any user fails.
    AWS: the user's service-specific credentials (none unless created); NoSuchEntity for an unknown user.
    """
    from moto.core.responses import ActionResult
    from moto.iam.responses import IamResponse

    def list_service_specific_credentials(self):
        user_name = self._get_param("UserName")
        if user_name:
            self.backend.get_user(user_name)
        return ActionResult({"ServiceSpecificCredentials": []})

    IamResponse.list_service_specific_credentials = list_service_specific_credentials


@patch
def deleted_iam_user_does_not_break_the_state_dump():
    """GET /moto-api/data.json after iam:DeleteUser (the emulator's own state dump, not an AWS call).

    moto keeps every model instance it ever made in its dump; a deleted User's ``group_list``
    property then asks the backend for a user that no longer exists and raises NoSuchEntity, so
    the dump (Emulator.snapshot) answers HTTP 500 for the rest of the session. A deleted user
    belongs to no group.
    """
    from moto.iam.exceptions import NoSuchEntity
    from moto.iam.models import User

    original = User.group_list.fget

    def group_list(self):
        try:
            return original(self)
        except NoSuchEntity:
            return []

    User.group_list = property(group_list)


# elbv2:CreateTargetGroup Name, as moto 5.2.5 checks it (elbv2/models.py create_target_group) and as
# the ELBv2 API reference states it: "can have a maximum of 32 characters, must contain only
# alphanumeric characters or hyphens, and must not begin or end with a hyphen" (no rule on "--").
MOTO_TARGET_GROUP_NAME_PATTERN = r"(?!.*--)(?!^-)(?!.*-$)^[A-Za-z0-9-]+$"
AWS_TARGET_GROUP_NAME_PATTERN = r"(?!^-)(?!.*-$)^[A-Za-z0-9-]+$"


class _ReWithAwsTargetGroupNames:
    """The ``re`` module as moto's elbv2 models see it, with the target-group name pattern as AWS has it.

    Only a ``re.match`` on moto's exact target-group pattern is changed; every other call is ``re``'s own.
    """

    def __getattr__(self, name):
        import re

        return getattr(re, name)

    @staticmethod
    def match(pattern, string, flags=0):
        import re

        if pattern == MOTO_TARGET_GROUP_NAME_PATTERN:
            pattern = AWS_TARGET_GROUP_NAME_PATTERN
        return re.match(pattern, string, flags)


@patch
def target_group_names_may_hold_consecutive_hyphens():
    """elbv2:CreateTargetGroup with a Name holding ``--``, e.g. ``kops-controller-cluster1--a1b2c3``.

    moto: an "undocumented validation" ``(?!.*--)`` refuses it (ValidationError), so a gossip cluster
    whose first label kops truncates next to a dash (``cluster1.k8s.local``: kops-controller target
    group ``kops-controller-cluster1--<hash>``) never gets its target group and ``update --yes`` times out.
    AWS: at most 32 characters, alphanumerics and hyphens, not beginning or ending with a hyphen
    (CreateTargetGroup, Name); those refusals stay.
    """
    from moto.elbv2 import models

    models.re = _ReWithAwsTargetGroupNames()


@patch
def create_hosted_zone_refuses_a_repeated_caller_reference():
    """route53:CreateHostedZone with a CallerReference already used by a hosted zone.

    moto: creates a second zone, so a client retrying a request whose response was lost (botocore
    does, on a closed connection) ends with two zones of one name.
    AWS: HTTP 409 HostedZoneAlreadyExists ("Amazon Route 53 returns this error when a hosted zone has
    already been created with the specified CallerReference"); the retry creates nothing.
    """
    from moto.route53.exceptions import Route53ClientError
    from moto.route53.models import Route53Backend

    class HostedZoneAlreadyExists(Route53ClientError):
        def __init__(self, caller_reference):
            super().__init__("HostedZoneAlreadyExists", "A hosted zone has already been created with the specified caller reference %r." % caller_reference)

    original = Route53Backend.create_hosted_zone

    def create_hosted_zone(self, name, private_zone, caller_reference=None, *args, **kwargs):
        if caller_reference and any(z.caller_reference == caller_reference for z in self.zones.values()):
            raise HostedZoneAlreadyExists(caller_reference)
        return original(self, name, private_zone, caller_reference, *args, **kwargs)

    Route53Backend.create_hosted_zone = create_hosted_zone


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
def delete_key_pair_by_id():
    """ec2:DeleteKeyPair with KeyPairId (what ``kops delete cluster`` sends, pkg/resources/aws/aws.go).

    moto: reads only KeyName, so the call answers success and deletes nothing; the cluster's key pair
    outlives the cluster.
    AWS: KeyName or KeyPairId names the key pair to delete.
    """
    from moto.core.responses import ActionResult
    from moto.ec2.responses.key_pairs import KeyPairs

    original = KeyPairs.delete_key_pair

    def delete_key_pair(self):
        key_pair_id = self._get_param("KeyPairId")
        if not key_pair_id or self._get_param("KeyName"):
            return original(self)
        self.error_on_dryrun()
        for key_pair in list(self.ec2_backend.key_pairs.values()):
            if key_pair.id == key_pair_id:
                self.ec2_backend.delete_key_pair(key_pair.key_name)
        return ActionResult({"Return": True, "KeyPairId": key_pair_id})

    KeyPairs.delete_key_pair = delete_key_pair


# DescribeReservedInstancesOfferings: the offering shapes AWS lists for each instance type offered in a zone.
_RI_OFFERING_TYPES = ("No Upfront", "Partial Upfront", "All Upfront")
_RI_CLASSES = ("standard", "convertible")
_RI_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
_RI_DURATIONS = (31536000, 94608000)  # one and three years, in seconds
_RI_FILTERS = {
    "availability-zone": "AvailabilityZone",
    "duration": "Duration",
    "instance-type": "InstanceType",
    "product-description": "ProductDescription",
    "reserved-instances-offering-id": "ReservedInstancesOfferingId",
    "scope": "Scope",
    "marketplace": "Marketplace",
    "fixed-price": "FixedPrice",
    "usage-price": "UsagePrice",
}


def _ri_offerings(backend, instance_types, zone, tenancy):
    """Every Reserved Instance offering for ``instance_types`` (list or None: all) offered in ``zone`` (str or None:
    all zones of the region), per the region's instance-type offerings (moto's per-zone data, as AWS publishes it).
    Yields dicts shaped like the API's ReservedInstancesOffering; ids are stable hashes of the offering."""
    filters = {"instance-type": list(instance_types)} if instance_types else {}
    if zone:
        filters["location"] = [zone]
    for offered in backend.describe_instance_type_offerings(location_type="availability-zone", filters=filters):
        itype, location = offered["InstanceType"], offered["Location"]
        for otype in _RI_OFFERING_TYPES:
            for oclass in _RI_CLASSES:
                for product in _RI_PRODUCTS:
                    for duration in _RI_DURATIONS:
                        key = "|".join((itype, location, otype, oclass, product, str(duration), tenancy))
                        yield {
                            "ReservedInstancesOfferingId": hashlib.sha256(key.encode()).hexdigest()[:36],
                            "InstanceType": itype,
                            "AvailabilityZone": location,
                            "Scope": "Availability Zone",
                            "ProductDescription": product,
                            "Duration": duration,
                            "InstanceTenancy": tenancy,
                            "OfferingClass": oclass,
                            "OfferingType": otype,
                            "Marketplace": False,
                            "CurrencyCode": "USD",
                            "FixedPrice": 0.0 if otype == "No Upfront" else 100.0,
                            "UsagePrice": 0.0 if otype == "All Upfront" else 0.05,
                            "RecurringCharges": [],
                        }


@patch
def reserved_instances_offerings_follow_the_request():
    """ec2:DescribeReservedInstancesOfferings with InstanceType, InstanceTenancy, OfferingClass, OfferingType,
    ProductDescription (request parameters, not filters; what kops sends to pick a default machine type,
    upup/pkg/fi/cloudup/awsup/aws_cloud.go zonesWithInstanceType).

    moto: ignores every request parameter (only ``Filter.N`` is read) and offers three fixed types (t2.micro,
    t3.small, m5.large) in every zone, so kops finds none of its candidates (t3.medium, c5.large, c4.large) and
    ``kops create cluster`` without sizes fails: "could not find a suitable supported instance type".
    AWS: the offerings of the requested type in each zone where the type is offered, narrowed by every request
    parameter and filter, at most MaxResults (default 100) per page with a NextToken.
    """
    from moto.core.responses import ActionResult
    from moto.ec2.responses.reserved_instances import ReservedInstances

    def describe_reserved_instances_offerings(self):
        self.error_on_dryrun()
        wanted = {
            "InstanceType": self._get_param("InstanceType"),
            "OfferingClass": self._get_param("OfferingClass"),
            "OfferingType": self._get_param("OfferingType"),
            "ProductDescription": self._get_param("ProductDescription"),
        }
        wanted = {k: v for k, v in wanted.items() if v}
        ids = self._get_param("ReservedInstancesOfferingIds", [])
        filters = self._filters_from_querystring()
        min_duration, max_duration = self._get_int_param("MinDuration"), self._get_int_param("MaxDuration")
        tenancy = self._get_param("InstanceTenancy") or "default"
        types = [wanted["InstanceType"]] if "InstanceType" in wanted else filters.get("instance-type")
        found = []
        for offering in _ri_offerings(self.ec2_backend, types, self._get_param("AvailabilityZone"), tenancy):
            if any(offering[k] != v for k, v in wanted.items()) or (ids and offering["ReservedInstancesOfferingId"] not in ids):
                continue
            if (min_duration and offering["Duration"] < min_duration) or (max_duration and offering["Duration"] > max_duration):
                continue
            if all(str(offering.get(_RI_FILTERS.get(name), "")).lower() in [str(v).lower() for v in values] for name, values in filters.items()):
                found.append(offering)
        start = int(self._get_param("NextToken") or 0)
        size = min(int(self._get_param("MaxResults") or 100), 100) if not ids else len(found) or 1
        result = {"ReservedInstancesOfferings": found[start : start + size]}
        if start + size < len(found):
            result["NextToken"] = str(start + size)
        return ActionResult(result)

    ReservedInstances.describe_reserved_instances_offerings = describe_reserved_instances_offerings


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


@patch
def aws_managed_policies_built_when_read():
    """A speed fix, no change of behaviour: the AWS-managed IAM policies of a backend are built when first read, from
    objects built once per account and partition.

    moto (with ``MOTO_IAM_LOAD_MANAGED_POLICIES``, which the emulator sets so that ``AmazonEC2FullAccess`` and the
    other policies of the guides can be attached) parses its 1,500-policy JSON and builds every policy object each
    time an IAM backend is made, and ``POST /moto-api/reset`` remakes the backend of every partition it holds: about
    11 of them, 2 s of CPU per reset, most of it for backends nobody reads before the next reset (measured with
    cProfile: the largest single cost of the test suite's resets). Here a backend's ``aws_managed_policies`` and
    ``managed_policies`` are made on first use; the AWS-managed ones are copies of the objects built the first time
    for that account and partition (each backend has its own attachment counts, tags and versions), as moto would
    have built them. A policy's id stays the same from one reset to the next, as an AWS-managed policy's id does on
    AWS.
    """
    from moto.iam.models import IAMBackend

    build, index = IAMBackend._init_aws_policies, IAMBackend._init_managed_policies  # moto's own, called when first read
    built = {}
    lazy = object()

    def fresh_copy(obj):
        made = object.__new__(type(obj))
        made.__dict__.update(obj.__dict__)
        return made

    def aws_policies(self):
        key = (self.account_id, self.region_name)
        if key not in built:
            built[key] = build(self)
        policies = []
        for policy in built[key]:
            mine = fresh_copy(policy)
            mine.tags = dict(policy.tags)
            mine.versions = [fresh_copy(version) for version in policy.versions]
            policies.append(mine)
        return policies

    def lazy_attribute(name, make):
        slot = "_kopsible_" + name

        def get(self):
            if slot not in self.__dict__:  # not made yet (nothing is stored for "not made": copies of the backend agree)
                self.__dict__[slot] = make(self)
            return self.__dict__[slot]

        def set_(self, value):
            if value is lazy:
                self.__dict__.pop(slot, None)
            else:
                self.__dict__[slot] = value

        return property(get, set_)

    IAMBackend._init_aws_policies = lambda self: lazy
    IAMBackend._init_managed_policies = lambda self: lazy
    IAMBackend.aws_managed_policies = lazy_attribute("aws_managed_policies", aws_policies)
    IAMBackend.managed_policies = lazy_attribute("managed_policies", index)


@patch
def ec2_creates_honour_their_client_token():
    """ec2:CreateVolume, CreateLaunchTemplate and CreateRouteTable repeated with the ClientToken of an earlier call.

    moto: ignores ClientToken, so a retry of a request whose response was lost makes a second volume, launch
    template or route table. kops' AWS SDK (aws-sdk-go-v2) fills ClientToken on every call of these operations
    (their token member is an ``idempotencyToken``) and keeps it across its retries; with two volumes of one name
    its next run stops: "found multiple Volumes with name: a.etcd-events.<cluster>" (the ``lost`` fault cases of
    tests/integration/test_kops_faults.py).
    AWS ("Ensuring idempotency in Amazon EC2 API requests"): the repeated call creates nothing and answers as the
    first did; the same token with other parameters fails with IdempotentParameterMismatch.
    """
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.responses.elastic_block_store import ElasticBlockStore
    from moto.ec2.responses.launch_templates import LaunchTemplates
    from moto.ec2.responses.route_tables import RouteTables

    def honour_client_token(cls, method):
        original = getattr(cls, method)

        def with_token(self):
            token = self._get_param("ClientToken")
            if not token:
                return original(self)
            params = {k: v for k, v in self.querystring.items() if k not in ("ClientToken", "Action", "Version")}
            seen = self.ec2_backend.__dict__.setdefault("kopsible_client_tokens", {})
            if (method, token) in seen:
                first_params, first_result = seen[(method, token)]
                if first_params != params:
                    raise EC2ClientError("IdempotentParameterMismatch", "The client token %s was used with other parameters in an earlier request." % token)
                return first_result
            result = original(self)
            seen[(method, token)] = (params, result)
            return result

        setattr(cls, method, with_token)

    honour_client_token(ElasticBlockStore, "create_volume")
    honour_client_token(LaunchTemplates, "create_launch_template")
    honour_client_token(RouteTables, "create_route_table")


@patch
def describe_snapshots_honours_owner_ids():
    """ec2:DescribeSnapshots with OwnerIds (``self``, an account id, ``amazon``).

    moto: ignores OwnerIds, so ``OwnerIds=["self"]`` also lists the snapshots behind the public images of its AMI
    catalogue (owned by Amazon, Canonical, Red Hat...), which a region shows as soon as anything reads it; a state
    snapshot (tools/harness/snapshot.py) then saw such a region appear between two reads.
    AWS (DescribeSnapshots, OwnerIds): "Scopes the results to snapshots with the specified owners. You can specify a
    combination of Amazon Web Services account IDs, self, and amazon": ``self`` is the caller's account, ``amazon``
    snapshots Amazon owns (moto's ``owner_alias``), and an account id that account.
    """
    from moto.core.responses import ActionResult
    from moto.ec2.responses.elastic_block_store import ElasticBlockStore

    original = ElasticBlockStore.describe_snapshots

    def describe_snapshots(self):
        owners = self._get_param("OwnerIds", [])
        result = original(self)
        if not owners:
            return result
        account = self.ec2_backend.account_id

        def owned(snapshot):
            for owner in owners:
                if owner == "self" and snapshot.owner_id == account:
                    return True
                if owner == "amazon" and getattr(snapshot, "owner_alias", None) == "amazon":
                    return True
                if owner == snapshot.owner_id:
                    return True
            return False

        return ActionResult({"Snapshots": [snapshot for snapshot in result.result["Snapshots"] if owned(snapshot)]})

    ElasticBlockStore.describe_snapshots = describe_snapshots


@patch
def deregistering_a_target_that_is_not_registered_succeeds():
    """elasticloadbalancing (v2) DeregisterTargets of an instance that is not (or no longer) registered: already
    deregistered, or draining after its termination.

    moto: ``InvalidTarget`` ("The specified target does not exist or is not in the same VPC as the target group").
    AWS: success, and nothing changes (chaostoolkit-aws issue #60: a DeregisterTargets naming a target that is not
    registered as named "will still return a 200, but no action is taken"); kops' drain loop relies on it, calling
    DeregisterTargets again every 5 s while the target drains (awsup/aws_cloud.go deregisterInstanceFromTargetGroup),
    as does an SDK retry of a DeregisterTargets whose answer was lost. ``InvalidTarget`` stays for an instance that
    does not exist.
    Effect on kops: kops deregisters each control-plane node of a cluster with several from the API target groups
    before draining it; in a full run (once, not reproduced alone) guide 001's rolling update stopped with
    "control-plane node not healthy after update ... InvalidTarget", the answer moto gives on both paths above.
    """
    from moto.elbv2.exceptions import InvalidTargetError
    from moto.elbv2.models import FakeTargetGroup

    deregister = FakeTargetGroup.deregister

    def known(self, target_id):
        if target_id in self.deregistered_targets or target_id in self.terminated_targets:
            return True
        return target_id.startswith("i-") and self.ec2_backend.get_instance_by_id(target_id) is not None

    def deregister_registered(self, targets):
        missing = [t for t in targets if t["Id"] not in self.targets]
        if any(not known(self, t["Id"]) for t in missing):
            raise InvalidTargetError()
        return deregister(self, [t for t in targets if t["Id"] in self.targets])

    FakeTargetGroup.deregister = deregister_registered


@patch
def elbv2_creates_with_the_same_settings_return_the_existing_object():
    """elasticloadbalancing (v2) CreateLoadBalancer, CreateTargetGroup and CreateListener repeated with the same
    settings, e.g. a retry of a request whose response was lost.

    moto: a second load balancer of the same name (its duplicate check compares ARNs, which hold a random id);
    DuplicateTargetGroupName; a second listener on the same port, whatever its settings (its check looks the port
    up among listener ARNs).
    AWS (API reference of each): "This operation is idempotent, which means that it completes at most one time. If
    you attempt to create multiple <load balancers | target groups | listeners> with the same settings, each call
    succeeds" (and returns the existing one); other settings under the same name (port, for a listener) fail as
    moto fails.
    """
    from moto.elbv2.exceptions import DuplicateListenerError, DuplicateLoadBalancerName, DuplicateTargetGroupName
    from moto.elbv2.models import ELBv2Backend

    create_load_balancer = ELBv2Backend.create_load_balancer
    create_target_group = ELBv2Backend.create_target_group
    create_listener = ELBv2Backend.create_listener

    def load_balancer(
        self, name, security_groups, subnet_ids, subnet_mappings=None, scheme="internet-facing", loadbalancer_type=None, ip_address_type="ipv4", tags=None
    ):
        for existing in self.load_balancers.values():
            if existing.name == name:
                wanted = sorted(subnet_ids or []) + sorted(m["SubnetId"] for m in subnet_mappings or [])
                same = (
                    existing.scheme == scheme
                    and existing.type == (loadbalancer_type or "application")
                    and sorted(s.id for s in existing.subnets) == sorted(wanted)
                    and sorted(existing.security_groups or []) == sorted(security_groups or [])
                )
                if not same:
                    raise DuplicateLoadBalancerName()
                return existing
        return create_load_balancer(self, name, security_groups, subnet_ids, subnet_mappings, scheme, loadbalancer_type, ip_address_type, tags)

    def target_group(self, name, **kwargs):
        for existing in self.target_groups.values():
            if existing.name == name:
                protocol = kwargs.get("protocol")
                same = (existing.protocol or None) == (protocol or existing.protocol or None) and str(existing.port) == str(kwargs.get("port"))
                same = same and existing.vpc_id == kwargs.get("vpc_id") and existing.target_type == (kwargs.get("target_type") or "instance")
                if not same:
                    raise DuplicateTargetGroupName()
                return existing
        return create_target_group(self, name, **kwargs)

    def listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions, alpn_policy=None, tags=None):
        balancer = self.load_balancers.get(load_balancer_arn)
        # moto's own check looks the port up among listener ARNs, so it never finds one: two listeners on one port
        existing = next((item for item in balancer.listeners.values() if str(item.port) == str(port)), None) if balancer is not None else None
        if existing is not None:
            same = existing.protocol == (protocol or "").upper() and [a.data for a in existing.default_actions] == list(actions)
            if not same:
                raise DuplicateListenerError()
            return existing
        return create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions, alpn_policy, tags)

    ELBv2Backend.create_load_balancer = load_balancer
    ELBv2Backend.create_target_group = target_group
    ELBv2Backend.create_listener = listener


# IAM enforcement (tools/emulator.py iam_enforcement_mode): where moto's policy evaluation differs from AWS's for
# the calls kops and this collection make. These fixes change nothing while the mode is off (moto authorizes
# nothing then); docs/emulator.md "IAM enforcement" lists them with the differences left as they are.

_IAM_ARN_PARAMETERS = (
    ("RoleName", "role"),
    ("InstanceProfileName", "instance-profile"),
    ("UserName", "user"),
    ("GroupName", "group"),
)


def record_iam_refusals(record, record_allowed=None):
    """Call ``record(entry)`` for every request moto's authorization refuses, ``entry`` a dict ``{"action": "ec2:CreateVpc",
    "resource": ARN or "*", "principal": caller ARN or None, "code": "AccessDenied" | "InvalidClientTokenId" |
    "SignatureDoesNotMatch", "client": the first word of the User-Agent, e.g. "aws-sdk-go-v2/1.39.2"}``: the
    enforcement mode's list of refusals (a client that retries or hides the
    error still leaves its refusal here). ``record_allowed(action, resource, principal)``, if given, is called for
    every request whose policies allowed it (the action and the resource ARN it was evaluated on)."""
    from moto.iam.access_control import IAMRequestBase

    original_permitted = IAMRequestBase.check_action_permitted

    def check_action_permitted(self, resource):
        self._kopsible_resource = resource
        answer = original_permitted(self, resource)  # raises when refused
        if record_allowed is not None:
            access_key = getattr(self, "_access_key", None)
            record_allowed(self._action, resource, access_key.arn if access_key is not None else None)
        return answer

    IAMRequestBase.check_action_permitted = check_action_permitted

    def recording(method, code):
        def wrapper(self, *args):
            access_key = getattr(self, "_access_key", None)
            record(
                {
                    "action": self._action,
                    "resource": getattr(self, "_kopsible_resource", "*"),
                    "principal": access_key.arn if access_key is not None else None,
                    "code": code,
                    "client": (self._headers.get("User-Agent") or "").split(" ")[0],
                }
            )
            return method(self, *args)

        return wrapper

    for cls in IAMRequestBase.__subclasses__():
        cls._raise_access_denied = recording(cls._raise_access_denied, "AccessDenied")
        cls._raise_invalid_access_key = recording(cls._raise_invalid_access_key, "InvalidClientTokenId")
        cls._raise_signature_does_not_match = recording(cls._raise_signature_does_not_match, "SignatureDoesNotMatch")


@patch
def iam_actions_are_authorized_on_the_named_resource():
    """IAM authorization of iam:* calls that name a role, instance profile, user, group or OpenID Connect provider.

    moto: checks every IAM action against the resource ``*``, except that a call naming an *existing* role is
    checked against that role's ARN; a policy statement whose Resource is an ARN pattern therefore never allows
    ``iam:CreateRole``, ``iam:CreateInstanceProfile``, ``iam:AddRoleToInstanceProfile``,
    ``iam:CreateOpenIDConnectProvider``... (the least-privilege policy's ``ClusterRoles`` statement,
    ``arn:aws:iam::*:role/*.<cluster suffix>``): kops' ``update cluster --yes`` is refused.
    AWS: the resource of such a call is the ARN of the entity it names, existing or being created
    (Service Authorization Reference, "Actions defined by AWS Identity and Access Management":
    ``arn:${Partition}:iam::${Account}:role/${RoleNameWithPath}``, ``instance-profile/...``, ``user/...``,
    ``group/...``, ``oidc-provider/${OidcProviderName}``).
    """
    from moto.iam.responses import IamResponse

    def determine_resource(self):
        base = "arn:%s:iam::%s:" % (self.partition, self.current_account)
        data = self.data or {}

        def first(name):
            value = data.get(name)
            return value[0] if isinstance(value, list) and value else value

        for parameter, kind in _IAM_ARN_PARAMETERS:
            name = first(parameter)
            if name:
                path = first("Path") if self._get_action().startswith("Create") else None
                if kind == "role":
                    try:
                        return self.backend.get_role(name).arn
                    except Exception:  # noqa: BLE001  (NoSuchEntity: the role this call creates)
                        pass
                return "%s%s%s%s" % (base, kind, path or "/", name)
        provider = first("OpenIDConnectProviderArn")
        if provider:
            return provider
        url = first("Url")
        if url and self._get_action() == "CreateOpenIDConnectProvider":
            return "%soidc-provider/%s" % (base, url.split("://", 1)[-1].rstrip("/"))
        return "*"

    IamResponse._determine_resource = determine_resource


@patch
def route53_actions_are_authorized_on_the_hosted_zone():
    """IAM authorization of Route53 calls on one hosted zone (ChangeResourceRecordSets, GetHostedZone,
    ListResourceRecordSets, DeleteHostedZone, ChangeTagsForResource...).

    moto: checks them against the resource ``*``, so a statement limited to
    ``arn:aws:route53:::hostedzone/Z...`` (the least-privilege policy's ``Records``) never allows them.
    AWS: the resource is ``arn:${Partition}:route53:::hostedzone/${Id}`` (Service Authorization Reference, Route 53).
    """
    import re

    from moto.route53.responses import Route53

    zone_in_path = re.compile(r"/hostedzone/([^/?]+)")

    def determine_resource(self):
        match = zone_in_path.search(self.path or "")
        if match:
            return "arn:%s:route53:::hostedzone/%s" % (self.partition, match.group(1))
        return "*"

    Route53._determine_resource = determine_resource


# S3 request -> IAM action, as AWS names them (Service Authorization Reference, Amazon S3; "Required permissions for
# Amazon S3 API operations"): the entries moto 5.2.5 lacks or names differently. (resource type, method, query key).
_S3_IAM_ACTIONS = {
    ("BUCKET", "HEAD", "DEFAULT"): "ListBucket",  # HeadBucket; moto: s3:HeadBucket, an action IAM does not have
    ("BUCKET", "GET", "publicAccessBlock"): "GetBucketPublicAccessBlock",
    ("BUCKET", "PUT", "publicAccessBlock"): "PutBucketPublicAccessBlock",
    ("BUCKET", "DELETE", "publicAccessBlock"): "PutBucketPublicAccessBlock",
    ("BUCKET", "GET", "encryption"): "GetEncryptionConfiguration",
    ("BUCKET", "PUT", "encryption"): "PutEncryptionConfiguration",
    ("BUCKET", "DELETE", "encryption"): "PutEncryptionConfiguration",
    ("BUCKET", "GET", "ownershipControls"): "GetBucketOwnershipControls",
    ("BUCKET", "PUT", "ownershipControls"): "PutBucketOwnershipControls",
    ("BUCKET", "DELETE", "ownershipControls"): "PutBucketOwnershipControls",
    ("BUCKET", "GET", "object-lock"): "GetBucketObjectLockConfiguration",
    ("BUCKET", "PUT", "object-lock"): "PutBucketObjectLockConfiguration",
    ("BUCKET", "GET", "replication"): "GetReplicationConfiguration",
    ("BUCKET", "PUT", "replication"): "PutReplicationConfiguration",
    ("BUCKET", "DELETE", "replication"): "PutReplicationConfiguration",
    ("BUCKET", "GET", "requestPayment"): "GetBucketRequestPayment",
    ("BUCKET", "PUT", "requestPayment"): "PutBucketRequestPayment",
    ("KEY", "HEAD", "versionId"): "GetObjectVersion",
    ("KEY", "GET", "attributes"): "GetObjectAttributes",
    ("KEY", "DELETE", "tagging"): "DeleteObjectTagging",
}


@patch
def s3_requests_are_authorized_as_the_iam_actions_aws_names():
    """IAM authorization of S3 requests: the action a request is checked as, and DeleteObjects.

    moto: checks HeadBucket as ``s3:HeadBucket`` (IAM has no such action: no policy allows it but ``s3:*``), the
    bucket's public access block as ``s3:ListBucket`` / ``s3:CreateBucket`` (its table keys the query as
    ``public_access_block``, requests send ``publicAccessBlock``), encryption and ownership controls as
    ``s3:ListBucket`` / ``s3:CreateBucket``, DeleteObjectTagging as ``s3:DeleteObject``; and checks DeleteObjects
    (``POST ?delete``, how ``kops delete cluster`` empties the state store, util/pkg/vfs/s3fs.go) as one
    ``s3:DeleteObject`` on the *bucket*, so a policy that allows ``s3:DeleteObject`` on ``arn:aws:s3:::BUCKET/*``
    deletes nothing: every key comes back AccessDenied (kops ignores per-key errors: the objects stay).
    AWS: HeadBucket needs ``s3:ListBucket``; ``s3:GetBucketPublicAccessBlock`` / ``s3:PutBucketPublicAccessBlock``,
    ``s3:GetEncryptionConfiguration`` / ``s3:PutEncryptionConfiguration``, ``s3:GetBucketOwnershipControls`` /
    ``s3:PutBucketOwnershipControls``...; DeleteObjects checks ``s3:DeleteObject`` (``s3:DeleteObjectVersion`` for a
    key with a version id) on each key's ARN and reports each refused key as an ``AccessDenied`` error.
    """
    import xmltodict
    from moto.core.responses import ActionResult
    from moto.iam.access_control import PermissionResult
    from moto.s3 import responses as s3_responses
    from moto.s3.exceptions import MalformedXML, S3AccessDeniedError
    from moto.utilities.utils import get_partition

    S3Response = s3_responses.S3Response
    original_set_action = S3Response._set_action
    original_authorize = S3Response._authenticate_and_authorize_s3_action

    def set_action(self, action_resource_type, method, querystring):
        # moto's table also names the operation a response is serialized as: it stays; AWS's IAM action is kept aside
        original_set_action(self, action_resource_type, method, querystring)
        named = [a for (kind, verb, key), a in _S3_IAM_ACTIONS.items() if (kind, verb) == (action_resource_type, method) and key in querystring]
        self._kopsible_iam_action = named[-1] if named else _S3_IAM_ACTIONS.get((action_resource_type, method, "DEFAULT"))

    def authorize(self, bucket_name=None, key_name=None):
        action, self._kopsible_iam_action = getattr(self, "_kopsible_iam_action", None), None
        if action is None:
            return original_authorize(self, bucket_name=bucket_name, key_name=key_name)
        named, self.data["Action"] = self.data.get("Action"), action
        try:
            return original_authorize(self, bucket_name=bucket_name, key_name=key_name)
        finally:
            self.data["Action"] = named

    S3Response._set_action = set_action
    S3Response._authenticate_and_authorize_s3_action = authorize
    original_post = S3Response._bucket_response_post

    def bucket_response_post(self, request, bucket_name):
        if request.headers.get("Content-Length"):
            self.path = self._get_path(request)
            if self.is_delete_keys():
                return self._bucket_response_delete_keys(bucket_name)
        return original_post(self, request, bucket_name)

    def bucket_response_delete_keys(self, bucket_name, authenticated=True):
        body = xmltodict.parse(self.body, strip_whitespace=False)
        bypass_retention = self.headers.get("x-amz-bypass-governance-retention", "").lower() == "true"
        objects = body["Delete"].get("Object", [])
        objects = objects if isinstance(objects, list) else [objects]
        if not objects:
            raise MalformedXML()
        bucket = self.backend.get_bucket(bucket_name)
        partition = get_partition(self.region)
        allowed, errors = [], []
        for obj in objects:
            self.data["Action"] = "DeleteObjectVersion" if obj.get("VersionId") else "DeleteObject"
            try:
                self._authenticate_and_authorize_s3_action(bucket_name=bucket_name, key_name=obj["Key"])
            except S3AccessDeniedError:
                errors.append({"Key": obj["Key"], "Code": "AccessDenied", "Message": "Access Denied"})
                continue
            if bucket.get_permission("s3:DeleteObject", "arn:%s:s3:::%s/%s" % (partition, bucket_name, obj["Key"])) == PermissionResult.DENIED:
                errors.append({"Key": obj["Key"], "Code": "AccessDenied", "Message": "Access Denied"})
            else:
                allowed.append(obj)
        deleted, locked = self.backend.delete_objects(bucket_name, allowed, bypass_retention) if allowed else ([], [])
        errors += [{"Key": k, "Code": "AccessDenied", "Message": "Access Denied because object protected by object lock."} for k in locked]
        deleted_objects = [
            {"Key": k, "VersionId": v or None, "DeleteMarkerVersionId": dv or None, "DeleteMarker": True if dv else None} for k, v, dv in deleted
        ]
        self.data["Action"] = "DeleteObjects"
        return self.serialized(ActionResult({"Deleted": deleted_objects, "Errors": errors}))

    S3Response._bucket_response_post = bucket_response_post
    S3Response._bucket_response_delete_keys = bucket_response_delete_keys


@patch
def iam_refusals_answer_in_the_service_protocol():
    """The error of a request IAM authorization refuses (AccessDenied, InvalidClientTokenId, SignatureDoesNotMatch).

    moto: answers every service with the Query protocol's XML (``<ErrorResponse><Errors><Error>``), which clients of
    the JSON services (SQS, EventBridge) and of Route53 (REST-XML: ``<ErrorResponse><Error>``) cannot read: boto3
    reports ``An error occurred (403)`` / ``An error occurred ()`` with no code or message, so the refused action is
    not named; EC2's refusal is ``AccessDenied``; S3's says only ``Access Denied``; none names the resource.
    AWS: each service's own error format; EC2 answers ``UnauthorizedOperation`` ("You are not authorized to perform
    this operation. User: ... is not authorized to perform: ec2:CreateVpc on resource: ..."); the other services
    ``AccessDenied`` (JSON services ``AccessDeniedException``) with "User: ARN is not authorized to perform: ACTION on
    resource: RESOURCE" (S3 too, for a same-account caller: AWS documents the message in "Access denied error
    messages" of the IAM User Guide).
    """
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.core.exceptions import JsonRESTError, _RESTError
    from moto.iam.access_control import IAMRequest, S3IAMRequest
    from moto.s3.exceptions import S3AccessDeniedError

    def refusal_message(request):
        return "User: %s is not authorized to perform: %s on resource: %s" % (
            request._access_key.arn,
            request._action,
            getattr(request, "_kopsible_resource", "*"),
        )

    def raise_access_denied(self):
        if self._service == "ec2":
            error = _RESTError("UnauthorizedOperation", "You are not authorized to perform this operation. " + refusal_message(self))
        else:
            error = _RESTError("AccessDenied", refusal_message(self))
        error.code = 403
        raise error

    IAMRequest._raise_access_denied = raise_access_denied
    original_s3 = S3IAMRequest._raise_access_denied

    def raise_s3_access_denied(self):
        try:
            original_s3(self)
        except S3AccessDeniedError as error:
            error.message = refusal_message(self)
            raise

    S3IAMRequest._raise_access_denied = raise_s3_access_denied
    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def authenticate_and_authorize(self, iam_request_cls, resource="*"):
        try:
            return original(self, iam_request_cls, resource)
        except JsonRESTError:
            raise
        except _RESTError as error:
            target = self.headers.get("X-Amz-Target") or self.headers.get("x-amz-target")
            content_type = self.headers.get("Content-Type") or ""
            if target or "json" in content_type:
                made = JsonRESTError(error.error_type + ("Exception" if error.error_type == "AccessDenied" else ""), error.message)
            elif getattr(self, "service_name", None) == "route53":
                made = _RESTError(error.error_type, error.message)
                made.description = made.description.replace("<Errors>", "").replace("</Errors>", "")
            elif getattr(self, "service_name", None) == "ec2":
                made = _RESTError(error.error_type, error.message)
                made.description = made.description.replace("<ErrorResponse>", "<Response>").replace("</ErrorResponse>", "</Response>")
            else:
                raise
            made.code = error.code
            raise made from error

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_and_authorize


@patch
def request_signature_is_checked_over_the_raw_body():
    """The SigV4 signature check of IAM enforcement, for a request with no body (e.g. route53:ListHostedZones, a GET).

    moto: recomputes the signature over ``self._body or self._data`` (the form fields of a Query POST, whose body
    its parsing consumed); a GET has no body, and for REST services
    ``_data`` is the request's *headers*, which botocore form-encodes as the payload: the payload hash differs and
    every such call by a correctly signing client (boto3, kops' aws-sdk-go-v2) is ``SignatureDoesNotMatch``.
    AWS: the payload hashed into the canonical request is the request's body as sent (empty for a GET, HEAD or
    DELETE).
    """
    from botocore.awsrequest import AWSRequest
    from moto.iam.access_control import IAMRequestBase

    def create_aws_request(self):
        signed_headers = self._get_string_between("SignedHeaders=", ",", self._headers["Authorization"]).split(";")
        headers = self._create_headers_for_aws_request(signed_headers, self._headers)
        # a Query-protocol POST's form body is consumed by moto's parsing: ``_data`` holds it (moto's own choice, kept)
        payload = self._body or (b"" if self._method in ("GET", "HEAD", "DELETE") else self._data)
        request = AWSRequest(method=self._method, url=self._path, data=payload, headers=headers)
        request.context["timestamp"] = headers["X-Amz-Date"]
        return request

    IAMRequestBase._create_aws_request = create_aws_request


@patch
def auto_scaling_group_with_an_instance_profile_needs_pass_role():
    """IAM authorization of autoscaling:CreateAutoScalingGroup / UpdateAutoScalingGroup with a launch template whose
    instances get an IAM instance profile (every kops group: masters.<cluster>, nodes.<cluster>...).

    moto: checks only the action the request names; ``iam:PassRole`` is never checked, so a policy without it (or
    with it on other roles) creates groups whose instances run as any role.
    AWS: "To create or update an Auto Scaling group with a launch template that specifies an instance profile, the
    caller needs ``iam:PassRole`` on the profile's role" (EC2 Auto Scaling User Guide, "Launch template support",
    "Permissions to pass an IAM role"); refused with AccessDenied naming ``iam:PassRole`` and the role.
    The emulator now checks ``iam:PassRole`` on each role of the profile that the request's launch template version
    (top level, or in its MixedInstancesPolicy) names, before the group is made or changed.
    """
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.ec2.models import ec2_backends
    from moto.iam.access_control import IAMRequest
    from moto.iam.models import iam_backends

    class PassRoleRequest(IAMRequest):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._action = "iam:PassRole"

    def passed_roles(self):
        """ARNs of the roles the request's launch template version hands to its instances (list of str)."""
        params = self._get_params()
        spec = self._get_param("LaunchTemplate", {}) or ((params.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get(
            "LaunchTemplateSpecification"
        )
        if not spec:
            return []
        ec2 = ec2_backends[self.current_account][self.region]
        try:
            if spec.get("LaunchTemplateId"):
                template = ec2.get_launch_template(spec["LaunchTemplateId"])
            else:
                template = ec2.get_launch_template_by_name(spec.get("LaunchTemplateName"))
            version = template.get_version(spec.get("Version") or "$Default")
        except Exception:  # noqa: BLE001  (no such template or version: moto's own call answers that)
            return []
        profile_spec = version.data.get("IamInstanceProfile") or {}
        iam = iam_backends[self.current_account][self.partition]
        try:
            if profile_spec.get("Arn"):
                profile = iam.get_instance_profile_by_arn(profile_spec["Arn"])
            elif profile_spec.get("Name"):
                profile = iam.get_instance_profile(profile_spec["Name"])
            else:
                return []
        except Exception:  # noqa: BLE001  (no such profile: not a PassRole question)
            return []
        return [role.arn for role in profile.roles]

    for action in ("create_auto_scaling_group", "update_auto_scaling_group"):
        original = getattr(AutoScalingResponse, action)

        def wrapper(self, _original=original):
            for role_arn in passed_roles(self):
                self._authenticate_and_authorize_action(PassRoleRequest, role_arn)
            return _original(self)

        setattr(AutoScalingResponse, action, wrapper)
