# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read kOps state stores without the kops binary: ``s3://`` stores concurrently, ``file://`` stores from disk,
and the spec objects check mode's preview copies (the layout: :mod:`.layout`).

kops lists clusters by walking the whole tree and keeping every key that ends in ``/config``
(``ClusterVFS.listNames``). Cluster names are DNS names and hold no ``/``, so listing the store's
first level with ``Delimiter='/'`` and reading ``NAME/config`` finds the same clusters with one
LIST page per 1000 clusters instead of one per 1000 objects (a real cluster keeps dozens of keys and
secrets next to its config); a first-level folder without ``config`` is not a cluster.

Reads are concurrent: :func:`read_stores` runs every S3 request on one thread pool and schedules
follow-ups (a cluster's InstanceGroup reads after its ``instancegroup/`` listing) from the calling
thread as results arrive (a queue fed by the futures' callbacks), so no worker ever waits on
another: the wall time is about the number of requests times their latency, divided by the pool
size, until the client's or the server's CPU is the limit. The boto3 client is shared by the workers
(boto3 clients are thread-safe; give it ``max_pool_connections`` >= the pool size, :func:`.s3.retry_config`).
"""

import os
import queue
import shutil
from concurrent.futures import ThreadPoolExecutor

try:
    import yaml
except ImportError:  # reported by every kops module through missing_required_lib (kops_common.state_store_of)
    yaml = None

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # reported by the caller (amazon.aws' SDK check)

    class BotoCoreError(Exception):
        """Stand-in while botocore is missing (two classes: each except clause below catches its own)."""

    class ClientError(Exception):
        """Stand-in while botocore is missing."""


from ansible_collections.kopsible.kops.plugins.module_utils._kops.binary_version import VERSION_FILE
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import CLUSTER_CONFIG, INSTANCE_GROUP_DIR, is_spec_object
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import is_missing_key
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError, normalize_store_url, parse_store_url, split_store

# libyaml's loader when PyYAML has it (faster), else the pure-Python one.
_Loader = getattr(yaml, "CSafeLoader", None) or getattr(yaml, "SafeLoader", None)

DEFAULT_WORKERS = 16


def _s3_error(store, exc, what):
    """A :class:`StoreError` for a failed S3 call, with AWS' error code when there is one."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        bucket = parse_store_url(store)[0]
        if code == "NoSuchBucket":
            return StoreError(store, "bucket %s does not exist" % bucket)
        if code in ("AccessDenied", "403", "AllAccessDisabled", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return StoreError(store, "access denied while %s (%s: %s)" % (what, code, error.get("Message", "")))
        return StoreError(store, "%s failed: %s %s" % (what, code, error.get("Message", "")))
    return StoreError(store, "%s failed: %s" % (what, exc))


def list_clusters(client, store):
    """Names of the clusters in ``store`` (sorted list of str): the first-level folders of the store.

    Folders without a ``config`` object are dropped later by :func:`read_stores` (kops ignores them too).
    One ListObjectsV2 page per 1000 clusters.

    :param client: a boto3 S3 client.
    :raises StoreError: missing bucket, access denied, or any other S3/connection error.
    """
    bucket, prefix = parse_store_url(store)
    names = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(prefix) :].rstrip("/")
                if name:
                    names.append(name)
    except (BotoCoreError, ClientError) as exc:
        raise _s3_error(store, exc, "listing clusters") from exc
    return sorted(names)


def _get_bytes(client, store, key):
    """The bytes of the object ``key`` of ``store``'s bucket, or None when it does not exist. :raises StoreError: it
    could not be read."""
    bucket = parse_store_url(store)[0]
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if is_missing_key(exc):
            return None
        raise _s3_error(store, exc, "reading %s" % key) from exc
    except BotoCoreError as exc:
        raise _s3_error(store, exc, "reading %s" % key) from exc


def _get_yaml(client, store, key):
    """The YAML object at ``key`` (dict), or None when the key does not exist."""
    body = _get_bytes(client, store, key)
    if body is None:
        return None
    try:
        data = yaml.load(body, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise StoreError(store, "%s is not valid YAML: %s" % (key, exc)) from exc
    if not isinstance(data, dict):
        raise StoreError(store, "%s is not a kops object (a YAML mapping)" % key)
    return data


def _list_keys(client, store, prefix):
    """Keys directly under ``prefix`` (list of str, sorted)."""
    bucket = parse_store_url(store)[0]
    keys = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
            keys.extend(obj["Key"] for obj in page.get("Contents", []) if obj["Key"] != prefix)
    except (BotoCoreError, ClientError) as exc:
        raise _s3_error(store, exc, "listing %s" % prefix) from exc
    return sorted(keys)


def read_text(client, store, key):
    """The text (str, stripped) of the object ``key`` of ``store``'s bucket, or None when it does not exist, e.g. a
    cluster's ``kops-version.txt`` (_kops.binary_version). :raises StoreError: it could not be read."""
    body = _get_bytes(client, store, key)
    return None if body is None else body.decode("utf-8", "replace").strip()


def read_ssh_public_keys(client, cluster):
    """The SSH public keys (list of str, stripped) stored for the Cluster object ``cluster`` (dict), as kops' ``get
    sshpublickeys`` lists them: every object under ``<keypairs store>/ssh/public/admin/``, where the keypairs store is
    ``spec.configStore.keypairs`` or ``<configBase>/pki`` (pkg/client/simple/vfsclientset/clientset.go ``pkiPath``,
    upup/pkg/fi/vfs_castore.go ``FindSSHPublicKeys``). One listing and one read per key with ``client`` (boto3 S3);
    None when that store is not on S3 (the caller asks kops). :raises StoreError: the store could not be read."""
    spec = cluster.get("spec") or {}
    base = (spec.get("configStore") or {}).get("keypairs") or ((spec.get("configBase") or "").rstrip("/") + "/pki")
    if not base.startswith("s3://"):
        return None
    bucket, prefix = parse_store_url(base)
    folder = prefix + "ssh/public/admin/"
    keys = []
    for key in _list_keys(client, base, folder):
        try:
            keys.append(client.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8", "replace").strip())
        except (BotoCoreError, ClientError) as exc:
            raise _s3_error(base, exc, "reading %s" % key) from exc
    return keys


def read_cluster(client, store, name):
    """One cluster read sequentially: ``{'store', 'name', 'cluster', 'instance_groups', 'kops_version'}`` or None.

    ``cluster`` is the Cluster object (dict); ``instance_groups`` the InstanceGroup objects (list of
    dict, sorted by name). None when ``NAME/config`` does not exist. For many clusters use
    :func:`read_stores`, which does the same reads concurrently.

    :raises StoreError: as :func:`list_clusters`, or an object that is not YAML.
    """
    results = read_stores(client, [store], names={normalize_store_url(store): [name]}, max_workers=4)
    return results[0] if results else None


def read_stores(client, stores, max_workers=DEFAULT_WORKERS, names=None):
    """Every cluster of every store, read concurrently. Returns a list of dicts sorted by (store, name):
    ``{'store': normalized URL, 'name': str, 'cluster': dict, 'instance_groups': [dict, ...], 'kops_version': str or
    None}`` (``kops_version``: the text of ``NAME/kops-version.txt``, the kops version that last applied the cluster,
    None when it was never applied; _kops.binary_version).

    Requests per store: one ListObjectsV2 page per 1000 clusters; per cluster one GetObject of
    ``config``, one of ``kops-version.txt`` and one ListObjectsV2 of ``instancegroup/`` (in parallel) and one
    GetObject per InstanceGroup. All run on a pool of ``max_workers`` threads.

    :param client: a boto3 S3 client shared by the workers.
    :param stores: list of store URLs (``s3://BUCKET[/PREFIX]``); duplicates are read once.
    :param names: optional ``{normalized store: [cluster names]}`` to read instead of listing.
    :raises StoreError: the first store that cannot be read (the message names it).
    """
    stores = list(dict.fromkeys(normalize_store_url(s) for s in stores))
    found = {}  # (store, name) -> record
    done = queue.Queue()  # finished futures with their (kind, store, name), in completion order
    pool = ThreadPoolExecutor(max_workers=max(1, int(max_workers)))
    outstanding = [0]
    try:

        def submit(kind, store, name, func, *args):
            outstanding[0] += 1
            pool.submit(func, *args).add_done_callback(lambda future: done.put((future, kind, store, name)))

        def start_cluster(store, name):
            prefix = parse_store_url(store)[1] + name + "/"
            found[(store, name)] = {"store": store, "name": name, "cluster": None, "instance_groups": [], "kops_version": None}
            submit("config", store, name, _get_yaml, client, store, prefix + CLUSTER_CONFIG)
            submit("version", store, name, read_text, client, store, prefix + VERSION_FILE)
            submit("igs", store, name, _list_keys, client, store, prefix + INSTANCE_GROUP_DIR)

        for store in stores:
            if names and store in names:
                for name in names[store]:
                    start_cluster(store, name)
            else:
                submit("list", store, None, list_clusters, client, store)
        while outstanding[0]:
            future, kind, store, name = done.get()
            outstanding[0] -= 1
            value = future.result()  # re-raises StoreError from the worker
            if kind == "list":
                for cluster_name in value:
                    start_cluster(store, cluster_name)
            elif kind == "config":
                found[(store, name)]["cluster"] = value
            elif kind == "version":
                found[(store, name)]["kops_version"] = value
            elif kind == "igs":
                for key in value:
                    submit("ig", store, name, _get_yaml, client, store, key)
            elif value is not None:
                found[(store, name)]["instance_groups"].append(value)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    records = []
    for key in sorted(found):
        record = found[key]
        if record["cluster"] is None:
            continue  # a folder without config: not a cluster (kops ignores it too)
        record["instance_groups"].sort(key=lambda ig: (ig.get("metadata") or {}).get("name") or "")
        records.append(record)
    return records


def read_file_store(store, names=None):
    """Clusters of a ``file://PATH`` state store (the same layout on disk, util/pkg/vfs/fs.go), as
    :func:`read_stores` returns them for S3: a list of ``{'store', 'name', 'cluster', 'instance_groups'}``
    sorted by name. ``names``: only these clusters (list of str), else every first-level folder holding a
    ``config`` file.

    :raises ValueError: an object that is not a YAML mapping (the message names the file).
    """
    root = store[len("file://") :].rstrip("/") or "/"
    if names is None:
        names = sorted(n for n in os.listdir(root) if os.path.isfile(os.path.join(root, n, CLUSTER_CONFIG))) if os.path.isdir(root) else []
    records = []
    for name in names:
        cluster = _read_yaml_file(os.path.join(root, name, CLUSTER_CONFIG))
        if cluster is None:
            continue
        folder = os.path.join(root, name, INSTANCE_GROUP_DIR)
        groups = [_read_yaml_file(os.path.join(folder, f)) for f in sorted(os.listdir(folder))] if os.path.isdir(folder) else []
        version_path = os.path.join(root, name, VERSION_FILE)
        version = None
        if os.path.isfile(version_path):
            with open(version_path, encoding="utf-8", errors="replace") as handle:
                version = handle.read().strip()
        records.append(
            {"store": store.rstrip("/"), "name": name, "cluster": cluster, "instance_groups": [g for g in groups if g is not None], "kops_version": version}
        )
    return records


def _read_yaml_file(path):
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        data = yaml.safe_load(handle.read())
    if not isinstance(data, dict):
        raise ValueError("%s is not a kops object (a YAML mapping)" % path)
    return data


def copy_cluster_specs(s3_client, state_store, cluster, target):
    """Copy the cluster's spec objects (``config``, ``instancegroup/*``; nothing else) into the local folder
    ``target`` (str), keeping their relative paths. One ListObjectsV2 per 1000 objects and one GetObject per spec
    object for an ``s3://`` store; a file copy for a ``file://`` store. Raises botocore's errors as they come."""
    scheme, bucket, prefix = split_store(state_store)
    if scheme == "file":
        source = os.path.join(prefix, cluster)
        for root, dummy, files in os.walk(source):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), source)
                if is_spec_object(rel.replace(os.sep, "/")):
                    os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
                    shutil.copy(os.path.join(root, name), os.path.join(target, rel))
        return
    base = "%s/%s/" % (prefix, cluster) if prefix else "%s/" % cluster
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=base):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(base) :]
            if is_spec_object(rel):
                path = os.path.join(target, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(s3_client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())
