# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The etcd backups etcd-manager writes for a kOps cluster, read without kops or etcd-manager.

Where: each etcd cluster of the spec (``spec.etcdClusters[]``, ``main`` and ``events``) backs up to its
``backups.backupStore``; when unset kops sets it to ``<configBase>/backups/etcd/<etcd cluster name>``
(pkg/model/components/etcdmanager/options.go BuildOptions). How: etcd-manager names a backup
``<UTC time, RFC 3339>-<sequence>`` and writes ``<backupStore>/<name>/etcd.backup.gz`` (the gzipped etcd
snapshot) and ``<backupStore>/<name>/_etcd_backup.meta`` (JSON: ``etcdVersion``, ``timestamp`` in Unix
seconds, ``clusterSpec``); it lists backups as the folders holding a meta file, sorted by name, which is their
time order (etcd-manager pkg/backup/vfs.go AddBackup/ListBackups, pkg/backup/store.go MetaFilename and
DataFilename). It backs up every 15 minutes by default (``etcdClusters[].manager.backupInterval``) and before
cluster changes, and keeps hourly backups for a week and daily ones for a year (kops
docs/operations/etcd_backup_restore_encryption.md). ``kops delete cluster`` removes them with the rest of the
cluster's files (pkg/client/simple/vfsclientset/clientset.go DeleteAllClusterState).
"""

import datetime
import json
import os
import re

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # reported by the caller (amazon.aws' SDK check)

    class BotoCoreError(Exception):
        """Stand-in while botocore is missing."""

    class ClientError(Exception):
        """Stand-in while botocore is missing."""


from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError, split_store

META_FILENAME = "_etcd_backup.meta"
DATA_FILENAME = "etcd.backup.gz"
# etcd-manager's name: time.Now().UTC().Format(time.RFC3339) + "-" + sequence
_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))-(.+)$")


def backup_stores(cluster):
    """``[(etcd cluster name, backup store URL)]`` of a stored Cluster object (dict), in the spec's order:
    ``spec.etcdClusters[].backups.backupStore``, else kops' default ``<spec.configBase>/backups/etcd/<name>``
    (pkg/model/components/etcdmanager/options.go). An etcd cluster without a name is left out (kops' validation
    refuses it)."""
    spec = (cluster or {}).get("spec") or {}
    base = (spec.get("configBase") or (spec.get("configStore") or {}).get("base") or "").rstrip("/")
    found = []
    for etcd in spec.get("etcdClusters") or []:
        name = etcd.get("name")
        if not name:
            continue
        store = ((etcd.get("backups") or {}).get("backupStore") or "").rstrip("/")
        found.append((name, store or "%s/backups/etcd/%s" % (base, name)))
    return found


def backup_time(name):
    """The time in a backup's name (an aware UTC ``datetime``), or None when the name is not etcd-manager's
    ``<RFC 3339 time>-<sequence>``."""
    match = _NAME_RE.match(name or "")
    if not match:
        return None
    text = match.group(1).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)
    except ValueError:
        return None


def _from_keys(objects):
    """``[{'name', 'size'}]`` sorted by name from ``{relative key: size}`` under a backup store: a backup is a
    folder holding a meta file; ``size`` is its data file's size in bytes (None when it has none)."""
    backups = []
    for key in objects:
        folder, dummy, base = key.rpartition("/")
        if base == META_FILENAME and folder and "/" not in folder:
            backups.append({"name": folder, "size": objects.get(folder + "/" + DATA_FILENAME)})
    return sorted(backups, key=lambda b: b["name"])


def list_backups(client, store):
    """The backups of one backup store (``s3://`` through ``client``, a boto3 S3 client, or ``file://``):
    ``[{'name': str, 'size': int or None}]`` in etcd-manager's order (oldest first). A store that does not exist
    yet has none.

    :raises StoreError: another scheme (etcd-manager's gs://, swift://... stores are not read here), or S3 refused.
    """
    scheme, bucket, path = split_store(store)
    objects = {}
    if scheme == "s3":
        prefix = path + "/" if path else ""
        try:
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                objects.update({obj["Key"][len(prefix) :]: obj["Size"] for obj in page.get("Contents", [])})
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") == "NoSuchBucket":
                return []
            raise StoreError(store, "listing the etcd backups failed: %s %s" % (error.get("Code", ""), error.get("Message", ""))) from exc
        except BotoCoreError as exc:
            raise StoreError(store, "listing the etcd backups failed: %s" % exc) from exc
    elif scheme == "file":
        for root, dummy, files in os.walk(path):
            for name in files:
                full = os.path.join(root, name)
                objects[os.path.relpath(full, path).replace(os.sep, "/")] = os.path.getsize(full)
    else:
        raise StoreError(store, "etcd backups are read from s3:// and file:// stores only")
    return _from_keys(objects)


def read_meta(client, store, name):
    """The ``_etcd_backup.meta`` of backup ``name`` (dict), or None when it cannot be read or parsed."""
    scheme, bucket, path = split_store(store)
    key = "/".join(p for p in (path, name, META_FILENAME) if p)
    try:
        if scheme == "s3":
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        else:
            with open(os.path.join(path, name, META_FILENAME), "rb") as handle:
                body = handle.read()
        meta = json.loads(body)
    except (ClientError, BotoCoreError, OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _point(backup, now):
    """One backup as returned: ``name``, ``time`` (ISO 8601 UTC or None), ``age_seconds`` (int or None), ``size``."""
    when = backup_time(backup["name"])
    return {
        "name": backup["name"],
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else None,
        "age_seconds": int((now - when).total_seconds()) if when else None,
        "size": backup["size"],
    }


def summarize(etcd_name, store, backups, now, max_age_seconds=None, newest_meta=None):
    """The backups of one etcd cluster as ``kops_cluster_info`` returns them (dict): ``name``, ``backup_store``,
    ``count``, ``total_size`` (bytes of the data files), ``newest`` and ``oldest`` (:func:`_point`, plus
    ``etcd_version`` from the newest one's meta; None without backups), ``max_age_seconds`` and ``stale`` (True
    when there is no backup or the newest is older than ``max_age_seconds``; None without a limit).

    :param backups: :func:`list_backups` (oldest first).
    :param now: an aware ``datetime`` (UTC).
    """
    newest = _point(backups[-1], now) if backups else None
    if newest is not None:
        newest["etcd_version"] = (newest_meta or {}).get("etcdVersion")
    stale = None
    if max_age_seconds is not None:
        stale = newest is None or newest["age_seconds"] is None or newest["age_seconds"] > max_age_seconds
    return {
        "name": etcd_name,
        "backup_store": store,
        "count": len(backups),
        "total_size": sum(b["size"] or 0 for b in backups),
        "newest": newest,
        "oldest": _point(backups[0], now) if backups else None,
        "max_age_seconds": max_age_seconds,
        "stale": stale,
    }


def read_cluster_backups(client, cluster, max_age_seconds=None, now=None):
    """:func:`summarize` for every etcd cluster of a stored Cluster object (list of dict, the spec's order): one
    listing per backup store and one read of the newest backup's meta.

    :raises StoreError: as :func:`list_backups`.
    """
    now = now or datetime.datetime.now(datetime.timezone.utc)
    found = []
    for name, store in backup_stores(cluster):
        backups = list_backups(client, store)
        meta = read_meta(client, store, backups[-1]["name"]) if backups else None
        found.append(summarize(name, store, backups, now, max_age_seconds, meta))
    return found
