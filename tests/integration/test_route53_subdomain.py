"""route53_subdomain through real ansible-playbook runs against the emulator, read back with boto3."""

import pytest

CHILD = "kopsclustertest.example.org"


def task(label="sub", **options):
    """A route53_subdomain task called ``label`` (the module's own ``name`` defaults to CHILD)."""
    options.setdefault("name", CHILD)
    return {"name": label, "kopsible.kops.route53_subdomain": options, "ignore_errors": True}


def make_zone(emulator, name, ref=None):
    r53 = emulator.client("route53")
    zone = r53.create_hosted_zone(Name=name + ".", CallerReference=ref or name)
    return zone["HostedZone"]["Id"].split("/")[-1]


def zones_named(emulator, name):
    r53 = emulator.client("route53")
    return [z for z in r53.list_hosted_zones()["HostedZones"] if z["Name"].rstrip(".") == name]


def ns_record(emulator, zone_id, name):
    r53 = emulator.client("route53")
    for rr in r53.list_resource_record_sets(HostedZoneId=zone_id)["ResourceRecordSets"]:
        if rr["Name"].rstrip(".") == name and rr["Type"] == "NS":
            return rr
    return None


def child_ns(emulator, zone_id):
    return sorted(r["Value"].rstrip(".") for r in ns_record(emulator, zone_id, CHILD)["ResourceRecords"])


def test_create_then_rerun_is_unchanged(emulator, play):
    parent_id = make_zone(emulator, "example.org")
    run = play([task(parent_zone="example.org")], diff=True)
    first = run.result("sub")
    assert not first.get("failed"), first
    assert first["changed"] is True
    zones = zones_named(emulator, CHILD)
    assert len(zones) == 1
    zone_id = zones[0]["Id"].split("/")[-1]
    assert first["zone_id"] == zone_id
    # The parent's NS record holds exactly the child zone's name servers, TTL 300.
    record = ns_record(emulator, parent_id, CHILD)
    assert record["TTL"] == 300
    assert sorted(r["Value"].rstrip(".") for r in record["ResourceRecords"]) == child_ns(emulator, zone_id)
    assert first["name_servers"] == child_ns(emulator, zone_id)
    assert first["diff"]["before"]["delegation"] == {}
    assert first["diff"]["after"]["delegation"]["values"] == child_ns(emulator, zone_id)

    state = emulator.snapshot()
    second = play([task(parent_zone="example.org")]).result("sub")
    assert second["changed"] is False
    assert second["zone_id"] == zone_id
    after_snapshot = emulator.snapshot()
    assert after_snapshot == state, emulator.snapshot_diff(state, after_snapshot)
    assert len(zones_named(emulator, CHILD)) == 1


def test_check_mode_on_new_name_writes_nothing(emulator, play):
    make_zone(emulator, "example.org")
    before = emulator.snapshot()
    result = play([task()], check=True, diff=True).result("sub")
    assert result["changed"] is True
    assert result["zone_id"] == ""
    assert result["parent_zone"] == "example.org"
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)
    assert zones_named(emulator, CHILD) == []


def test_wrong_parent_record_is_converged(emulator, play):
    parent_id = make_zone(emulator, "example.org")
    assert not play([task()]).result("sub").get("failed")
    r53 = emulator.client("route53")
    r53.change_resource_record_sets(
        HostedZoneId=parent_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "UPSERT",
                    "ResourceRecordSet": {"Name": CHILD + ".", "Type": "NS", "TTL": 60, "ResourceRecords": [{"Value": "ns1.wrong.example.net."}]},
                }
            ]
        },
    )
    result = play([task()], diff=True).result("sub")
    assert result["changed"] is True
    assert result["diff"]["before"]["delegation"]["values"] == ["ns1.wrong.example.net"]
    zone_id = zones_named(emulator, CHILD)[0]["Id"].split("/")[-1]
    record = ns_record(emulator, parent_id, CHILD)
    assert record["TTL"] == 300
    assert sorted(r["Value"].rstrip(".") for r in record["ResourceRecords"]) == child_ns(emulator, zone_id)


def test_ttl_change_is_converged(emulator, play):
    parent_id = make_zone(emulator, "example.org")
    play([task()])
    result = play([task(ttl=3600)]).result("sub")
    assert result["changed"] is True
    assert ns_record(emulator, parent_id, CHILD)["TTL"] == 3600


def test_longest_enclosing_zone_is_chosen(emulator, play):
    make_zone(emulator, "example.org")
    inner = make_zone(emulator, "clusters.example.org")
    result = play([task(name="dev.clusters.example.org")]).result("sub")
    assert result["parent_zone_id"] == inner
    assert ns_record(emulator, inner, "dev.clusters.example.org") is not None


def test_parent_zone_id_picks_among_duplicates(emulator, play):
    first = make_zone(emulator, "example.org", "a")
    second = make_zone(emulator, "example.org", "b")
    run = play([task("guess"), task("by_id", parent_zone_id=second)])
    guess = run.result("guess")
    assert guess["failed"] and "multiple hosted zones" in guess["msg"] and first in guess["msg"] and second in guess["msg"]
    assert run.result("by_id")["parent_zone_id"] == second
    assert ns_record(emulator, second, CHILD) is not None
    assert ns_record(emulator, first, CHILD) is None


def test_uppercase_and_trailing_dot_are_normalised(emulator, play):
    make_zone(emulator, "example.org")
    result = play([task(name="KopsClusterTest.Example.ORG.")]).result("sub")
    assert result["name"] == CHILD
    assert len(zones_named(emulator, CHILD)) == 1


@pytest.mark.parametrize(
    "options, message",
    [
        ({"name": "a..example.org"}, "empty label"),
        ({"name": "x" * 64 + ".example.org"}, "limit is 63"),
        ({"name": ".".join(["abcdefghi"] * 26) + ".example.org"}, "limit is 253"),
        ({"name": "bad_label.example.org"}, "may hold only"),
        ({"name": ""}, "a DNS name is required"),
        ({"name": "kopsclustertest.example.com", "parent_zone": "example.org"}, "not a subdomain of the parent zone example.org"),
        ({"name": "kopsclustertest.other.net"}, "No public hosted zone encloses kopsclustertest.other.net; create one first (e.g. other.net)"),
        ({"parent_zone": "missing.org"}, "no public hosted zone named missing.org"),
        ({"parent_zone_id": "ZNOSUCHZONE"}, "no hosted zone has the id ZNOSUCHZONE"),
        ({"ttl": -1}, "ttl: must be between"),
        ({"private": True}, "vpc_id: required"),
        ({"verify_dns": True, "nameservers": ["127.0.0.1:notaport"]}, "nameservers: '127.0.0.1:notaport' must be IP, IP:PORT or [IPv6]:PORT"),
        ({"parent_zone": "example.org", "parent_zone_id": "Z1"}, "mutually exclusive"),
        ({"state": "gone"}, "value of state must be one of: present, absent, got: gone"),
    ],
)
def test_bad_input_fails_and_writes_nothing(emulator, sampled_run, options, message):
    make_zone(emulator, "example.org")
    before = emulator.snapshot()
    result = sampled_run(task(**options))
    assert result.get("failed") is True
    assert message in result["msg"], result["msg"]
    assert "Traceback" not in str(result)
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)


def test_duplicate_child_zones_refuse_to_guess(emulator, play):
    make_zone(emulator, "example.org")
    one = make_zone(emulator, CHILD, "c1")
    two = make_zone(emulator, CHILD, "c2")
    before = emulator.snapshot()
    run = play([task("guess"), task("pick", zone_id=two)])
    guess = run.result("guess")
    assert guess["failed"] and one in guess["msg"] and two in guess["msg"] and "instead of guessing" in guess["msg"]
    assert emulator.snapshot() != before  # the second task wrote the delegation for the chosen zone
    assert run.result("pick")["zone_id"] == two


def test_absent_removes_delegation_and_zone_then_is_unchanged(emulator, play):
    parent_id = make_zone(emulator, "example.org")
    play([task()])
    state = emulator.snapshot()
    check = play([task(state="absent")], check=True).result("sub")
    after_snapshot = emulator.snapshot()
    assert check["changed"] is True and after_snapshot == state, emulator.snapshot_diff(state, after_snapshot)
    result = play([task(state="absent")]).result("sub")
    assert result["changed"] is True
    assert zones_named(emulator, CHILD) == []
    assert ns_record(emulator, parent_id, CHILD) is None
    again = play([task(state="absent")]).result("sub")
    assert again["changed"] is False and not again.get("failed")


def test_absent_with_records_fails_unless_force(emulator, play):
    make_zone(emulator, "example.org")
    zone_id = play([task()]).result("sub")["zone_id"]
    emulator.client("route53").change_resource_record_sets(
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {"Action": "CREATE", "ResourceRecordSet": {"Name": "api.%s." % CHILD, "Type": "A", "TTL": 10, "ResourceRecords": [{"Value": "203.0.113.123"}]}}
            ]
        },
    )
    before = emulator.snapshot()
    refused = play([task(state="absent")]).result("sub")
    assert refused["failed"] and "api.%s A" % CHILD in refused["msg"]
    assert refused["records"][0]["values"] == ["203.0.113.123"]
    after_snapshot = emulator.snapshot()
    assert after_snapshot == before, emulator.snapshot_diff(before, after_snapshot)
    forced = play([task(state="absent", force=True)]).result("sub")
    assert forced["changed"] and forced["deleted_records"][0]["name"] == "api." + CHILD
    assert zones_named(emulator, CHILD) == []


def test_private_zone_with_vpc(emulator, play):
    vpc = emulator.client("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    make_zone(emulator, "example.org")
    result = play([task(private=True, vpc_id=vpc, vpc_region="us-east-1")]).result("sub")
    assert result["changed"] and result["private"] is True
    zone = emulator.client("route53").get_hosted_zone(Id=result["zone_id"])
    assert zone["HostedZone"]["Config"]["PrivateZone"] is True
    assert zone["VPCs"][0]["VPCId"] == vpc
    assert result["delegation"] == {}
    assert play([task(private=True, vpc_id=vpc)]).result("sub")["changed"] is False


def test_lost_create_hosted_zone_response_ends_with_one_zone(emulator):
    """The first CreateHostedZone response is lost on the way back (the emulator created the zone);
    botocore retries with the same CallerReference, Route53 answers HostedZoneAlreadyExists, and the
    module adopts the zone the first attempt made: one zone, delegated, no failure; a re-run is unchanged."""
    from harness.faults import faulty
    from harness.playbook import run_playbook

    parent_id = make_zone(emulator, "example.org")
    with faulty(emulator, rate=1.0, mix={"lost": 1}, operations=["route53:CreateHostedZone"], max_faults=1) as proxied:
        result = run_playbook([task(parent_zone="example.org")], emulator=proxied).result("sub")
        stats = proxied.proxy.stats()["operations"]["route53:CreateHostedZone"]
    assert stats == {"requests": 2, "faults": 1, "faults_by_kind": {"lost": 1}, "clients": {"botocore": 2}}  # the lost attempt and its retry
    assert not result.get("failed"), result
    assert result["changed"] is True
    zones = zones_named(emulator, CHILD)
    assert len(zones) == 1
    zone_id = zones[0]["Id"].split("/")[-1]
    assert zones[0]["CallerReference"].startswith("kopsible-")
    assert result["zone_id"] == zone_id and result["name_servers"] == child_ns(emulator, zone_id)
    record = ns_record(emulator, parent_id, CHILD)
    assert sorted(r["Value"].rstrip(".") for r in record["ResourceRecords"]) == child_ns(emulator, zone_id)
    again = run_playbook([task(parent_zone="example.org")], emulator=emulator).result("sub")
    assert again["changed"] is False and again["zone_id"] == zone_id


@pytest.mark.parametrize("check", [True, False], ids=["check mode", "real run"])
def test_cname_at_the_subdomain_in_the_parent_fails_before_anything_is_created(emulator, play, check):
    """Issue 16: a CNAME k8s.example.com -> legacy.example.net in example.com leaves no room for an NS
    delegation of k8s.example.com; the module fails naming the CNAME, and creates no zone."""
    parent_id = make_zone(emulator, "example.com")
    emulator.client("route53").change_resource_record_sets(
        HostedZoneId=parent_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "CREATE",
                    "ResourceRecordSet": {"Name": "k8s.example.com.", "Type": "CNAME", "TTL": 300, "ResourceRecords": [{"Value": "legacy.example.net"}]},
                }
            ]
        },
    )
    before = emulator.snapshot()
    result = play([task(name="k8s.example.com")], check=check).result("sub")
    assert result.get("failed") is True
    assert "CNAME record k8s.example.com -> legacy.example.net" in result["msg"], result["msg"]
    assert "example.com" in result["msg"] and "nothing was created" in result["msg"]
    assert result["conflicting_record"]["values"] == ["legacy.example.net"]
    assert zones_named(emulator, "k8s.example.com") == []
    assert emulator.snapshot() == before


@pytest.fixture
def pending_route53(emulator):
    """The emulator with Route53 changes PENDING for 6 s after submission (an emulator test mode), then INSYNC: three
    polls of the module's 2 s."""
    emulator.route53_pending(6)
    yield emulator
    emulator.route53_pending(0)


def test_wait_polls_until_changes_are_insync(pending_route53, play):
    """With wait (the default) the module returns only once Route53 says INSYNC: the zone's and the delegation's
    changes stay PENDING for 6 s, so the run takes at least that long, and the change ids it returns are INSYNC
    by then; with wait_timeout below that, it fails naming the change; with wait: false it returns at once."""
    import time

    emulator = pending_route53
    make_zone(emulator, "example.org")
    r53 = emulator.client("route53")
    start = time.monotonic()
    result = play([task(parent_zone="example.org")]).result("sub")
    assert not result.get("failed"), result.get("msg")
    assert len(result["change_ids"]) == 2  # the zone's creation and the delegation's UPSERT
    assert result["changes"] == result["change_ids"]  # the deprecated name, kept until 1.0.0
    # every change the module waited for is INSYNC now; the module did not return before the 6 s had passed
    assert [r53.get_change(Id=c)["ChangeInfo"]["Status"] for c in result["change_ids"]] == ["INSYNC", "INSYNC"]
    assert time.monotonic() - start >= 6

    short = play([task(state="absent", wait_timeout=1)]).result("sub")
    assert short.get("failed") and "is not INSYNC after 1s" in short["msg"], short.get("msg")
    assert zones_named(emulator, CHILD) == []  # the deletion itself was made; only the wait gave up

    again = play([task(parent_zone="example.org", wait=False)]).result("sub")
    assert not again.get("failed"), again.get("msg")
    assert [r53.get_change(Id=c)["ChangeInfo"]["Status"] for c in again["change_ids"]] == ["PENDING", "PENDING"]


def group_play(tmp_path, emulator, allowed):
    """A playbook whose one module_defaults block for group/kopsible.kops.kops carries the AWS options and every
    shared kops option (as sandbox-vars.yml's ``kopsible_defaults`` does), then delegates CHILD."""
    import yaml

    defaults = {
        "endpoint_url": emulator.url,
        "region": "us-east-1",
        "access_key": emulator.aws_env()["AWS_ACCESS_KEY_ID"],
        "secret_key": emulator.aws_env()["AWS_SECRET_ACCESS_KEY"],
        "state_store": "s3://kopsible-state",
        "kops_binary": "/nonexistent/kops",
        "kops_env": {"KOPS_FEATURE_FLAGS": "-ImageDigest"},
        "kops_timeout": 60,
        "lock_timeout": 5,
        "break_lock": False,
        "allowed_account_ids": [allowed],
    }
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "module_defaults": {"group/kopsible.kops.kops": defaults},
            "tasks": [dict(task(parent_zone="example.org"), ignore_errors=False)],
        }
    ]
    path = tmp_path / "group.yml"
    path.write_text(yaml.safe_dump(play))
    return str(path)


def test_module_defaults_group_carries_the_kops_options(emulator, tmp_path):
    """route53_subdomain accepts the kops modules' shared options from the group's module_defaults (ignored: it runs
    no kops, the kops binary named does not exist) and honours allowed_account_ids before writing anything."""
    from harness.playbook import run_playbook

    make_zone(emulator, "example.org")
    account = emulator.client("sts").get_caller_identity()["Account"]
    refused = run_playbook(playbook=group_play(tmp_path, emulator, "111111111111"), emulator=emulator)
    assert refused.rc != 0
    message = refused.result("sub")["msg"]
    assert message == ("allowed_account_ids: the credentials belong to account %s, which is not one of 111111111111; nothing was changed" % account)
    assert zones_named(emulator, CHILD) == []

    run = run_playbook(playbook=group_play(tmp_path, emulator, account), emulator=emulator)
    assert run.rc == 0, run.stdout[-2000:]
    result = run.result("sub")
    assert result["changed"] is True and not result.get("warnings")
    zone = zones_named(emulator, CHILD)
    assert len(zone) == 1 and result["zone_id"] == zone[0]["Id"].split("/")[-1]
