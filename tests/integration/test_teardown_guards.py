"""Issue 33 items 3, 6 and 7 as the user met them, on the guide's HA cluster applied with the real kops
(tests/conftest.py applied_cluster), everything read back from the emulator:

- item 3: ``state_store_state: absent`` with force on the bucket of a live cluster is refused in check mode and for
  real, naming the cluster, with nothing deleted; ``state_store_delete_with_clusters`` overrides;
- item 6: the user's teardown (teardown role, route53_subdomain absent, state_store absent) previews in check mode
  (writing nothing) instead of refusing over the records and the cluster the preview has not deleted, runs, and a
  second run reports changed=false instead of "bucket does not exist (create it first ...)";
- item 7: ``K1.Team-A.Example.org``-style names (another case of the existing cluster's name) are refused by every
  module before anything runs, naming the field, instead of addressing the existing cluster.
"""

import pytest

from conftest import BUCKET, CLUSTER, PARENT, SUBDOMAIN

pytestmark = pytest.mark.kops

REFUSE = "kopsible.kops.state_store : Refuse to delete a bucket that still holds a kops cluster"
WOULD = "kopsible.kops.state_store : What the state store task would change"
RECORDS_CHECK = "kopsible.kops.teardown : Only NS and SOA may remain (in check mode, once kops has deleted the records it lists)"


def include(role, **variables):
    return {"name": role, "ansible.builtin.include_role": {"name": "kopsible.kops." + role}, "vars": variables}


def delete_bucket(**variables):
    return include("state_store", state_store_bucket=BUCKET, state_store_state="absent", state_store_force_delete=True, **variables)


def teardown(world, **variables):
    """The user's teardown: the role, then the subdomain and the bucket, told what kops deletes first."""
    kops = dict(kops_state_store="s3://" + BUCKET, kops_binary=world.kops["kops_binary"], kops_env=world.kops["kops_env"])
    return [
        include("teardown", teardown_cluster=CLUSTER, teardown_dns_zone=SUBDOMAIN, **kops),
        {
            "name": "subdomain",
            "kopsible.kops.route53_subdomain": {
                "name": SUBDOMAIN,
                "parent_zone": PARENT,
                "state": "absent",
                "records_deleted_first": "{{ teardown_delete.deleted_resources | default([]) }}",
            },
        },
        delete_bucket(state_store_deleted_clusters=[CLUSTER], **variables),
    ]


def buckets(world):
    return [b["Name"] for b in world.emulator.client("s3").list_buckets()["Buckets"]]


def zone_names(world):
    return sorted(z["Name"] for z in world.emulator.client("route53").list_hosted_zones()["HostedZones"])


def unchanged(world, before):
    state, store, versions = before
    after = world.emulator.snapshot()
    assert after == state, world.emulator.snapshot_diff(state, after)
    assert world.store() == store and world.store_versions() == versions


def test_state_store_absent_refuses_while_the_bucket_holds_a_cluster(applied_cluster, cluster_play):
    world = applied_cluster
    assert "%s/config" % CLUSTER in world.store()  # the live cluster kops applied
    before = world.emulator.snapshot(), world.store(), world.store_versions()

    # check mode and for real: refused, naming the cluster and the override; nothing deleted
    for check in (True, False):
        run = cluster_play([delete_bucket()], check=check)
        assert run.rc != 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert run.results, run.stdout[-3000:] + run.stderr[-3000:]
        refused = run.result(REFUSE)
        assert refused["failed"] is True
        message = refused["msg"]
        assert message.startswith("state_store_state: bucket %s still holds the kops cluster %s;" % (BUCKET, CLUSTER)), message
        assert "Nothing was deleted" in message and "state_store_delete_with_clusters: true" in message
        assert "kopsible.kops.state_store : State store bucket %s" % BUCKET not in [n for n, _ in run.results]
        unchanged(world, before)
    assert buckets(world) == [BUCKET]

    # a cluster named as deleted by an earlier task counts as gone in check mode only: a real run counts the bucket
    preview = cluster_play([delete_bucket(state_store_deleted_clusters=[CLUSTER])], check=True)
    assert preview.rc == 0 and preview.result(WOULD)["msg"] == "would delete bucket " + BUCKET
    real = cluster_play([delete_bucket(state_store_deleted_clusters=[CLUSTER])])
    assert real.rc != 0 and CLUSTER in real.result(REFUSE)["msg"]
    unchanged(world, before)

    # the explicit override: previewed, then the bucket goes with every object version
    override = cluster_play([delete_bucket(state_store_delete_with_clusters=True)], check=True)
    assert override.rc == 0 and override.result(WOULD)["msg"] == "would delete bucket " + BUCKET
    unchanged(world, before)
    deleted = cluster_play([delete_bucket(state_store_delete_with_clusters=True)])
    assert deleted.rc == 0, [(n, r.get("msg")) for n, r in deleted.results if r.get("failed")]
    assert deleted.result("kopsible.kops.state_store : State store bucket %s" % BUCKET)["changed"] is True
    assert BUCKET not in buckets(world)


def test_teardown_previews_runs_and_is_a_no_op_the_second_time(applied_cluster, cluster_play):
    world = applied_cluster
    r53 = world.emulator.client("route53")
    cluster_records = sorted(r for r in world.records() if r[0].endswith(CLUSTER))
    assert ("api." + CLUSTER, "A") in cluster_records
    before = world.emulator.snapshot(), world.store(), world.store_versions()

    # without being told what kops deletes first, the subdomain's preview still refuses, naming the records
    bare = cluster_play([{"name": "subdomain", "kopsible.kops.route53_subdomain": {"name": SUBDOMAIN, "parent_zone": PARENT, "state": "absent"}}], check=True)
    assert bare.rc != 0 and "still holds records other than NS and SOA: api.%s A" % CLUSTER in bare.result("subdomain")["msg"]

    # 1. the preview: every step says what it would remove; nothing written
    preview = cluster_play(teardown(world), check=True)
    assert preview.rc == 0, [(n, r.get("msg")) for n, r in preview.results if r.get("failed")]
    unchanged(world, before)
    deleted = preview.result("kopsible.kops.teardown : Delete the cluster (kops delete cluster --yes)")
    assert deleted["changed"] is True
    kops_records = sorted((r["name"].rstrip("."), r["id"].split("/")[1]) for r in deleted["deleted_resources"] if r["type"] == "route53-record")
    assert kops_records == cluster_records
    clean = preview.result(RECORDS_CHECK)
    assert clean["msg"].startswith("%s would hold only its NS and SOA records once kops deleted " % SUBDOMAIN), clean["msg"]
    subdomain = preview.result("subdomain")
    assert subdomain["changed"] is True and subdomain["zone_id"]
    assert sorted((r["name"], r["type"]) for r in subdomain["deleted_first"]) == cluster_records
    assert subdomain["diff"]["after"] == {"zone_id": "", "delegation": {}}
    assert preview.result(WOULD)["msg"] == "would delete bucket " + BUCKET

    # a stray record the cluster did not make still fails the preview, as it would fail the real run
    zone_id = world.zone_id
    stray = {"Name": "stray." + SUBDOMAIN + ".", "Type": "TXT", "TTL": 60, "ResourceRecords": [{"Value": '"x"'}]}
    r53.change_resource_record_sets(HostedZoneId=zone_id, ChangeBatch={"Changes": [{"Action": "CREATE", "ResourceRecordSet": stray}]})
    strayed = cluster_play(teardown(world), check=True)
    assert strayed.rc != 0
    assert strayed.result(RECORDS_CHECK)["msg"].startswith(
        "%s would still hold, after kops deleted %d records of the cluster, ['TXT stray.%s.']" % (SUBDOMAIN, len(cluster_records), SUBDOMAIN)
    ), strayed.result(RECORDS_CHECK)["msg"]
    r53.change_resource_record_sets(HostedZoneId=zone_id, ChangeBatch={"Changes": [{"Action": "DELETE", "ResourceRecordSet": stray}]})

    # 2. for real: the cluster, its records, the subdomain and the bucket are gone; the parent zone stays
    real = cluster_play(teardown(world))
    assert real.rc == 0, [(n, r.get("msg")) for n, r in real.results if r.get("failed")]
    assert real.result("subdomain")["changed"] is True and real.result("subdomain")["deleted_first"] == []
    assert zone_names(world) == [PARENT + "."]
    assert BUCKET not in buckets(world)
    assert world.emulator.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []

    # 3. again: changed=false everywhere, no failure over the missing bucket
    again = cluster_play(teardown(world))
    assert again.rc == 0, [(n, r.get("msg")) for n, r in again.results if r.get("failed")]
    assert [n for n, r in again.results if r.get("changed")] == []
    gone = again.result("kopsible.kops.teardown : Delete the cluster (kops delete cluster --yes)")
    assert gone["msg"] == "cluster %s does not exist in s3://%s (bucket %s does not exist); nothing to delete" % (CLUSTER, BUCKET, BUCKET)
    assert gone["kops_invocations"] == []
    assert again.result("kopsible.kops.teardown : Nothing to delete (the cluster, or its state store's bucket, is already gone)")["msg"] == gone["msg"]
    # and its preview too
    assert cluster_play(teardown(world), check=True).rc == 0


@pytest.mark.parametrize("other_case", [CLUSTER.replace("mycluster01", "MyCluster01").replace("example", "Example"), CLUSTER + "."])
def test_a_cluster_name_in_another_case_is_refused_by_every_module(applied_cluster, cluster_play, other_case):
    world = applied_cluster
    lower = CLUSTER
    before = world.emulator.snapshot(), world.store(), world.store_versions()
    tasks = [
        ("name", {"kopsible.kops.kops_cluster": {"name": other_case, "node_count": 3, "apply": True}}),
        ("name", {"kopsible.kops.kops_cluster": {"name": other_case, "state": "absent"}}),
        ("name", {"kopsible.kops.kops_cluster_info": {"name": other_case}}),
        ("cluster", {"kopsible.kops.kops_instancegroup": {"cluster": other_case, "name": "nodes-us-east-1a", "min_size": 3, "max_size": 3}}),
        ("cluster", {"kopsible.kops.kops_instancegroup_info": {"cluster": other_case}}),
        ("cluster", {"kopsible.kops.rolling_update": {"cluster": other_case}}),
    ]
    plays = [dict(task, name="t%d" % i, ignore_errors=True) for i, (_field, task) in enumerate(tasks)]
    run = cluster_play(plays)
    for i, (field, _task) in enumerate(tasks):
        result = run.result("t%d" % i)
        assert result.get("failed") is True, (i, result)
        assert result["msg"].startswith("%s: cluster name %r must be written %r: " % (field, other_case, lower)), result["msg"]
        assert "IsDNS1123Subdomain" in result["msg"]
        assert not result.get("kops_invocations"), result.get("kops_invocations")
    unchanged(world, before)
    # the lowercase name still addresses the cluster
    info = cluster_play([{"name": "info", "kopsible.kops.kops_cluster_info": {"name": lower, "cloud": False}}]).result("info")
    assert [c["cluster_name"] for c in info["clusters"]] == [lower]
