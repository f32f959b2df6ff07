"""The emulator's state as AWS shows it: every resource kopsible or kops can write, read through the AWS APIs.

:func:`take` returns ``{kind: {resource id: description}}`` where ``kind`` is ``'<region>/<service>.<what>'``
(for example ``'us-east-1/ec2.vpcs'``) or, for the global services, ``'<partition>/<service>.<what>'``
(``'aws/route53.record_sets'``, ``'aws/s3.objects'``). Descriptions are the API's own answers (volatile request
metadata removed). Two takes are equal exactly when no resource was made, changed or deleted, as far as these
reads can see; :func:`diff` says where two takes differ.

Why not moto's ``/moto-api/data.json``: it lists every model instance moto ever made, so a deleted hosted zone
or VPC is still there, and all objects of an unversioned bucket share version id ``null`` and fold into one.
Reading through the API sees what a user of AWS sees: deleted things are gone, every object version and delete
marker is listed.

Regions: the emulator reports where it holds state (``GET /moto-api/kopsible/regions``, an extension in
tools/emulator.py); every such region, and the partitions (``aws``, ``aws-cn``, ``aws-us-gov``) of the global
services, is read. The emulator makes what AWS has in every region of an account (the default VPC and its parts)
when a region is first called, even by a read; a region holding only those, untouched, is left out of a take
(:func:`only_aws_defaults`), as on AWS, where they were always there: a region only read between two takes does
not make them differ, a write or a deletion there does.

Left out on purpose, because AWS owns them and no caller can write them: AWS-managed IAM policies
(``list_policies(Scope='Local')`` lists customer-managed ones only) and public images (``Owners=['self']``).
The default VPC and its subnets, security group, route table, network ACL and internet gateway are read like
anything else (deleting or changing them is a write). Not read: services kopsible and kops never use
(Lambda, RDS...) and other accounts than the emulator's one (all credentials map to it).
"""

import json
import re

from botocore.exceptions import ClientError

GLOBAL_REGION = {"aws": "us-east-1", "aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
VOLATILE = ("ResponseMetadata",)


def _clean(value):
    """``value`` without response metadata (dict/list recursively)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _pages(client, method, key, **kwargs):
    """Every item of ``key`` over all pages of ``method`` (list)."""
    if client.can_paginate(method):
        items = []
        for page in client.get_paginator(method).paginate(**kwargs):
            items.extend(page.get(key) or [])
        return items
    return client.__getattribute__(method)(**kwargs).get(key) or []


def _answer(call, *args, **kwargs):
    """``call(...)`` cleaned, or ``{'error': code}`` when AWS answers with an error (a missing configuration
    is state too: e.g. no encryption on a bucket)."""
    try:
        return _clean(call(*args, **kwargs))
    except ClientError as error:
        return {"error": error.response.get("Error", {}).get("Code", "?")}


def regions_and_partitions(emulator):
    """``(regions, partitions)``: the real regions the emulator holds state in (always ``us-east-1``), and the
    partitions whose global services to read (always ``aws``), both sorted lists."""
    import urllib.request

    with urllib.request.urlopen(emulator.url + "/moto-api/kopsible/regions", timeout=30) as answer:
        found = json.loads(answer.read())
    names = {"us-east-1", "aws"}
    for regions in found.values():
        names.update(regions)
    regions = sorted(n for n in names if REGION_RE.match(n))
    partitions = {n for n in names if n in GLOBAL_REGION}
    partitions.update(partition_of(r) for r in regions)
    return regions, sorted(p for p in partitions if p in GLOBAL_REGION)


def partition_of(region):
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def take(emulator, client=None):
    """The state (dict ``{kind: {id: description}}``, see the module docstring). ``client(service, region)``
    makes the boto3 clients (default ``emulator.client``)."""
    client = client or emulator.client
    regions, partitions = regions_and_partitions(emulator)
    state = {}
    for partition in partitions:
        region = GLOBAL_REGION[partition]
        for name, reader in (("iam", _iam), ("route53", _route53), ("s3", _s3)):
            for what, items in reader(client(name, region)).items():
                state["%s/%s.%s" % (partition, name, what)] = items
    for region in regions:
        found = {}
        for name, reader in (("ec2", _ec2), ("autoscaling", _autoscaling), ("elb", _elb), ("elbv2", _elbv2), ("sqs", _sqs), ("events", _events)):
            for what, items in reader(client(name, region)).items():
                if items:
                    found["%s.%s" % (name, what)] = items
        if not any(vpc.get("IsDefault") for vpc in (found.get("ec2.vpcs") or {}).values()):
            found["ec2.default_vpc"] = {"none": {"note": "the region's default VPC was deleted"}}
        if not (only_aws_defaults(found) and _a_default_subnet_per_zone(client("ec2", region), found)):
            state.update(("%s/%s" % (region, kind), items) for kind, items in found.items())
    return {kind: items for kind, items in state.items() if items}


def _a_default_subnet_per_zone(ec2, found):
    """True when the default subnets are one per availability zone of the region (none deleted)."""
    zones = sorted(z["ZoneName"] for z in ec2.describe_availability_zones().get("AvailabilityZones", []))
    return sorted(s.get("AvailabilityZone") for s in (found.get("ec2.subnets") or {}).values()) == zones


DEFAULT_KINDS = ("ec2.vpcs", "ec2.subnets", "ec2.security_groups", "ec2.security_group_rules", "ec2.network_acls", "ec2.route_tables", "ec2.internet_gateways")
ALL_TRAFFIC = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}], "Ipv6Ranges": [], "PrefixListIds": [], "UserIdGroupPairs": []}
DEFAULT_ACL_ENTRIES = sorted(
    [(egress, action, number) for egress in (False, True) for action, number in (("allow", 100), ("deny", 32767))],
)


def only_aws_defaults(found):
    """True when a region's resources (``{'<service>.<what>': {id: description}}``) are exactly what AWS makes in
    every region of an account, untouched: one default VPC, its default subnets (one per zone: checked by the caller,
    which reads the zones), its ``default`` security group
    (no ingress, the one all-traffic egress rule), its default network ACL (the four default entries), its main
    route table (the local route, and a route to its internet gateway), its internet gateway, none of them tagged.

    AWS has those in every region from the start; the emulator makes them when a region is first called, even by a
    read. So such a region is left out of a take, and a region only read between two takes does not make them
    differ, while any write there (a tag, a rule, a resource) or a deletion (``ec2.default_vpc`` notes a deleted
    default VPC) keeps the region in."""
    if not found or any(kind not in DEFAULT_KINDS for kind in found):
        return False
    vpcs = list((found.get("ec2.vpcs") or {}).values())
    if len(vpcs) != 1 or not vpcs[0].get("IsDefault") or vpcs[0].get("Tags"):
        return False
    vpc = vpcs[0]["VpcId"]
    groups = found.get("ec2.security_groups") or {}
    for items, good in (
        (found.get("ec2.subnets"), lambda s: s.get("DefaultForAz") and s.get("VpcId") == vpc),
        (
            groups,
            lambda g: (
                g.get("GroupName") == "default" and g.get("VpcId") == vpc and not g.get("IpPermissions") and g.get("IpPermissionsEgress") == [ALL_TRAFFIC]
            ),
        ),
        (
            found.get("ec2.security_group_rules"),
            lambda r: r.get("GroupId") in groups and r.get("IsEgress") and r.get("CidrIpv4") == "0.0.0.0/0" and r.get("IpProtocol") == "-1",
        ),
        (
            found.get("ec2.network_acls"),
            lambda a: (
                a.get("IsDefault")
                and a.get("VpcId") == vpc
                and sorted((e.get("Egress"), e.get("RuleAction"), e.get("RuleNumber")) for e in a.get("Entries") or []) == DEFAULT_ACL_ENTRIES
            ),
        ),
        (
            found.get("ec2.route_tables"),
            lambda t: (
                t.get("VpcId") == vpc
                and all(a.get("Main") for a in t.get("Associations") or [])
                and all(
                    r.get("GatewayId") == "local" or (str(r.get("GatewayId")).startswith("igw-") and r.get("DestinationCidrBlock") == "0.0.0.0/0")
                    for r in t.get("Routes") or []
                )
            ),
        ),
        (found.get("ec2.internet_gateways"), lambda g: [a.get("VpcId") for a in g.get("Attachments") or []] in ([], [vpc])),
    ):
        for item in (items or {}).values():
            if item.get("Tags") or not good(item):
                return False
    return len(groups) <= 1


def dumps(state):
    """Canonical JSON bytes of a :func:`take` value (sorted keys; dates as ISO strings)."""
    return json.dumps(state, sort_keys=True, default=str).encode()


def by(items, key):
    """``{item[key]: item}`` for a list of dicts (cleaned)."""
    return {str(item[key]): _clean(item) for item in items}


# ---- global services ------------------------------------------------------------------------------------------


def _iam(iam):
    roles, profiles, policies, users, groups = {}, {}, {}, {}, {}
    for role in _pages(iam, "list_roles", "Roles"):
        name = role["RoleName"]
        role = _clean(role)
        role["Tags"] = _answer(iam.list_role_tags, RoleName=name).get("Tags")
        role["InlinePolicies"] = {
            p: _answer(iam.get_role_policy, RoleName=name, PolicyName=p).get("PolicyDocument")
            for p in _pages(iam, "list_role_policies", "PolicyNames", RoleName=name)
        }
        role["AttachedPolicies"] = sorted(p["PolicyArn"] for p in _pages(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=name))
        roles[name] = role
    for profile in _pages(iam, "list_instance_profiles", "InstanceProfiles"):
        profile = _clean(profile)
        profile["Roles"] = sorted(r["RoleName"] for r in profile.get("Roles", []))
        profiles[profile["InstanceProfileName"]] = profile
    for policy in _pages(iam, "list_policies", "Policies", Scope="Local"):
        arn = policy["Arn"]
        policy = _clean(policy)
        policy.pop("AttachmentCount", None)  # derived from the attachments, which are compared where they are
        policy["Versions"] = {
            v["VersionId"]: dict(
                _clean(v), Document=_answer(iam.get_policy_version, PolicyArn=arn, VersionId=v["VersionId"]).get("PolicyVersion", {}).get("Document")
            )
            for v in _pages(iam, "list_policy_versions", "Versions", PolicyArn=arn)
        }
        policies[arn] = policy
    for user in _pages(iam, "list_users", "Users"):
        name = user["UserName"]
        user = _clean(user)
        user["Tags"] = _answer(iam.list_user_tags, UserName=name).get("Tags")
        user["AccessKeys"] = sorted((k["AccessKeyId"], k["Status"]) for k in _pages(iam, "list_access_keys", "AccessKeyMetadata", UserName=name))
        user["Groups"] = sorted(g["GroupName"] for g in _pages(iam, "list_groups_for_user", "Groups", UserName=name))
        user["InlinePolicies"] = {
            p: _answer(iam.get_user_policy, UserName=name, PolicyName=p).get("PolicyDocument")
            for p in _pages(iam, "list_user_policies", "PolicyNames", UserName=name)
        }
        user["AttachedPolicies"] = sorted(p["PolicyArn"] for p in _pages(iam, "list_attached_user_policies", "AttachedPolicies", UserName=name))
        users[name] = user
    for group in _pages(iam, "list_groups", "Groups"):
        name = group["GroupName"]
        group = _clean(group)
        group["InlinePolicies"] = {
            p: _answer(iam.get_group_policy, GroupName=name, PolicyName=p).get("PolicyDocument")
            for p in _pages(iam, "list_group_policies", "PolicyNames", GroupName=name)
        }
        group["AttachedPolicies"] = sorted(p["PolicyArn"] for p in _pages(iam, "list_attached_group_policies", "AttachedPolicies", GroupName=name))
        groups[name] = group
    oidc = {
        p["Arn"]: _answer(iam.get_open_id_connect_provider, OpenIDConnectProviderArn=p["Arn"])
        for p in iam.list_open_id_connect_providers().get("OpenIDConnectProviderList", [])
    }
    return {"roles": roles, "instance_profiles": profiles, "policies": policies, "users": users, "groups": groups, "oidc_providers": oidc}


def _route53(r53):
    zones, records = {}, {}
    for zone in _pages(r53, "list_hosted_zones", "HostedZones"):
        zone_id = zone["Id"].split("/")[-1]
        detail = _answer(r53.get_hosted_zone, Id=zone_id)
        zones[zone_id] = dict(
            _clean(zone),
            VPCs=detail.get("VPCs"),
            DelegationSet=detail.get("DelegationSet"),
            Tags=_answer(r53.list_tags_for_resource, ResourceType="hostedzone", ResourceId=zone_id).get("ResourceTagSet", {}).get("Tags"),
        )
        for record in _pages(r53, "list_resource_record_sets", "ResourceRecordSets", HostedZoneId=zone_id):
            key = "%s %s %s %s" % (zone_id, record["Name"], record["Type"], record.get("SetIdentifier", ""))
            records.setdefault(key.rstrip(), []).append(_clean(record))  # a list: moto can hold duplicates
    return {"hosted_zones": zones, "record_sets": records}


def _s3(s3):
    buckets, objects = {}, {}
    for bucket in s3.list_buckets().get("Buckets", []):
        name = bucket["Name"]
        buckets[name] = {
            "CreationDate": bucket.get("CreationDate"),
            "Location": _answer(s3.get_bucket_location, Bucket=name).get("LocationConstraint"),
            "Versioning": _answer(s3.get_bucket_versioning, Bucket=name),
            "Encryption": _answer(s3.get_bucket_encryption, Bucket=name),
            "PublicAccessBlock": _answer(s3.get_public_access_block, Bucket=name),
            "Policy": _answer(s3.get_bucket_policy, Bucket=name),
            "Tagging": _answer(s3.get_bucket_tagging, Bucket=name),
            "Lifecycle": _answer(s3.get_bucket_lifecycle_configuration, Bucket=name),
        }
        # Every version and delete marker (an unversioned bucket lists each key once, version "null"), and
        # the current objects as ListObjectsV2 shows them (an overwrite in an unversioned bucket changes the
        # ETag and LastModified of the one "null" version).
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            for version in page.get("Versions", []):
                objects["%s/%s@%s" % (name, version["Key"], version["VersionId"])] = {
                    "ETag": version.get("ETag"),
                    "Size": version.get("Size"),
                    "IsLatest": version.get("IsLatest"),
                    "LastModified": version.get("LastModified"),
                }
            for marker in page.get("DeleteMarkers", []):
                objects["%s/%s@%s" % (name, marker["Key"], marker["VersionId"])] = {
                    "DeleteMarker": True,
                    "IsLatest": marker.get("IsLatest"),
                    "LastModified": marker.get("LastModified"),
                }
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            for obj in page.get("Contents", []):
                objects["%s/%s" % (name, obj["Key"])] = {"ETag": obj.get("ETag"), "Size": obj.get("Size"), "LastModified": obj.get("LastModified")}
    return {"buckets": buckets, "objects": objects}


# ---- regional services ----------------------------------------------------------------------------------------


def _ec2(ec2):
    vpcs = by(_pages(ec2, "describe_vpcs", "Vpcs"), "VpcId")
    for vpc_id, vpc in vpcs.items():
        for attribute, key in (("enableDnsSupport", "EnableDnsSupport"), ("enableDnsHostnames", "EnableDnsHostnames")):
            vpc[key] = _answer(ec2.describe_vpc_attribute, VpcId=vpc_id, Attribute=attribute).get(key)
    instances = {}
    for reservation in _pages(ec2, "describe_instances", "Reservations"):
        for instance in reservation.get("Instances", []):
            instances[instance["InstanceId"]] = _clean(instance)
    templates = by(_pages(ec2, "describe_launch_templates", "LaunchTemplates"), "LaunchTemplateId")
    versions = {}
    for template_id in templates:
        for version in _pages(ec2, "describe_launch_template_versions", "LaunchTemplateVersions", LaunchTemplateId=template_id):
            versions["%s:%s" % (template_id, version["VersionNumber"])] = _clean(version)
    rules = by(_pages(ec2, "describe_security_group_rules", "SecurityGroupRules"), "SecurityGroupRuleId")
    return {
        "vpcs": vpcs,
        "subnets": by(_pages(ec2, "describe_subnets", "Subnets"), "SubnetId"),
        "route_tables": by(_pages(ec2, "describe_route_tables", "RouteTables"), "RouteTableId"),
        "internet_gateways": by(_pages(ec2, "describe_internet_gateways", "InternetGateways"), "InternetGatewayId"),
        "egress_only_internet_gateways": by(_pages(ec2, "describe_egress_only_internet_gateways", "EgressOnlyInternetGateways"), "EgressOnlyInternetGatewayId"),
        "nat_gateways": by(_pages(ec2, "describe_nat_gateways", "NatGateways"), "NatGatewayId"),
        "addresses": by(ec2.describe_addresses().get("Addresses", []), "AllocationId"),
        "network_acls": by(_pages(ec2, "describe_network_acls", "NetworkAcls"), "NetworkAclId"),
        "dhcp_options": by(_pages(ec2, "describe_dhcp_options", "DhcpOptions"), "DhcpOptionsId"),
        "security_groups": by(_pages(ec2, "describe_security_groups", "SecurityGroups"), "GroupId"),
        "security_group_rules": rules,
        "instances": instances,
        "volumes": by(_pages(ec2, "describe_volumes", "Volumes"), "VolumeId"),
        "network_interfaces": by(_pages(ec2, "describe_network_interfaces", "NetworkInterfaces"), "NetworkInterfaceId"),
        "launch_templates": templates,
        "launch_template_versions": versions,
        "key_pairs": by(ec2.describe_key_pairs().get("KeyPairs", []), "KeyPairId"),
        "images": by(ec2.describe_images(Owners=["self"]).get("Images", []), "ImageId"),
        "snapshots": by(_pages(ec2, "describe_snapshots", "Snapshots", OwnerIds=["self"]), "SnapshotId"),
        "vpc_endpoints": by(_pages(ec2, "describe_vpc_endpoints", "VpcEndpoints"), "VpcEndpointId"),
    }


def _autoscaling(asg):
    groups = by(_pages(asg, "describe_auto_scaling_groups", "AutoScalingGroups"), "AutoScalingGroupName")
    hooks, warm = {}, {}
    for name in groups:
        for hook in _pages(asg, "describe_lifecycle_hooks", "LifecycleHooks", AutoScalingGroupName=name):
            hooks["%s/%s" % (name, hook["LifecycleHookName"])] = _clean(hook)
        warm[name] = _answer(asg.describe_warm_pool, AutoScalingGroupName=name)
    return {
        "groups": groups,
        "policies": by(_pages(asg, "describe_policies", "ScalingPolicies"), "PolicyARN"),
        "lifecycle_hooks": hooks,
        "warm_pools": {name: pool for name, pool in warm.items() if pool.get("WarmPoolConfiguration") or "error" in pool},
        "launch_configurations": by(_pages(asg, "describe_launch_configurations", "LaunchConfigurations"), "LaunchConfigurationName"),
        "scheduled_actions": by(_pages(asg, "describe_scheduled_actions", "ScheduledUpdateGroupActions"), "ScheduledActionARN"),
    }


def _elb(elb):
    balancers = by(_pages(elb, "describe_load_balancers", "LoadBalancerDescriptions"), "LoadBalancerName")
    for name, balancer in balancers.items():
        balancer["Attributes"] = _answer(elb.describe_load_balancer_attributes, LoadBalancerName=name).get("LoadBalancerAttributes")
        tags = _answer(elb.describe_tags, LoadBalancerNames=[name]).get("TagDescriptions") or [{}]
        balancer["Tags"] = tags[0].get("Tags")
    return {"load_balancers": balancers}


def _elbv2(elbv2):
    balancers = by(_pages(elbv2, "describe_load_balancers", "LoadBalancers"), "LoadBalancerArn")
    groups = by(_pages(elbv2, "describe_target_groups", "TargetGroups"), "TargetGroupArn")
    listeners = {}
    for arn, balancer in balancers.items():
        balancer["Attributes"] = _answer(elbv2.describe_load_balancer_attributes, LoadBalancerArn=arn).get("Attributes")
        for listener in _pages(elbv2, "describe_listeners", "Listeners", LoadBalancerArn=arn):
            listeners[listener["ListenerArn"]] = _clean(listener)
    for arn, group in groups.items():
        group["Attributes"] = _answer(elbv2.describe_target_group_attributes, TargetGroupArn=arn).get("Attributes")
        group["Targets"] = sorted(
            json.dumps(t.get("Target"), sort_keys=True) for t in _answer(elbv2.describe_target_health, TargetGroupArn=arn).get("TargetHealthDescriptions", [])
        )
    arns = list(balancers) + list(groups)
    for start in range(0, len(arns), 20):
        for described in _answer(elbv2.describe_tags, ResourceArns=arns[start : start + 20]).get("TagDescriptions", []):
            (balancers.get(described["ResourceArn"]) or groups.get(described["ResourceArn"]) or {})["Tags"] = described.get("Tags")
    return {"load_balancers": balancers, "target_groups": groups, "listeners": listeners}


def _sqs(sqs):
    queues = {}
    for url in _pages(sqs, "list_queues", "QueueUrls"):
        queue = _answer(sqs.get_queue_attributes, QueueUrl=url, AttributeNames=["All"]).get("Attributes") or {}
        queue["Tags"] = _answer(sqs.list_queue_tags, QueueUrl=url).get("Tags")
        queues[url.rsplit("/", 1)[-1]] = queue
    return {"queues": queues}


def _events(events):
    rules = {}
    for bus in _pages(events, "list_event_buses", "EventBuses"):
        for rule in _pages(events, "list_rules", "Rules", EventBusName=bus["Name"]):
            rule = _clean(rule)
            rule["Targets"] = _answer(events.list_targets_by_rule, Rule=rule["Name"], EventBusName=bus["Name"]).get("Targets")
            rule["Tags"] = _answer(events.list_tags_for_resource, ResourceARN=rule["Arn"]).get("Tags")
            rules["%s/%s" % (bus["Name"], rule["Name"])] = rule
    return {"rules": rules}


# ---- comparing -------------------------------------------------------------------------------------------------


def _changed_paths(a, b, path="", found=None):
    """Paths (``'Tags[0].Value'``-like) where two JSON values differ (list of str)."""
    found = [] if found is None else found
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b or a[key] != b[key]:
                _changed_paths(a.get(key), b.get(key), "%s.%s" % (path, key) if path else str(key), found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                _changed_paths(x, y, "%s[%d]" % (path, index), found)
    elif a != b:
        found.append("%s: %s -> %s" % (path or "value", _short(a), _short(b)))
    return found


def _short(value, size=120):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= size else text[:size] + "..."


def diff(before, after, limit=20):
    """Where two :func:`take` values differ: ``['<kind>: +<id>', '<kind>: -<id>', '<kind>: ~<id> <path>: a -> b']``."""
    found = []
    for kind in sorted(set(before) | set(after)):
        items_a, items_b = before.get(kind) or {}, after.get(kind) or {}
        for key in sorted(set(items_a) | set(items_b)):
            if key not in items_a:
                found.append("%s: +%s %s" % (kind, key, _short(items_b[key])))
            elif key not in items_b:
                found.append("%s: -%s" % (kind, key))
            elif items_a[key] != items_b[key]:
                found.append("%s: ~%s %s" % (kind, key, "; ".join(_changed_paths(items_a[key], items_b[key])[:5])))
    return found[:limit]
