"""Issue 34 item 2: the etcd backups of a cluster (_state_store.etcd_backups), on the kops v1.36.2 guide cluster's spec
and etcd-manager's layout (pkg/backup/vfs.go AddBackup: ``<RFC 3339 UTC>-<sequence>/etcd.backup.gz`` and
``_etcd_backup.meta``), in a ``file://`` backup store written here the way etcd-manager writes one."""

import datetime
import json
import os

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._state_store import etcd_backups
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "kops-1.36.2")
NOW = datetime.datetime(2026, 12, 3, 12, 0, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture
def cluster():
    with open(os.path.join(FIXTURES, "get_cluster.json")) as handle:
        return json.load(handle)


def write_backup(store_dir, name, data=b"\x1f\x8b snapshot", meta=None):
    folder = os.path.join(store_dir, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "etcd.backup.gz"), "wb") as handle:
        handle.write(data)
    with open(os.path.join(folder, "_etcd_backup.meta"), "w") as handle:
        json.dump(meta or {"etcdVersion": "3.5.21", "timestamp": "1764763200", "clusterSpec": {"memberCount": 3, "etcdVersion": "3.5.21"}}, handle)


def test_backup_stores_default_to_the_config_base_as_kops_sets_them(cluster):
    # pkg/model/components/etcdmanager/options.go: BackupStore = join(configStore.base, "backups", "etcd", name)
    assert etcd_backups.backup_stores(cluster) == [
        ("main", "s3://kopsible-state/mycluster01.kopsclustertest.example.org/backups/etcd/main"),
        ("events", "s3://kopsible-state/mycluster01.kopsclustertest.example.org/backups/etcd/events"),
    ]
    cluster["spec"]["etcdClusters"][1]["backups"] = {"backupStore": "s3://other-bucket/etcd/events/"}
    assert etcd_backups.backup_stores(cluster)[1] == ("events", "s3://other-bucket/etcd/events")


@pytest.mark.parametrize(
    "name,expected",
    [
        ("2026-12-03T11:45:00Z-000001", datetime.datetime(2026, 12, 3, 11, 45, tzinfo=datetime.timezone.utc)),
        ("2026-12-03T12:45:00+01:00-7", datetime.datetime(2026, 12, 3, 11, 45, tzinfo=datetime.timezone.utc)),
        ("control", None),
        ("2026-12-03-000001", None),
    ],
)
def test_backup_time_is_the_rfc3339_time_in_the_name(name, expected):
    assert etcd_backups.backup_time(name) == expected


def test_file_store_listed_as_etcd_manager_lists_it(tmp_path):
    store = tmp_path / "main"
    write_backup(str(store), "2026-12-02T12:00:00Z-000001", data=b"a" * 10)
    write_backup(str(store), "2026-12-03T11:45:00Z-000096", data=b"b" * 25, meta={"etcdVersion": "3.5.21"})
    # etcd-manager's control folder and a folder without a meta file are no backups
    os.makedirs(str(store / "control"))
    (store / "control" / "etcd-cluster-spec").write_text("{}")
    os.makedirs(str(store / "2026-12-03T11:50:00Z-000097"))
    (store / "2026-12-03T11:50:00Z-000097" / "etcd.backup.gz").write_bytes(b"partial")
    url = "file://" + str(store)
    backups = etcd_backups.list_backups(None, url)
    assert backups == [{"name": "2026-12-02T12:00:00Z-000001", "size": 10}, {"name": "2026-12-03T11:45:00Z-000096", "size": 25}]
    summary = etcd_backups.summarize("main", url, backups, NOW, 3600, etcd_backups.read_meta(None, url, backups[-1]["name"]))
    assert summary == {
        "name": "main",
        "backup_store": url,
        "count": 2,
        "total_size": 35,
        "newest": {"name": "2026-12-03T11:45:00Z-000096", "time": "2026-12-03T11:45:00Z", "age_seconds": 900, "size": 25, "etcd_version": "3.5.21"},
        "oldest": {"name": "2026-12-02T12:00:00Z-000001", "time": "2026-12-02T12:00:00Z", "age_seconds": 86400, "size": 10},
        "max_age_seconds": 3600,
        "stale": False,
    }
    assert etcd_backups.summarize("main", url, backups, NOW, 899)["stale"] is True
    assert etcd_backups.summarize("main", url, backups, NOW)["stale"] is None


def test_no_backup_is_stale_under_any_limit(tmp_path):
    url = "file://" + str(tmp_path / "missing")
    assert etcd_backups.list_backups(None, url) == []
    summary = etcd_backups.summarize("events", url, [], NOW, 86400)
    assert (summary["count"], summary["newest"], summary["oldest"], summary["stale"]) == (0, None, None, True)


def test_read_cluster_backups_follows_the_spec(cluster, tmp_path):
    cluster["spec"]["configBase"] = "file://" + str(tmp_path / "cluster")
    write_backup(str(tmp_path / "cluster" / "backups" / "etcd" / "main"), "2026-12-03T11:30:00Z-000001")
    found = etcd_backups.read_cluster_backups(None, cluster, 24 * 3600, now=NOW)
    assert [(b["name"], b["count"], b["stale"]) for b in found] == [("main", 1, False), ("events", 0, True)]
    assert found[0]["newest"]["etcd_version"] == "3.5.21"


def test_other_backup_stores_are_refused_by_name():
    with pytest.raises(StoreError) as err:
        etcd_backups.list_backups(None, "gs://bucket/backups/etcd/main")
    assert "gs://bucket/backups/etcd/main" in str(err.value) and "s3:// and file://" in str(err.value)
