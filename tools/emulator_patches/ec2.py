"""Fixes to moto's EC2 backend (launch templates, subnets, VPCs, key pairs, reserved-instance offerings, client tokens, snapshots)."""

import base64
import hashlib

from emulator_patches import patch


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
