"""verify_dns against real authoritative DNS servers (bind9 named) on loopback.

Two servers stand in for the two sides of a delegation: one serves the parent zone
(example.org, whose NS record for the subdomain the test controls), the other serves the child
zone with the name servers Route53 gave it.
"""

import pytest

from harness.named import NamedServer

CHILD = "kopsclustertest.example.org"


def sub_task(**options):
    options.setdefault("name", CHILD)
    return {"name": "sub", "kopsible.kops.route53_subdomain": options, "ignore_errors": True}


@pytest.fixture
def delegated(emulator, play):
    """The subdomain delegated in the emulator; returns its child name servers."""
    emulator.client("route53").create_hosted_zone(Name="example.org.", CallerReference="p")
    result = play([sub_task()]).result("sub")
    assert not result.get("failed"), result
    return result["name_servers"]


def servers(parent_ns_for_child, child_ns):
    parent = NamedServer(
        {
            "example.org": [
                {"name": "example.org", "type": "NS", "ttl": 172800, "values": ["ns1.example.net"]},
            ]
            + ([{"name": CHILD, "type": "NS", "ttl": 300, "values": parent_ns_for_child}] if parent_ns_for_child else [])
        }
    )
    child = NamedServer({CHILD: [{"name": CHILD, "type": "NS", "ttl": 172800, "values": child_ns}]})
    return parent, child


def verify(play, parent, child, timeout=3):
    return play(
        [sub_task(verify_dns=True, verify_timeout=timeout, nameservers=["127.0.0.1:%d" % parent.port], child_nameservers=["127.0.0.1:%d" % child.port])]
    ).result("sub")


def test_correct_delegation_verifies(play, delegated):
    parent, child = servers(delegated, delegated)
    with parent, child:
        result = verify(play, parent, child)
    assert result.get("failed") is not True, result
    assert result["verified"] is True
    answers = result["verification"]["parent"]["127.0.0.1:%d" % parent.port]
    assert answers == sorted(delegated)
    soa = result["verification"]["child"]["127.0.0.1:%d" % child.port]
    assert soa["mname"] == delegated[0] or soa["mname"] in delegated


def test_missing_delegation_fails_clearly(play, delegated):
    parent, child = servers(None, delegated)
    with parent, child:
        result = verify(play, parent, child, timeout=2)
    assert result["failed"] is True
    assert result["verified"] is False
    assert "has no NS delegation for %s" % CHILD in result["msg"]
    assert result["verification"]["attempts"] >= 2


def test_wrong_delegation_fails_naming_both_sets(play, delegated):
    parent, child = servers(["ns1.stale.example.net", "ns2.stale.example.net"], delegated)
    with parent, child:
        result = verify(play, parent, child, timeout=2)
    assert result["failed"] is True
    assert "delegates %s to ns1.stale.example.net, ns2.stale.example.net, expected %s" % (CHILD, ", ".join(sorted(delegated))) in result["msg"]


def test_child_without_zone_fails(play, delegated):
    parent, _ = servers(delegated, delegated)
    other = NamedServer({"unrelated.example": [{"name": "unrelated.example", "type": "NS", "ttl": 300, "values": ["ns1.example.net"]}]})
    with parent, other:
        result = verify(play, parent, other, timeout=2)
    assert result["failed"] is True
    assert "gives no authoritative SOA for %s" % CHILD in result["msg"]


def test_late_delegation_is_found_by_retrying(play, delegated):
    """A delegation that appears while the module is retrying is accepted (propagation delay)."""
    import threading

    parent, child = servers(None, delegated)
    with parent, child:

        def fix():
            # once the module has asked the parent (and found no delegation), the delegation appears
            assert parent.wait_for_query(CHILD), "the module never asked the parent"
            parent.reload(
                {
                    "example.org": [
                        {"name": "example.org", "type": "NS", "ttl": 172800, "values": ["ns1.example.net"]},
                        {"name": CHILD, "type": "NS", "ttl": 300, "values": delegated},
                    ]
                }
            )

        timer = threading.Thread(target=fix)
        timer.start()
        try:
            result = verify(play, parent, child, timeout=20)
        finally:
            timer.join()
    assert result.get("failed") is not True, result
    assert result["verified"] is True
    assert result["verification"]["attempts"] >= 2
