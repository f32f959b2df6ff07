"""Pure logic: DNS name rules, zone choice (kOps' FindDNSHostedZone rule), record summaries."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53
from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_check import split_server
from ansible_collections.kopsible.kops.plugins.module_utils._route53.dns_names import DNSNameError, is_subdomain, normalize_dns_name, parent_name


def zone(zid, name, private=False):
    return {"id": zid, "name": name, "private": private}


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Example.ORG.", "example.org"),
        ("  a-b.c0.example.org ", "a-b.c0.example.org"),
        ("1abc.example.org", "1abc.example.org"),
    ],
)
def test_normalize_accepts(raw, expected):
    assert normalize_dns_name(raw) == expected


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ("", "required"),
        (None, "required"),
        ("a..b", "empty label"),
        (".a.b", "empty label"),
        ("-a.b", "may hold only"),
        ("a-.b", "may hold only"),
        ("a_b.c", "may hold only"),
        ("x" * 64 + ".org", "limit is 63"),
        (("a" * 60 + ".") * 5 + "org", "limit is 253"),
    ],
)
def test_normalize_rejects_with_field_name(raw, fragment):
    with pytest.raises(DNSNameError) as err:
        normalize_dns_name(raw, field="cluster_name")
    assert str(err.value).startswith("cluster_name: ")
    assert fragment in str(err.value)


def test_subdomain_relations():
    assert is_subdomain("a.example.org", "example.org")
    assert not is_subdomain("example.org", "example.org")
    assert not is_subdomain("badexample.org", "example.org")
    assert parent_name("a.b.c") == "b.c" and parent_name("c") == ""


def test_parent_is_longest_public_match():
    zones = [zone("Z1", "example.org"), zone("Z2", "clusters.example.org"), zone("Z3", "clusters.example.org", True), zone("Z4", "dev.clusters.example.org")]
    assert route53.pick_parent_zone(zones, "dev.clusters.example.org")["id"] == "Z2"
    assert route53.pick_parent_zone(zones, "x.dev.clusters.example.org")["id"] == "Z4"
    assert route53.pick_parent_zone(zones, "other.example.org")["id"] == "Z1"


def test_parent_suffix_must_be_on_a_label_boundary():
    with pytest.raises(route53.ZoneLookupError) as err:
        route53.pick_parent_zone([zone("Z1", "example.org")], "kops.badexample.org")
    assert "create one first (e.g. badexample.org)" in str(err.value)


def test_parent_ambiguity_lists_ids():
    with pytest.raises(route53.ZoneLookupError) as err:
        route53.pick_parent_zone([zone("Z1", "example.org"), zone("Z2", "example.org")], "a.example.org")
    assert "Z1, Z2" in str(err.value)


def test_parent_given_must_enclose():
    with pytest.raises(route53.ZoneLookupError) as err:
        route53.pick_parent_zone([zone("Z1", "example.org")], "a.example.com", parent_zone="example.org")
    assert "not a subdomain of the parent zone example.org" in str(err.value)


def test_pick_zone_by_type_and_id():
    zones = [zone("Z1", "a.example.org"), zone("Z2", "a.example.org", True)]
    assert route53.pick_zone(zones, "a.example.org", True)["id"] == "Z2"
    assert route53.pick_zone(zones, "b.example.org", False) is None
    assert route53.pick_zone(zones, None, False, zone_id="/hostedzone/Z1")["id"] == "Z1"


def test_record_summary_normalises_ns_and_alias():
    ns = {"Name": "A.Example.org.", "Type": "NS", "TTL": 300, "ResourceRecords": [{"Value": "NS-2.awsdns.net."}, {"Value": "ns-1.awsdns.com"}]}
    assert route53.record_summary(ns) == {"name": "a.example.org", "type": "NS", "ttl": 300, "values": ["ns-1.awsdns.com", "ns-2.awsdns.net"]}
    alias = {"Name": "api.a.example.org.", "Type": "A", "AliasTarget": {"DNSName": "LB.elb.amazonaws.com."}}
    assert route53.record_summary(alias)["values"] == ["ALIAS lb.elb.amazonaws.com"]


def test_non_apex_records_are_the_leftovers():
    records = [
        {"Name": "a.org.", "Type": "NS", "TTL": 1, "ResourceRecords": [{"Value": "x"}]},
        {"Name": "a.org.", "Type": "SOA", "TTL": 1, "ResourceRecords": [{"Value": "x"}]},
        {"Name": "api.a.org.", "Type": "A", "TTL": 10, "ResourceRecords": [{"Value": "203.0.113.123"}]},
        {"Name": "a.org.", "Type": "TXT", "TTL": 1, "ResourceRecords": [{"Value": '"v"'}]},
    ]
    left = route53.non_apex_records(records, "a.org")
    assert [(r["name"], r["type"]) for r in left] == [("api.a.org", "A"), ("a.org", "TXT")]


def test_delegation_match_requires_values_and_ttl():
    current = {"name": "a", "type": "NS", "ttl": 300, "values": ["n1", "n2"]}
    assert route53.delegation_matches(current, ["n2", "n1"], 300)
    assert not route53.delegation_matches(current, ["n1"], 300)
    assert not route53.delegation_matches(current, ["n1", "n2"], 60)
    assert not route53.delegation_matches({}, ["n1"], 300)


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("[::1]:5300", ("::1", 5300)),
        ("::1", ("::1", 53)),
    ],
)
def test_split_server(entry, expected):
    assert split_server(entry) == expected


@pytest.mark.parametrize("entry", ["1.2.3.4:x", "1.2.3.4:0", "1.2.3.4:70000"])
def test_split_server_rejects(entry):
    with pytest.raises(ValueError):
        split_server(entry)


class PagedRecords:
    """A Route53 client stand-in whose ListResourceRecordSets answers from ``pages`` in turn and records the calls."""

    def __init__(self, *pages):
        self.pages, self.calls = list(pages), []

    def list_resource_record_sets(self, aws_retry=False, **kwargs):
        self.calls.append(kwargs)
        return self.pages.pop(0)


def rrset(name, rtype, *values):
    return {"Name": name, "Type": rtype, "TTL": 300, "ResourceRecords": [{"Value": v} for v in values]}


def test_records_at_reads_a_names_records_in_one_call():
    """route53_subdomain's no-op reads the parent's CNAME and NS at the subdomain with one request (bench no-op target:
    3 AWS requests)."""
    client = PagedRecords({"ResourceRecordSets": [rrset("k.example.org.", "NS", "ns1."), rrset("l.example.org.", "A", "1.2.3.4")], "IsTruncated": False})
    found = route53.records_at(client, "Z1", "k.example.org", ("CNAME", "NS"))
    assert sorted(found) == ["NS"] and found["NS"]["ResourceRecords"] == [{"Value": "ns1."}]
    assert client.calls == [{"HostedZoneId": "Z1", "StartRecordName": "k.example.org", "MaxItems": "100"}]


def test_records_at_asks_again_for_a_type_a_full_page_did_not_reach():
    """A page filled with the name's other records (e.g. weighted A records) ends before NS: each type it did not
    reach is read alone (CNAME: none; NS: found)."""
    full = {"ResourceRecordSets": [rrset("k.example.org.", "A", "1.2.3.4")], "IsTruncated": True, "NextRecordName": "k.example.org.", "NextRecordType": "A"}
    no_cname = {"ResourceRecordSets": [rrset("k.example.org.", "MX", "10 mail.")]}
    client = PagedRecords(full, no_cname, {"ResourceRecordSets": [rrset("k.example.org.", "NS", "ns1.")]})
    found = route53.records_at(client, "Z1", "k.example.org", ("CNAME", "NS"))
    assert sorted(found) == ["NS"]
    assert [c.get("StartRecordType") for c in client.calls] == [None, "CNAME", "NS"]
