"""AWS faults: route53_subdomain and the roles subdomain_delegation and state_store through the
fault-injecting proxy (tools/fault_proxy.py), with throttling, 500/503 errors and dropped
connections, must end with exactly the state of a run without faults, and a second faulty run
must change nothing. The end state is read from the emulator directly, never through the proxy.
docs/reliability.md ("AWS faults") records the rates and counts.
"""

import pytest

from harness.faults import faulty
from harness.named import free_udp_port
from harness.playbook import run_playbook
from harness.route53_dns import Route53DNS

PARENT = "example.org"
STAGING = "staging.example.org"
SUBDOMAIN = "kopsclustertest.example.org"
BUCKET = "kopsible-state"
# (rate, seed, extra environment): the highest rate every seed tried survived with botocore's
# default retries (standard mode, 3 attempts), and with AWS_MAX_ATTEMPTS=10 (docs/reliability.md).
CASES = {"default retries": (0.1, 11, None), "AWS_MAX_ATTEMPTS=10": (0.3, 13, {"AWS_MAX_ATTEMPTS": "10"})}


def tasks(dns_server):
    """The module once directly (with DNS verification), then both roles, as a user's playbook would."""
    verify = {"verify_dns": True, "verify_timeout": 20, "nameservers": [dns_server]}
    return [
        {"name": "staging", "kopsible.kops.route53_subdomain": dict(name=STAGING, parent_zone=PARENT, **verify)},
        {
            "name": "delegation role",
            "ansible.builtin.include_role": {"name": "kopsible.kops.subdomain_delegation"},
            "vars": {
                "subdomain_delegation_name": SUBDOMAIN,
                "subdomain_delegation_parent_zone": PARENT,
                "subdomain_delegation_verify_dns": True,
                "subdomain_delegation_verify_timeout": 20,
                "subdomain_delegation_nameservers": [dns_server],
            },
        },
        {"name": "state store role", "ansible.builtin.include_role": {"name": "kopsible.kops.state_store"}, "vars": {"state_store_bucket": BUCKET}},
    ]


def end_state(emulator):
    """What the run leaves in the emulator, read directly (no proxy), free of random ids.

    ``{'zones': [(name, private, comment, [(record, type, ttl, values)])], 'buckets': {name:
    {'versioning', 'encryption', 'public_access_block', 'objects'}}}``
    """
    r53, s3 = emulator.client("route53"), emulator.client("s3")
    zones = []
    for zone in r53.list_hosted_zones()["HostedZones"]:
        records = [
            (r["Name"], r["Type"], r.get("TTL"), sorted(v["Value"].rstrip(".") for v in r.get("ResourceRecords", [])))
            for r in r53.list_resource_record_sets(HostedZoneId=zone["Id"])["ResourceRecordSets"]
        ]
        zones.append((zone["Name"], zone["Config"].get("PrivateZone"), zone["Config"].get("Comment"), sorted(records)))
    buckets = {}
    for bucket in s3.list_buckets()["Buckets"]:
        name = bucket["Name"]
        buckets[name] = {
            "versioning": s3.get_bucket_versioning(Bucket=name).get("Status"),
            "encryption": s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"],
            "public_access_block": s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"],
            "objects": s3.list_objects_v2(Bucket=name).get("KeyCount", 0),
        }
    return {"zones": sorted(zones), "buckets": buckets}


def module_results(run):
    """``changed`` of every task that ran a module (debug and set_fact excluded), in run order."""
    return [(name, result.get("changed")) for name, result in run.results if "name_servers" in result or "versioning" in result or "encryption" in result]


def verified(run):
    """``verified`` of the route53_subdomain results (DNS verification of each delegation)."""
    return [result.get("verified") for _, result in run.results if "name_servers" in result]


def converge(emulator, rate, seed, env=None, again=True):
    """Reset the emulator, create the parent zone, run the playbook through a proxy at ``rate``,
    then (with ``again``) once more; returns ``(first run, second run or None, proxy stats after
    the first, after both)``."""
    emulator.reset()
    emulator.client("route53").create_hosted_zone(Name=PARENT + ".", CallerReference="parent")
    dns = Route53DNS(emulator, port=free_udp_port()).start()
    try:
        with faulty(emulator, rate=rate, seed=seed) as proxied:
            server = "127.0.0.1:%d" % dns.port
            first = run_playbook(tasks(server), emulator=proxied, env=env)
            first_stats = proxied.proxy.stats()
            second = run_playbook(tasks(server), emulator=proxied, env=env) if again else None
            return first, second, first_stats, proxied.proxy.stats()
    finally:
        dns.stop()


@pytest.fixture(scope="module")
def baseline(emulator_session):
    """The end state and request count of the same playbook without faults (rate 0, counting only)."""
    first, _, stats, _ = converge(emulator_session, 0.0, 0, again=False)
    assert first.rc == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert stats["faults"] == 0
    print("baseline: %d requests %s" % (stats["requests"], stats["services"]))
    return {"state": end_state(emulator_session), "requests": stats["requests"], "first": module_results(first), "verified": verified(first)}


def test_baseline_creates_zones_delegations_and_bucket(baseline):
    state = baseline["state"]
    assert [z[0] for z in state["zones"]] == [PARENT + ".", SUBDOMAIN + ".", STAGING + "."]
    parent_records = state["zones"][0][3]
    delegated = {r[0]: r for r in parent_records if r[1] == "NS" and r[0] != PARENT + "."}
    for zone in state["zones"][1:]:
        child_ns = [r[3] for r in zone[3] if r[1] == "NS" and r[0] == zone[0]][0]
        assert delegated[zone[0]][2] == 300
        assert delegated[zone[0]][3] == child_ns
    assert state["buckets"][BUCKET]["versioning"] == "Enabled"
    assert state["buckets"][BUCKET]["encryption"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert all(state["buckets"][BUCKET]["public_access_block"].values())
    assert [changed for _, changed in baseline["first"]] == [True, True, True]
    assert baseline["verified"] == [True, True]


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_end_state_under_faults(emulator, baseline, case):
    rate, seed, env = CASES[case]
    first, second, first_stats, stats = converge(emulator, rate, seed, env)
    print(
        "%s rate %s seed %s: first run %d requests, %d faults %s; both runs %d requests, %d faults"
        % (case, rate, seed, first_stats["requests"], first_stats["faults"], first_stats["faults_by_kind"], stats["requests"], stats["faults"])
    )  # shown with pytest -rP; docs/reliability.md quotes it
    assert first.rc == 0, (first_stats, first.stdout[-4000:])
    assert end_state(emulator) == baseline["state"]
    assert [changed for _, changed in module_results(first)] == [True, True, True]
    assert verified(first) == [True, True]
    # Faults were really injected, of each kind, and every one was retried past.
    assert first_stats["faults"] > 0
    assert set(stats["faults_by_kind"]) == {"throttle", "server", "drop"}, stats["faults_by_kind"]
    assert first_stats["requests"] >= baseline["requests"] + first_stats["faults"]
    # A second run under faults converges to no change.
    assert second.rc == 0, second.stdout[-4000:]
    assert [changed for _, changed in module_results(second)] == [False, False, False]
    assert second.stats["localhost"]["changed"] == 0
    assert end_state(emulator) == baseline["state"]


def upsert_a(value):
    return {"Action": "UPSERT", "ResourceRecordSet": {"Name": "api.%s." % PARENT, "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": value}]}}


def test_route53_retries_catch_prior_request_not_complete(emulator, monkeypatch):
    """The module's Route53 client (route53.retry_decorator) retries PriorRequestNotComplete with
    jittered backoff; AWSRetry's default codes alone do not. botocore's own retries are off here
    (one attempt per call) so that every fault reaches AWSRetry."""
    import botocore.config
    import botocore.exceptions
    from ansible_collections.amazon.aws.plugins.module_utils import cloud
    from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry, RetryingBotoClientWrapper

    from ansible_collections.kopsible.kops.plugins.module_utils._route53 import zones as route53

    sleeps = []
    monkeypatch.setattr(cloud.time, "sleep", sleeps.append)  # record the backoff instead of waiting
    zone_id = emulator.client("route53").create_hosted_zone(Name=PARENT + ".", CallerReference="p")["HostedZone"]["Id"]
    # botocore's retries={'max_attempts': N} counts retries after the first attempt; total_max_attempts all attempts.
    no_botocore_retries = botocore.config.Config(retries={"total_max_attempts": 1})
    with faulty(emulator, rate=0.5, seed=3, mix={"busy": 1}, services=["route53"]) as proxied:
        client = RetryingBotoClientWrapper(proxied.client("route53", config=no_botocore_retries), route53.retry_decorator())
        for value in ("203.0.113.%d" % n for n in range(1, 9)):
            route53.change_records(client, zone_id, [upsert_a(value)], "retry test")
        stats = proxied.proxy.stats()
        plain = RetryingBotoClientWrapper(proxied.client("route53", config=no_botocore_retries), AWSRetry.jittered_backoff())
        proxied.proxy.configure(rate=1.0)
        before = len(sleeps)
        with pytest.raises(botocore.exceptions.ClientError, match="PriorRequestNotComplete"):
            route53.change_records(plain, zone_id, [upsert_a("203.0.113.99")], "not retried")
        assert len(sleeps) == before  # failed at once: not a code AWSRetry knows
    faults = stats["operations"]["route53:ChangeResourceRecordSets"]["faults_by_kind"]["busy"]
    assert faults > 0 and stats["operations"]["route53:ChangeResourceRecordSets"]["requests"] == 8 + faults
    assert len(sleeps) == faults and all(0 <= s <= 60 for s in sleeps)
    records = emulator.client("route53").list_resource_record_sets(HostedZoneId=zone_id)["ResourceRecordSets"]
    assert [r["ResourceRecords"] for r in records if r["Type"] == "A"] == [[{"Value": "203.0.113.8"}]]
