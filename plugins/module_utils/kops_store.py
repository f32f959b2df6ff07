# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read kOps state stores straight from S3, concurrently, without the kops binary.

The layout is kops' own (k8s.io/kops v1.36.2, pkg/client/simple/vfsclientset and
pkg/apis/kops/registry): under a store ``s3://BUCKET[/PREFIX]`` each cluster ``NAME`` keeps

- ``PREFIX/NAME/config``: the Cluster object (YAML, ``apiVersion: kops.k8s.io/v1alpha2``);
- ``PREFIX/NAME/instancegroup/IG``: one InstanceGroup object (YAML) per group.

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
(boto3 clients are thread-safe; give it ``max_pool_connections`` >= the pool size).

Pure helpers (:func:`parse_store_url`, :func:`summarize_cluster`, :func:`region_of`,
:func:`kubernetes_minor`) take plain data so unit tests need no AWS.
"""

import queue
import re
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


# libyaml's loader when PyYAML has it (faster), else the pure-Python one.
_Loader = getattr(yaml, "CSafeLoader", None) or getattr(yaml, "SafeLoader", None)

CLUSTER_CONFIG = "config"
INSTANCE_GROUP_DIR = "instancegroup/"
CONTROL_PLANE_ROLES = ("ControlPlane", "Master")
DEFAULT_WORKERS = 16
MISSING_KEY_CODES = ("NoSuchKey", "404", "NotFound")


class StoreError(Exception):
    """A state store could not be read. ``store`` is its URL (str); the message names it and the cause."""

    def __init__(self, store, message):
        super(StoreError, self).__init__("state store %s: %s" % (store, message))
        self.store = store


def parse_store_url(url):
    """Split ``s3://BUCKET[/PREFIX]`` into ``(bucket, prefix)``; ``prefix`` is ``''`` or ends with ``/``.

    :raises StoreError: not an ``s3://`` URL or no bucket name.
    """
    text = (url or "").strip()
    scheme, sep, rest = text.partition("://")
    bucket, dummy, prefix = rest.partition("/")
    if not sep or scheme.lower() != "s3" or not bucket:
        raise StoreError(url, "must be an s3://BUCKET[/PREFIX] URL")
    prefix = prefix.strip("/")
    return bucket, prefix + "/" if prefix else ""


def normalize_store_url(url):
    """The canonical form of a store URL (str): ``s3://BUCKET`` or ``s3://BUCKET/PREFIX``, no trailing slash."""
    bucket, prefix = parse_store_url(url)
    return "s3://%s/%s" % (bucket, prefix.rstrip("/")) if prefix else "s3://" + bucket


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


def _get_yaml(client, store, key):
    """The YAML object at ``key`` (dict), or None when the key does not exist."""
    bucket = parse_store_url(store)[0]
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in MISSING_KEY_CODES:
            return None
        raise _s3_error(store, exc, "reading %s" % key) from exc
    except BotoCoreError as exc:
        raise _s3_error(store, exc, "reading %s" % key) from exc
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


def read_cluster(client, store, name):
    """One cluster read sequentially: ``{'store', 'name', 'cluster', 'instance_groups'}`` or None.

    ``cluster`` is the Cluster object (dict); ``instance_groups`` the InstanceGroup objects (list of
    dict, sorted by name). None when ``NAME/config`` does not exist. For many clusters use
    :func:`read_stores`, which does the same reads concurrently.

    :raises StoreError: as :func:`list_clusters`, or an object that is not YAML.
    """
    results = read_stores(client, [store], names={normalize_store_url(store): [name]}, max_workers=4)
    return results[0] if results else None


def read_stores(client, stores, max_workers=DEFAULT_WORKERS, names=None):
    """Every cluster of every store, read concurrently. Returns a list of dicts sorted by (store, name):
    ``{'store': normalized URL, 'name': str, 'cluster': dict, 'instance_groups': [dict, ...]}``.

    Requests per store: one ListObjectsV2 page per 1000 clusters; per cluster one GetObject of
    ``config``, one ListObjectsV2 of ``instancegroup/`` (in parallel with the config read) and one
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
            found[(store, name)] = {"store": store, "name": name, "cluster": None, "instance_groups": []}
            submit("config", store, name, _get_yaml, client, store, prefix + CLUSTER_CONFIG)
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


def kubernetes_minor(version):
    """``'1.34'`` for ``'1.34.1'``/``'v1.34.1'`` (str), or None when the version has no ``MAJOR.MINOR``
    (kops also accepts a URL to a build; those give None)."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.|$|-|\+)", str(version or "").strip())
    return "%s.%s" % match.groups() if match else None


def region_of(cluster_spec):
    """The cluster's region (str or None), from its subnets.

    A subnet's own ``region`` wins (GCE-style specs); otherwise the AWS rule of kops'
    ``awsup.FindRegion`` (upup/pkg/fi/cloudup/awsup/aws_utils.go): a zone without its last letter.
    """
    for subnet in cluster_spec.get("subnets") or []:
        if subnet.get("region"):
            return subnet["region"]
        zone = subnet.get("zone") or ""
        if len(zone) > 2:
            return zone[:-1]
    return None


def _ig_zones(ig_spec, subnet_zones):
    """An InstanceGroup's zones (sorted list): ``spec.zones`` if given, else its subnets' zones."""
    zones = ig_spec.get("zones") or [subnet_zones.get(name, name) for name in ig_spec.get("subnets") or []]
    return sorted(set(zones))


def summarize_cluster(record):
    """Host variables for one cluster record from :func:`read_stores` (dict, JSON-serialisable).

    Keys: ``cluster_name``, ``state_store``, ``config_base``, ``cloud_provider``, ``kubernetes_version``,
    ``kubernetes_minor`` ('1.34'), ``region``, ``zones`` (subnet zones, sorted), ``control_plane_zones``
    (zones of the ControlPlane/Master groups, sorted), ``subnets`` (``name``/``zone``/``type``/``cidr``),
    ``topology`` ('private' when any subnet is Private or DualStack, kops' ``--topology private``;
    else 'public'), ``dns_type`` (``spec.topology.dns.type``; 'Public' when unset, kops' default in
    pkg/apis/kops/v1alpha2/defaults.go),
    ``dns_zone``, ``cloud_labels`` (dict), ``networking`` (the CNI's key, e.g. 'cilium'),
    ``instance_groups`` (list of ``name``/``role``/``min_size``/``max_size``/``machine_type``/``zones``/
    ``subnets``/``image``), ``node_count_min``/``node_count_max`` (sums over Node groups).
    """
    cluster = record["cluster"] or {}
    spec = cluster.get("spec") or {}
    subnets = spec.get("subnets") or []
    subnet_zones = {s.get("name"): s.get("zone") for s in subnets if s.get("zone")}
    groups = []
    for ig in record.get("instance_groups") or []:
        ig_spec = ig.get("spec") or {}
        groups.append(
            {
                "name": (ig.get("metadata") or {}).get("name"),
                "role": ig_spec.get("role"),
                "min_size": ig_spec.get("minSize"),
                "max_size": ig_spec.get("maxSize"),
                "machine_type": ig_spec.get("machineType"),
                "zones": _ig_zones(ig_spec, subnet_zones),
                "subnets": list(ig_spec.get("subnets") or []),
                "image": ig_spec.get("image"),
            }
        )
    control_plane = [g for g in groups if g["role"] in CONTROL_PLANE_ROLES]
    nodes = [g for g in groups if g["role"] == "Node"]
    networking = spec.get("networking") or {}
    version = spec.get("kubernetesVersion")
    return {
        "cluster_name": (cluster.get("metadata") or {}).get("name") or record["name"],
        "state_store": record["store"],
        "config_base": spec.get("configBase"),
        "cloud_provider": spec.get("cloudProvider") or next(iter(spec.get("cloudConfig") or {}), None),
        "kubernetes_version": str(version) if version is not None else None,
        "kubernetes_minor": kubernetes_minor(version),
        "region": region_of(spec),
        "zones": sorted(set(subnet_zones.values())),
        "control_plane_zones": sorted({z for g in control_plane for z in g["zones"]}),
        "subnets": [{"name": s.get("name"), "zone": s.get("zone"), "type": s.get("type"), "cidr": s.get("cidr")} for s in subnets],
        "topology": "private" if any(s.get("type") in ("Private", "DualStack") for s in subnets) else "public",
        "dns_type": ((spec.get("topology") or {}).get("dns") or {}).get("type") or "Public",
        "dns_zone": spec.get("dnsZone"),
        "cloud_labels": dict(spec.get("cloudLabels") or {}),
        "networking": next((k for k in sorted(networking) if k not in ("subnets", "topology") and isinstance(networking[k], dict)), None)
        if isinstance(networking, dict)
        else None,
        "instance_groups": groups,
        "node_count_min": sum(g["min_size"] or 0 for g in nodes),
        "node_count_max": sum(g["max_size"] or 0 for g in nodes),
    }
