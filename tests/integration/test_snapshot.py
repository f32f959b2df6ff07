"""Emulator.snapshot() itself: every kind of write and every kind of delete makes it differ, and reads do not.

The "check mode writes nothing" proofs all over the tests compare two snapshots; they are only as strong as
the snapshot. Each case below makes the resources it needs (``setup``), takes a snapshot, does one write or
one delete through boto3 (``act``), and asserts the snapshot differs *and* the difference names the kind of
resource touched (so a snapshot that differs for an unrelated reason does not pass). Deletions are the
cases moto's own state dump (``/moto-api/data.json``, the former snapshot) could not see: a deleted hosted
zone, VPC, record or IAM role stayed in it, and every object of an unversioned bucket folded into one.
"""

import itertools
import json

import pytest

REGION = "us-east-1"
OTHER = "eu-west-1"
CHINA = "cn-north-1"
_count = itertools.count()


class Aws:
    """boto3 clients of the emulator (``aws.ec2``, ``aws.client('iam', 'cn-north-1')``) and the ids the setup made."""

    def __init__(self, emulator):
        self.emulator, self.ids = emulator, {}
        self.name = "snap%d" % next(_count)

    def client(self, service, region=REGION):
        return self.emulator.client(service, region)  # kept per service and region (a client costs ~0.1 s)

    def __getattr__(self, service):
        if service.startswith("_"):
            raise AttributeError(service)
        return self.client(service)

    # ---- resources that several cases need ----
    def vpc(self, region=REGION):
        ec2 = self.client("ec2", region)
        vpc = ec2.create_vpc(CidrBlock="10.%d.0.0/16" % (next(_count) % 250))["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(
            VpcId=vpc, CidrBlock=ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"][0]["CidrBlock"].replace("0.0/16", "1.0/24"), AvailabilityZone=region + "a"
        )["Subnet"]["SubnetId"]
        self.ids.update(vpc=vpc, subnet=subnet)
        return vpc

    def zone(self):
        zone = self.route53.create_hosted_zone(Name="%s.example.org." % self.name, CallerReference=self.name)
        self.ids["zone"] = zone["HostedZone"]["Id"].split("/")[-1]
        return self.ids["zone"]

    def record(self, action="UPSERT", ttl=60, value="192.0.2.1"):
        self.route53.change_resource_record_sets(
            HostedZoneId=self.ids["zone"],
            ChangeBatch={
                "Changes": [
                    {
                        "Action": action,
                        "ResourceRecordSet": {"Name": "api.%s.example.org." % self.name, "Type": "A", "TTL": ttl, "ResourceRecords": [{"Value": value}]},
                    }
                ]
            },
        )

    def template(self):
        template = self.ec2.create_launch_template(LaunchTemplateName=self.name, LaunchTemplateData={"ImageId": self.image(), "InstanceType": "t3.medium"})[
            "LaunchTemplate"
        ]["LaunchTemplateId"]
        self.ids["template"] = template
        return template

    def image(self):
        return self.ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]

    def group(self, size=1):
        self.template()
        self.autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=self.name,
            MinSize=size,
            MaxSize=3,
            DesiredCapacity=size,
            LaunchTemplate={"LaunchTemplateId": self.ids["template"], "Version": "$Latest"},
            AvailabilityZones=[REGION + "a"],
        )

    def instance(self):
        self.ids["instance"] = self.ec2.run_instances(ImageId=self.image(), MinCount=1, MaxCount=1, InstanceType="t3.medium")["Instances"][0]["InstanceId"]

    def security_group(self):
        self.vpc()
        self.ids["sg"] = self.ec2.create_security_group(GroupName=self.name, Description="d", VpcId=self.ids["vpc"])["GroupId"]

    def ingress(self, call="authorize_security_group_ingress"):
        getattr(self.ec2, call)(
            GroupId=self.ids["sg"], IpPermissions=[{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
        )

    def role(self, region=REGION):
        self.client("iam", region).create_role(
            RoleName=self.name,
            AssumeRolePolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
            ),
        )

    def policy(self):
        self.ids["policy"] = self.iam.create_policy(PolicyName=self.name, PolicyDocument=document("s3:GetObject"))["Policy"]["Arn"]

    def bucket(self, versioned=False, region=REGION):
        s3 = self.client("s3", region)
        kwargs = {} if region == REGION else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=self.name, **kwargs)
        if versioned:
            s3.put_bucket_versioning(Bucket=self.name, VersioningConfiguration={"Status": "Enabled"})

    def put(self, key="config", body=b"one", region=REGION):
        return self.client("s3", region).put_object(Bucket=self.name, Key=key, Body=body)

    def network_balancer(self):
        self.vpc()
        self.ids["nlb"] = self.elbv2.create_load_balancer(Name=self.name, Subnets=[self.ids["subnet"]], Type="network")["LoadBalancers"][0]["LoadBalancerArn"]

    def target_group(self):
        self.vpc()
        self.ids["tg"] = self.elbv2.create_target_group(Name=self.name, Protocol="TCP", Port=443, VpcId=self.ids["vpc"], TargetType="instance")["TargetGroups"][
            0
        ]["TargetGroupArn"]

    def queue(self):
        self.ids["queue"] = self.sqs.create_queue(QueueName=self.name)["QueueUrl"]

    def rule(self):
        self.events.put_rule(Name=self.name, EventPattern=json.dumps({"source": ["aws.ec2"]}))

    def user(self):
        self.iam.create_user(UserName=self.name)


def document(action):
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}]})


def nothing(aws):
    pass


# (case id, setup(aws), act(aws), the kind of resource the difference must name)
WRITES = [
    ("create hosted zone", nothing, lambda a: a.zone(), "aws/route53.hosted_zones"),
    ("create record", lambda a: a.zone(), lambda a: a.record(), "aws/route53.record_sets"),
    ("change record TTL", lambda a: (a.zone(), a.record()), lambda a: a.record(ttl=300), "aws/route53.record_sets"),
    ("create VPC", nothing, lambda a: a.vpc(), "us-east-1/ec2.vpcs"),
    ("VPC attribute", lambda a: a.vpc(), lambda a: a.ec2.modify_vpc_attribute(VpcId=a.ids["vpc"], EnableDnsHostnames={"Value": True}), "us-east-1/ec2.vpcs"),
    (
        "create subnet",
        lambda a: a.vpc(),
        lambda a: a.ec2.create_subnet(
            VpcId=a.ids["vpc"], CidrBlock=a.ec2.describe_subnets(SubnetIds=[a.ids["subnet"]])["Subnets"][0]["CidrBlock"].replace(".1.0/24", ".2.0/24")
        ),
        "us-east-1/ec2.subnets",
    ),
    ("create route table", lambda a: a.vpc(), lambda a: a.ec2.create_route_table(VpcId=a.ids["vpc"]), "us-east-1/ec2.route_tables"),
    (
        "create route",
        lambda a: (
            a.vpc(),
            a.ids.update(
                rt=a.ec2.create_route_table(VpcId=a.ids["vpc"])["RouteTable"]["RouteTableId"],
                igw=a.ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"],
            ),
        ),
        lambda a: a.ec2.create_route(RouteTableId=a.ids["rt"], DestinationCidrBlock="0.0.0.0/0", GatewayId=a.ids["igw"]),
        "us-east-1/ec2.route_tables",
    ),
    ("create internet gateway", nothing, lambda a: a.ec2.create_internet_gateway(), "us-east-1/ec2.internet_gateways"),
    (
        "attach internet gateway",
        lambda a: (a.vpc(), a.ids.update(igw=a.ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"])),
        lambda a: a.ec2.attach_internet_gateway(InternetGatewayId=a.ids["igw"], VpcId=a.ids["vpc"]),
        "us-east-1/ec2.internet_gateways",
    ),
    ("allocate address", nothing, lambda a: a.ec2.allocate_address(Domain="vpc"), "us-east-1/ec2.addresses"),
    (
        "create NAT gateway",
        lambda a: (a.vpc(), a.ids.update(eip=a.ec2.allocate_address(Domain="vpc")["AllocationId"])),
        lambda a: a.ec2.create_nat_gateway(SubnetId=a.ids["subnet"], AllocationId=a.ids["eip"]),
        "us-east-1/ec2.nat_gateways",
    ),
    (
        "create security group",
        lambda a: a.vpc(),
        lambda a: a.ec2.create_security_group(GroupName=a.name, Description="d", VpcId=a.ids["vpc"]),
        "us-east-1/ec2.security_groups",
    ),
    ("add security group rule", lambda a: a.security_group(), lambda a: a.ingress(), "us-east-1/ec2.security_group"),
    ("run instance", nothing, lambda a: a.instance(), "us-east-1/ec2.instances"),
    ("stop instance", lambda a: a.instance(), lambda a: a.ec2.stop_instances(InstanceIds=[a.ids["instance"]]), "us-east-1/ec2.instances"),
    (
        "tag instance",
        lambda a: a.instance(),
        lambda a: a.ec2.create_tags(Resources=[a.ids["instance"]], Tags=[{"Key": "k", "Value": "v"}]),
        "us-east-1/ec2.instances",
    ),
    ("create volume", nothing, lambda a: a.ec2.create_volume(AvailabilityZone=REGION + "a", Size=8), "us-east-1/ec2.volumes"),
    ("create launch template", nothing, lambda a: a.template(), "us-east-1/ec2.launch_template"),
    (
        "create launch template version",
        lambda a: a.template(),
        lambda a: a.ec2.create_launch_template_version(LaunchTemplateId=a.ids["template"], SourceVersion="1", LaunchTemplateData={"InstanceType": "t3.large"}),
        "us-east-1/ec2.launch_template",
    ),
    (
        "set default launch template version",
        lambda a: (
            a.template(),
            a.ec2.create_launch_template_version(LaunchTemplateId=a.ids["template"], SourceVersion="1", LaunchTemplateData={"InstanceType": "t3.large"}),
        ),
        lambda a: a.ec2.modify_launch_template(LaunchTemplateId=a.ids["template"], DefaultVersion="2"),
        "us-east-1/ec2.launch_template",
    ),
    ("create key pair", nothing, lambda a: a.ec2.create_key_pair(KeyName=a.name), "us-east-1/ec2.key_pairs"),
    ("create Auto Scaling group", nothing, lambda a: a.group(), "us-east-1/autoscaling.groups"),
    (
        "resize Auto Scaling group",
        lambda a: a.group(),
        lambda a: a.autoscaling.update_auto_scaling_group(AutoScalingGroupName=a.name, MaxSize=4),
        "us-east-1/autoscaling.groups",
    ),
    (
        "suspend processes",
        lambda a: a.group(),
        lambda a: a.autoscaling.suspend_processes(AutoScalingGroupName=a.name, ScalingProcesses=["AZRebalance"]),
        "us-east-1/autoscaling.groups",
    ),
    (
        "tag Auto Scaling group",
        lambda a: a.group(),
        lambda a: a.autoscaling.create_or_update_tags(
            Tags=[{"ResourceId": a.name, "ResourceType": "auto-scaling-group", "Key": "k", "Value": "v", "PropagateAtLaunch": False}]
        ),
        "us-east-1/autoscaling.groups",
    ),
    (
        "scaling policy",
        lambda a: a.group(),
        lambda a: a.autoscaling.put_scaling_policy(AutoScalingGroupName=a.name, PolicyName=a.name, AdjustmentType="ChangeInCapacity", ScalingAdjustment=1),
        "us-east-1/autoscaling.policies",
    ),
    (
        "lifecycle hook",
        lambda a: a.group(),
        lambda a: a.autoscaling.put_lifecycle_hook(
            AutoScalingGroupName=a.name, LifecycleHookName=a.name, LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING"
        ),
        "us-east-1/autoscaling.lifecycle_hooks",
    ),
    (
        "create classic load balancer",
        nothing,
        lambda a: a.elb.create_load_balancer(
            LoadBalancerName=a.name, AvailabilityZones=[REGION + "a"], Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 443, "InstancePort": 443}]
        ),
        "us-east-1/elb.load_balancers",
    ),
    ("create network load balancer", nothing, lambda a: a.network_balancer(), "us-east-1/elbv2.load_balancers"),
    ("create target group", nothing, lambda a: a.target_group(), "us-east-1/elbv2.target_groups"),
    (
        "register target",
        lambda a: (a.target_group(), a.instance()),
        lambda a: a.elbv2.register_targets(TargetGroupArn=a.ids["tg"], Targets=[{"Id": a.ids["instance"]}]),
        "us-east-1/elbv2.target_groups",
    ),
    ("create IAM role", nothing, lambda a: a.role(), "aws/iam.roles"),
    (
        "role inline policy",
        lambda a: a.role(),
        lambda a: a.iam.put_role_policy(RoleName=a.name, PolicyName="p", PolicyDocument=document("ec2:*")),
        "aws/iam.roles",
    ),
    ("create instance profile", nothing, lambda a: a.iam.create_instance_profile(InstanceProfileName=a.name), "aws/iam.instance_profiles"),
    (
        "role into instance profile",
        lambda a: (a.role(), a.iam.create_instance_profile(InstanceProfileName=a.name)),
        lambda a: a.iam.add_role_to_instance_profile(InstanceProfileName=a.name, RoleName=a.name),
        "aws/iam.instance_profiles",
    ),
    ("create policy", nothing, lambda a: a.policy(), "aws/iam.policies"),
    (
        "create policy version",
        lambda a: a.policy(),
        lambda a: a.iam.create_policy_version(PolicyArn=a.ids["policy"], PolicyDocument=document("s3:PutObject"), SetAsDefault=True),
        "aws/iam.policies",
    ),
    ("attach policy", lambda a: (a.policy(), a.role()), lambda a: a.iam.attach_role_policy(RoleName=a.name, PolicyArn=a.ids["policy"]), "aws/iam.roles"),
    ("create user", nothing, lambda a: a.user(), "aws/iam.users"),
    ("create access key", lambda a: a.user(), lambda a: a.iam.create_access_key(UserName=a.name), "aws/iam.users"),
    ("create group", nothing, lambda a: a.iam.create_group(GroupName=a.name), "aws/iam.groups"),
    (
        "user into group",
        lambda a: (a.user(), a.iam.create_group(GroupName=a.name)),
        lambda a: a.iam.add_user_to_group(GroupName=a.name, UserName=a.name),
        "aws/iam.users",
    ),
    ("create queue", nothing, lambda a: a.queue(), "us-east-1/sqs.queues"),
    (
        "queue attribute",
        lambda a: a.queue(),
        lambda a: a.sqs.set_queue_attributes(QueueUrl=a.ids["queue"], Attributes={"MessageRetentionPeriod": "300"}),
        "us-east-1/sqs.queues",
    ),
    ("create EventBridge rule", nothing, lambda a: a.rule(), "us-east-1/events.rules"),
    (
        "rule target",
        lambda a: (a.rule(), a.queue()),
        lambda a: a.events.put_targets(Rule=a.name, Targets=[{"Id": "1", "Arn": "arn:aws:sqs:us-east-1:123456789012:" + a.name}]),
        "us-east-1/events.rules",
    ),
    ("create bucket", nothing, lambda a: a.bucket(), "aws/s3.buckets"),
    (
        "bucket versioning",
        lambda a: a.bucket(),
        lambda a: a.s3.put_bucket_versioning(Bucket=a.name, VersioningConfiguration={"Status": "Enabled"}),
        "aws/s3.buckets",
    ),
    (
        "bucket encryption",
        lambda a: a.bucket(),
        lambda a: a.s3.put_bucket_encryption(
            Bucket=a.name, ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
        ),
        "aws/s3.buckets",
    ),
    ("new key in unversioned bucket", lambda a: (a.bucket(), a.put("first")), lambda a: a.put("second"), "aws/s3.objects"),
    ("overwrite in unversioned bucket", lambda a: (a.bucket(), a.put()), lambda a: a.put(body=b"two"), "aws/s3.objects"),
    ("new version in versioned bucket", lambda a: (a.bucket(versioned=True), a.put()), lambda a: a.put(body=b"two"), "aws/s3.objects"),
    ("same body again in versioned bucket", lambda a: (a.bucket(versioned=True), a.put()), lambda a: a.put(), "aws/s3.objects"),
    ("VPC in another region", nothing, lambda a: a.vpc(OTHER), "eu-west-1/ec2.vpcs"),
    ("IAM role in aws-cn", nothing, lambda a: a.role(CHINA), "aws-cn/iam.roles"),
    ("object in a China bucket", lambda a: a.bucket(region=CHINA), lambda a: a.put(region=CHINA), "aws-cn/s3.objects"),
]

DELETES = [
    ("delete hosted zone", lambda a: a.zone(), lambda a: a.route53.delete_hosted_zone(Id=a.ids["zone"]), "aws/route53.hosted_zones"),
    ("delete record", lambda a: (a.zone(), a.record()), lambda a: a.record("DELETE"), "aws/route53.record_sets"),
    (
        "delete VPC",
        lambda a: a.ec2.create_vpc(CidrBlock="10.9.0.0/16"),
        lambda a: a.ec2.delete_vpc(VpcId=a.ec2.describe_vpcs(Filters=[{"Name": "cidr", "Values": ["10.9.0.0/16"]}])["Vpcs"][0]["VpcId"]),
        "us-east-1/ec2.vpcs",
    ),
    (
        "delete a default subnet",
        nothing,
        lambda a: a.ec2.delete_subnet(
            SubnetId=a.ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}, {"Name": "availability-zone", "Values": [REGION + "f"]}])[
                "Subnets"
            ][0]["SubnetId"]
        ),
        "us-east-1/ec2.subnets",
    ),
    ("delete subnet", lambda a: a.vpc(), lambda a: a.ec2.delete_subnet(SubnetId=a.ids["subnet"]), "us-east-1/ec2.subnets"),
    (
        "delete route table",
        lambda a: (a.vpc(), a.ids.update(rt=a.ec2.create_route_table(VpcId=a.ids["vpc"])["RouteTable"]["RouteTableId"])),
        lambda a: a.ec2.delete_route_table(RouteTableId=a.ids["rt"]),
        "us-east-1/ec2.route_tables",
    ),
    (
        "delete route",
        lambda a: (
            a.vpc(),
            a.ids.update(
                rt=a.ec2.create_route_table(VpcId=a.ids["vpc"])["RouteTable"]["RouteTableId"],
                igw=a.ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"],
            ),
            a.ec2.create_route(RouteTableId=a.ids["rt"], DestinationCidrBlock="0.0.0.0/0", GatewayId=a.ids["igw"]),
        ),
        lambda a: a.ec2.delete_route(RouteTableId=a.ids["rt"], DestinationCidrBlock="0.0.0.0/0"),
        "us-east-1/ec2.route_tables",
    ),
    (
        "delete internet gateway",
        lambda a: a.ids.update(igw=a.ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]),
        lambda a: a.ec2.delete_internet_gateway(InternetGatewayId=a.ids["igw"]),
        "us-east-1/ec2.internet_gateways",
    ),
    (
        "release address",
        lambda a: a.ids.update(eip=a.ec2.allocate_address(Domain="vpc")["AllocationId"]),
        lambda a: a.ec2.release_address(AllocationId=a.ids["eip"]),
        "us-east-1/ec2.addresses",
    ),
    (
        "delete NAT gateway",
        lambda a: (
            a.vpc(),
            a.ids.update(
                nat=a.ec2.create_nat_gateway(SubnetId=a.ids["subnet"], AllocationId=a.ec2.allocate_address(Domain="vpc")["AllocationId"])["NatGateway"][
                    "NatGatewayId"
                ]
            ),
        ),
        lambda a: a.ec2.delete_nat_gateway(NatGatewayId=a.ids["nat"]),
        "us-east-1/ec2.nat_gateways",
    ),
    ("delete security group", lambda a: a.security_group(), lambda a: a.ec2.delete_security_group(GroupId=a.ids["sg"]), "us-east-1/ec2.security_groups"),
    (
        "revoke security group rule",
        lambda a: (a.security_group(), a.ingress()),
        lambda a: a.ingress("revoke_security_group_ingress"),
        "us-east-1/ec2.security_group",
    ),
    ("terminate instance", lambda a: a.instance(), lambda a: a.ec2.terminate_instances(InstanceIds=[a.ids["instance"]]), "us-east-1/ec2.instances"),
    (
        "untag instance",
        lambda a: (a.instance(), a.ec2.create_tags(Resources=[a.ids["instance"]], Tags=[{"Key": "k", "Value": "v"}])),
        lambda a: a.ec2.delete_tags(Resources=[a.ids["instance"]], Tags=[{"Key": "k"}]),
        "us-east-1/ec2.instances",
    ),
    (
        "delete volume",
        lambda a: a.ids.update(vol=a.ec2.create_volume(AvailabilityZone=REGION + "a", Size=8)["VolumeId"]),
        lambda a: a.ec2.delete_volume(VolumeId=a.ids["vol"]),
        "us-east-1/ec2.volumes",
    ),
    # ec2:DeleteLaunchTemplateVersions is not implemented by moto (HTTP 500; kops deletes whole templates):
    # a version disappears when its template is deleted.
    (
        "delete launch template and its versions",
        lambda a: (
            a.template(),
            a.ec2.create_launch_template_version(LaunchTemplateId=a.ids["template"], SourceVersion="1", LaunchTemplateData={"InstanceType": "t3.large"}),
        ),
        lambda a: a.ec2.delete_launch_template(LaunchTemplateId=a.ids["template"]),
        "us-east-1/ec2.launch_template_versions",
    ),
    ("delete key pair", lambda a: a.ec2.create_key_pair(KeyName=a.name), lambda a: a.ec2.delete_key_pair(KeyName=a.name), "us-east-1/ec2.key_pairs"),
    (
        "delete Auto Scaling group",
        lambda a: a.group(size=0),
        lambda a: a.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=a.name, ForceDelete=True),
        "us-east-1/autoscaling.groups",
    ),
    (
        "resume processes",
        lambda a: (a.group(), a.autoscaling.suspend_processes(AutoScalingGroupName=a.name, ScalingProcesses=["AZRebalance"])),
        lambda a: a.autoscaling.resume_processes(AutoScalingGroupName=a.name, ScalingProcesses=["AZRebalance"]),
        "us-east-1/autoscaling.groups",
    ),
    (
        "delete scaling policy",
        lambda a: (
            a.group(),
            a.autoscaling.put_scaling_policy(AutoScalingGroupName=a.name, PolicyName=a.name, AdjustmentType="ChangeInCapacity", ScalingAdjustment=1),
        ),
        lambda a: a.autoscaling.delete_policy(AutoScalingGroupName=a.name, PolicyName=a.name),
        "us-east-1/autoscaling.policies",
    ),
    (
        "delete lifecycle hook",
        lambda a: (
            a.group(),
            a.autoscaling.put_lifecycle_hook(AutoScalingGroupName=a.name, LifecycleHookName=a.name, LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING"),
        ),
        lambda a: a.autoscaling.delete_lifecycle_hook(AutoScalingGroupName=a.name, LifecycleHookName=a.name),
        "us-east-1/autoscaling.lifecycle_hooks",
    ),
    (
        "delete classic load balancer",
        lambda a: a.elb.create_load_balancer(
            LoadBalancerName=a.name, AvailabilityZones=[REGION + "a"], Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 443, "InstancePort": 443}]
        ),
        lambda a: a.elb.delete_load_balancer(LoadBalancerName=a.name),
        "us-east-1/elb.load_balancers",
    ),
    (
        "delete network load balancer",
        lambda a: a.network_balancer(),
        lambda a: a.elbv2.delete_load_balancer(LoadBalancerArn=a.ids["nlb"]),
        "us-east-1/elbv2.load_balancers",
    ),
    ("delete target group", lambda a: a.target_group(), lambda a: a.elbv2.delete_target_group(TargetGroupArn=a.ids["tg"]), "us-east-1/elbv2.target_groups"),
    ("delete IAM role", lambda a: a.role(), lambda a: a.iam.delete_role(RoleName=a.name), "aws/iam.roles"),
    (
        "delete role inline policy",
        lambda a: (a.role(), a.iam.put_role_policy(RoleName=a.name, PolicyName="p", PolicyDocument=document("ec2:*"))),
        lambda a: a.iam.delete_role_policy(RoleName=a.name, PolicyName="p"),
        "aws/iam.roles",
    ),
    (
        "delete instance profile",
        lambda a: a.iam.create_instance_profile(InstanceProfileName=a.name),
        lambda a: a.iam.delete_instance_profile(InstanceProfileName=a.name),
        "aws/iam.instance_profiles",
    ),
    ("delete policy", lambda a: a.policy(), lambda a: a.iam.delete_policy(PolicyArn=a.ids["policy"]), "aws/iam.policies"),
    (
        "delete policy version",
        lambda a: (a.policy(), a.iam.create_policy_version(PolicyArn=a.ids["policy"], PolicyDocument=document("s3:PutObject"))),
        lambda a: a.iam.delete_policy_version(PolicyArn=a.ids["policy"], VersionId="v2"),
        "aws/iam.policies",
    ),
    (
        "detach policy",
        lambda a: (a.policy(), a.role(), a.iam.attach_role_policy(RoleName=a.name, PolicyArn=a.ids["policy"])),
        lambda a: a.iam.detach_role_policy(RoleName=a.name, PolicyArn=a.ids["policy"]),
        "aws/iam.roles",
    ),
    ("delete user", lambda a: a.user(), lambda a: a.iam.delete_user(UserName=a.name), "aws/iam.users"),
    (
        "delete access key",
        lambda a: (a.user(), a.ids.update(key=a.iam.create_access_key(UserName=a.name)["AccessKey"]["AccessKeyId"])),
        lambda a: a.iam.delete_access_key(UserName=a.name, AccessKeyId=a.ids["key"]),
        "aws/iam.users",
    ),
    ("delete group", lambda a: a.iam.create_group(GroupName=a.name), lambda a: a.iam.delete_group(GroupName=a.name), "aws/iam.groups"),
    ("delete queue", lambda a: a.queue(), lambda a: a.sqs.delete_queue(QueueUrl=a.ids["queue"]), "us-east-1/sqs.queues"),
    ("delete EventBridge rule", lambda a: a.rule(), lambda a: a.events.delete_rule(Name=a.name), "us-east-1/events.rules"),
    (
        "remove rule target",
        lambda a: (a.rule(), a.events.put_targets(Rule=a.name, Targets=[{"Id": "1", "Arn": "arn:aws:sqs:us-east-1:123456789012:q"}])),
        lambda a: a.events.remove_targets(Rule=a.name, Ids=["1"]),
        "us-east-1/events.rules",
    ),
    ("delete bucket", lambda a: a.bucket(), lambda a: a.s3.delete_bucket(Bucket=a.name), "aws/s3.buckets"),
    (
        "delete bucket encryption",
        lambda a: (
            a.bucket(),
            a.s3.put_bucket_encryption(
                Bucket=a.name, ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
            ),
        ),
        lambda a: a.s3.delete_bucket_encryption(Bucket=a.name),
        "aws/s3.buckets",
    ),
    (
        "delete key in unversioned bucket",
        lambda a: (a.bucket(), a.put("first"), a.put("second")),
        lambda a: a.s3.delete_object(Bucket=a.name, Key="second"),
        "aws/s3.objects",
    ),
    (
        "delete marker in versioned bucket",
        lambda a: (a.bucket(versioned=True), a.put()),
        lambda a: a.s3.delete_object(Bucket=a.name, Key="config"),
        "aws/s3.objects",
    ),
    (
        "delete one object version",
        lambda a: (a.bucket(versioned=True), a.ids.update(version=a.put()["VersionId"]), a.put(body=b"two")),
        lambda a: a.s3.delete_object(Bucket=a.name, Key="config", VersionId=a.ids["version"]),
        "aws/s3.objects",
    ),
    (
        "remove a delete marker",
        lambda a: (a.bucket(versioned=True), a.put(), a.ids.update(marker=a.s3.delete_object(Bucket=a.name, Key="config")["VersionId"])),
        lambda a: a.s3.delete_object(Bucket=a.name, Key="config", VersionId=a.ids["marker"]),
        "aws/s3.objects",
    ),
    (
        "delete VPC in another region",
        lambda a: a.vpc(OTHER),
        lambda a: (a.client("ec2", OTHER).delete_subnet(SubnetId=a.ids["subnet"]), a.client("ec2", OTHER).delete_vpc(VpcId=a.ids["vpc"])),
        "eu-west-1/ec2.vpcs",
    ),
]


_cases = itertools.count()


@pytest.fixture
def aws_emulator(emulator_session):
    """The emulator, emptied before every tenth case (each case uses its own names; emptying costs ~3 s
    and a snapshot's time grows with the state)."""
    if next(_cases) % 10 == 0:
        emulator_session.reset()
    return emulator_session


def check(emulator, setup, act, kind):
    aws = Aws(emulator)
    setup(aws)
    before = emulator.snapshot()
    act(aws)
    after = emulator.snapshot()
    differences = emulator.snapshot_diff(before, after, limit=100).splitlines()
    assert after != before, "the snapshot did not see it"
    assert any(d.startswith(kind) for d in differences), differences


@pytest.mark.parametrize("setup, act, kind", [c[1:] for c in WRITES], ids=[c[0] for c in WRITES])
def test_every_kind_of_write_shows(aws_emulator, setup, act, kind):
    check(aws_emulator, setup, act, kind)


@pytest.mark.parametrize("setup, act, kind", [c[1:] for c in DELETES], ids=[c[0] for c in DELETES])
def test_every_kind_of_delete_shows(aws_emulator, setup, act, kind):
    check(aws_emulator, setup, act, kind)


def test_reads_do_not_show(aws_emulator):
    """Reading everything a snapshot reads, and what kops reads, leaves it equal (the other tests are not
    passing because every snapshot differs from the last)."""
    aws = Aws(aws_emulator)
    aws.vpc(OTHER)
    aws.group()
    aws.bucket(versioned=True)
    aws.put()
    aws.s3.delete_object(Bucket=aws.name, Key="config")
    aws.security_group()
    aws.ingress()
    before = aws_emulator.snapshot()
    aws.ec2.describe_security_group_rules()
    aws.ec2.describe_instances()
    aws.autoscaling.describe_auto_scaling_groups()
    aws.s3.list_object_versions(Bucket=aws.name)
    aws.s3.list_objects_v2(Bucket=aws.name)
    aws.iam.list_roles()
    aws.iam.get_account_summary()
    aws.route53.list_hosted_zones()
    aws.sts.get_caller_identity()
    aws.client("ec2", OTHER).describe_vpcs()
    after_snapshot = aws_emulator.snapshot()
    assert after_snapshot == before, aws_emulator.snapshot_diff(before, after_snapshot)
    after = aws_emulator.snapshot()
    assert after == before, aws_emulator.snapshot_diff(before, after)


def test_diff_names_made_deleted_and_changed():
    from harness.snapshot import diff

    before = {"aws/route53.hosted_zones": {"Z1": {"Name": "a."}, "Z2": {"Name": "b.", "Config": {"Comment": "x"}}}}
    after = {"aws/route53.hosted_zones": {"Z2": {"Name": "b.", "Config": {"Comment": "y"}}, "Z3": {"Name": "c."}}}
    assert diff(before, after) == [
        "aws/route53.hosted_zones: -Z1",
        'aws/route53.hosted_zones: ~Z2 Config.Comment: "x" -> "y"',
        'aws/route53.hosted_zones: +Z3 {"Name": "c."}',
    ]


def test_a_region_only_read_stays_out_and_a_write_there_names_who_touched_it(emulator):
    """A read in a region no call has touched since the reset makes the emulator hold what AWS has there from the
    start (the default VPC and its parts): the take leaves such an untouched region out, as on AWS, so the two takes
    stay equal. A write there shows, and the difference names the request that touched the region first (its
    credential scope and User-Agent), so that a stray caller can be found from a failure alone. Deleting a default
    subnet or the default VPC of an otherwise untouched region shows too."""
    before = emulator.snapshot()
    emulator.client("ec2", "ap-southeast-2").describe_vpcs()
    emulator.client("autoscaling", "ap-southeast-2").describe_auto_scaling_groups()
    after = emulator.snapshot()
    assert after == before, emulator.snapshot_diff(before, after)

    ec2 = emulator.client("ec2", "ap-southeast-4")
    ec2.create_vpc(CidrBlock="10.9.0.0/16")
    after = emulator.snapshot()
    differences = emulator.snapshot_diff(before, after, limit=100).splitlines()
    assert any(d.startswith("ap-southeast-4/ec2.vpcs: +vpc-") for d in differences), differences
    touched = json.loads(differences[-1].partition("first touched: ")[2])
    assert touched["ec2 ap-southeast-4"]["credential_scope"].split("/")[1:3] == ["ap-southeast-4", "ec2"], touched
    assert touched["ec2 ap-southeast-4"]["user_agent"].startswith("Boto3/"), touched

    for region, delete in (
        ("ca-central-1", lambda ec2, vpc, subnets: ec2.delete_subnet(SubnetId=subnets[0])),
        ("sa-east-1", lambda ec2, vpc, subnets: ([ec2.delete_subnet(SubnetId=s) for s in subnets], ec2.delete_vpc(VpcId=vpc))),
    ):
        ec2 = emulator.client("ec2", region)
        vpc = [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if v["IsDefault"]][0]
        subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s["VpcId"] == vpc]
        before = emulator.snapshot()
        delete(ec2, vpc, subnets)
        after = emulator.snapshot()
        assert after != before and any(d.startswith(region + "/ec2.") for d in emulator.snapshot_diff(before, after).splitlines()), region
