"""The etcd-manager stand-in of one cluster: etcd backups in the state store, where and as etcd-manager writes them.

A kOps control-plane node runs etcd-manager for each etcd cluster of the spec (``main``, ``events``); it backs the
cluster up to the ``--backup-store`` kops gives it, ``spec.etcdClusters[].backups.backupStore`` of the completed
spec (``cluster-completed.spec``; kops defaults it to ``<configBase>/backups/etcd/<name>``,
pkg/model/components/etcdmanager/options.go), when it starts and then every ``manager.backupInterval`` (15
minutes by default, kops docs/operations/etcd_backup_restore_encryption.md). A backup is the folder
``<UTC time, RFC 3339>-<sequence>`` holding ``etcd.backup.gz`` (the gzipped etcd snapshot) and
``_etcd_backup.meta`` (JSON of etcd-manager's BackupInfo: ``etcdVersion``, ``timestamp``, ``clusterSpec``)
(etcd-manager pkg/backup/vfs.go AddBackup).

Here one real etcd serves the cluster's API server, so ``main`` and ``events`` are both its snapshot, taken
through etcd's gRPC gateway (``POST /v3/maintenance/snapshot``, a stream of base64 blobs), and the meta records
the version that etcd reports (``GET /version``). Retention (etcd-manager removes hourly backups after a week)
is not played: no world lives that long.
"""

import base64
import gzip
import json
import re
import time
import urllib.request

import yaml

DEFAULT_INTERVAL = 15 * 60.0
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def interval_seconds(text):
    """Seconds in a Go duration such as ``15m0s`` (None when it is not one)."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", str(text or ""))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


class EtcdManager(object):
    """Backups of the cluster at ``bucket``/``prefix`` (its state store) from the etcd at ``etcd_url``.

    :param s3_factory: a callable returning a boto3 S3 client of the store's partition.
    """

    def __init__(self, s3_factory, bucket, prefix, etcd_url):
        self.s3_factory, self.bucket, self.prefix, self.etcd_url = s3_factory, bucket, prefix.strip("/"), etcd_url
        self.sequence = 0
        self.last = None  # time.time() of the last pass that wrote backups
        self.interval = DEFAULT_INTERVAL  # the shortest backupInterval of the spec at the last pass
        self.written = []  # the S3 URLs of the backups written, oldest first

    def etcd_clusters(self, s3):
        """``[(name, backup store URL, member count, backup interval in seconds)]`` from the completed spec."""
        body = s3.get_object(Bucket=self.bucket, Key=self.prefix + "/cluster-completed.spec")["Body"].read()
        spec = (yaml.safe_load(body) or {}).get("spec") or {}
        found = []
        for etcd in spec.get("etcdClusters") or []:
            store = (etcd.get("backups") or {}).get("backupStore")
            if etcd.get("name") and store:
                interval = interval_seconds((etcd.get("manager") or {}).get("backupInterval")) or DEFAULT_INTERVAL
                found.append((etcd["name"], store.rstrip("/"), len(etcd.get("etcdMembers") or []), interval))
        return found

    def snapshot(self):
        """The etcd snapshot (bytes, a bbolt database with etcd's checksum at the end)."""
        request = urllib.request.Request(self.etcd_url + "/v3/maintenance/snapshot", data=b"{}", method="POST")
        data = bytearray()
        with urllib.request.urlopen(request, timeout=30) as response:
            for line in response:
                line = line.strip()
                if line:
                    data += base64.b64decode(json.loads(line).get("result", {}).get("blob", ""))
        return bytes(data)

    def etcd_version(self):
        with urllib.request.urlopen(self.etcd_url + "/version", timeout=10) as response:
            return json.loads(response.read()).get("etcdserver")

    def due(self, now=None):
        """Whether a pass would back up now: never backed up, or the shortest backup interval has passed."""
        return self.last is None or (now or time.time()) - self.last >= self.interval

    def backup(self):
        """Write one backup of every etcd cluster of the completed spec; returns their S3 URLs (list of str)."""
        s3 = self.s3_factory()
        clusters = self.etcd_clusters(s3)
        data = gzip.compress(self.snapshot())
        version = self.etcd_version()
        now = time.time()
        self.sequence += 1
        name = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)) + "-%06d" % self.sequence
        urls = []
        for _name, store, members, _interval in clusters:
            if not store.startswith("s3://"):
                continue  # etcd-manager's other stores (gs://, swift://...) are not in this world
            bucket, dummy, path = store[len("s3://") :].partition("/")
            folder = "/".join(p for p in (path.strip("/"), name) if p)
            meta = {"etcdVersion": version, "timestamp": str(int(now)), "clusterSpec": {"memberCount": members, "etcdVersion": version}}
            s3.put_object(Bucket=bucket, Key=folder + "/etcd.backup.gz", Body=data)
            s3.put_object(Bucket=bucket, Key=folder + "/_etcd_backup.meta", Body=json.dumps(meta).encode())
            urls.append("s3://%s/%s" % (bucket, folder))
        self.last = now
        self.interval = min([c[3] for c in clusters] or [DEFAULT_INTERVAL])
        self.written.extend(urls)
        return urls
