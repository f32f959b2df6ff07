"""Issue 16 item 5: dns_zone must be the closest hosted zone enclosing the cluster name when a closer one is in
use (kops' own choice is the longest suffix: upup/pkg/fi/cloudup/utils.go FindDNSHostedZone)."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import dns_zones
from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_ops import ClusterOps


def zone(name, zid, private=False):
    return {"id": zid, "name": name, "private": private, "record_count": 2, "comment": ""}


class FakeRoute53(object):
    """list_hosted_zones / list_resource_record_sets as Route 53 answers them (names end with a dot)."""

    def __init__(self, zones, ns):
        self.zones, self.ns = zones, ns  # ns: {zone id: [names with an NS record set]}

    def list_hosted_zones(self, aws_retry=False, **kwargs):
        return {
            "HostedZones": [
                {"Id": "/hostedzone/" + z["id"], "Name": z["name"] + ".", "ResourceRecordSetCount": 2, "Config": {"PrivateZone": z["private"]}}
                for z in self.zones
            ],
            "IsTruncated": False,
        }

    def list_resource_record_sets(self, aws_retry=False, HostedZoneId=None, StartRecordName=None, StartRecordType=None, MaxItems=None):
        names = self.ns.get(HostedZoneId, [])
        found = [
            {"Name": n + ".", "Type": "NS", "TTL": 300, "ResourceRecords": [{"Value": "ns-1.example.net."}]}
            for n in names
            if n == StartRecordName and StartRecordType == "NS"
        ]
        return {"ResourceRecordSets": found, "IsTruncated": False}


EXAMPLE, EU, PRIVATE_EU = zone("example.com", "Z1"), zone("eu.example.com", "Z2"), zone("eu.example.com", "Z3", True)


def ops(zones, ns):
    return ClusterOps(runner=None, state_store="s3://b", route53=lambda: FakeRoute53(zones, ns))


def test_issue_case_delegated_closer_zone_refused():
    """Cluster prod.eu.example.com, dns_zone example.com, eu.example.com exists and example.com delegates it."""
    problem = ops([EXAMPLE, EU], {"Z1": ["eu.example.com"]}).closer_zone_problem("prod.eu.example.com", "example.com", False)
    assert problem.startswith(
        "dns_zone: example.com is not the closest hosted zone enclosing prod.eu.example.com: "
        "the public zone eu.example.com (Z2) exists and is delegated from example.com"
    )
    assert problem.endswith("Use dns_zone: eu.example.com")


def test_undelegated_closer_public_zone_is_not_in_use():
    """Without NS records in the parent, resolvers never reach eu.example.com: example.com answers."""
    assert ops([EXAMPLE, EU], {}).closer_zone_problem("prod.eu.example.com", "example.com", False) is None


def test_closest_zone_named_is_fine():
    assert ops([EXAMPLE, EU], {"Z1": ["eu.example.com"]}).closer_zone_problem("prod.eu.example.com", "eu.example.com", False) is None


def test_private_cluster_looks_at_private_zones_only():
    both = [EXAMPLE, EU, zone("example.com", "Z4", True), PRIVATE_EU]
    problem = ops(both, {}).closer_zone_problem("prod.eu.example.com", "example.com", True)
    assert "the private zone eu.example.com (Z3) exists," in problem
    assert ops([EXAMPLE, PRIVATE_EU], {}).closer_zone_problem("prod.eu.example.com", "example.com", False) is None


def test_closer_zones_longest_first_and_only_between():
    zones = [EXAMPLE, EU, zone("prod.eu.example.com", "Z5"), zone("other.example.com", "Z6"), zone("com", "Z7")]
    found = dns_zones.closer_zones("api.prod.eu.example.com", "example.com", zones, False)
    assert [z["name"] for z in found] == ["prod.eu.example.com", "eu.example.com"]
    assert dns_zones.closer_zones("prod.eu.example.com", "prod.eu.example.com", zones, False) == []
