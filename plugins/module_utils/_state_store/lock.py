# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safety around the kops state store: the versioning check, object versions for roll-back, and a
per-cluster lock so that two runs cannot write one cluster's spec at the same time.

kops itself takes no lock on the state store (pkg/client/simple/vfsclientset writes objects with plain
PUTs), so two pipelines that run ``kops replace`` / ``kops update cluster --yes`` on one cluster at once
can interleave. The lock is an S3 object, ``<store path>/.kopsible-locks/<cluster>.json``, created with a
conditional PUT (``If-None-Match: *``): S3 accepts it only when the object does not exist, atomically.
It lives outside the cluster's folder: ``kops delete cluster`` refuses to delete a cluster whose folder
holds a file it does not know ("refusing to delete: unknown file found",
pkg/client/simple/vfsclientset/clientset.go ``DeleteAllClusterState``), and kops lists clusters by their
``<name>/config`` objects only (vfsclientset/cluster.go ``listNames``), so the folder is not a cluster to it.

Only ``s3://`` stores are covered; ``file://`` stores (tests, one machine) are not locked.
"""

import json
import os
import socket
import time
import uuid

try:
    from botocore.exceptions import ClientError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    ClientError = Exception

from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import LOCK_FOLDER, is_spec_object, store_key
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import BUSY_CODES, error_code, is_missing_key
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import s3_location


def read_json_object(s3, bucket, key, unreadable):
    """The JSON object ``key`` of ``bucket`` (parsed), None when it does not exist, ``unreadable`` (dict) when it is not
    JSON. One GetObject. :raises ClientError: any other S3 error."""
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        if is_missing_key(exc):
            return None
        raise
    try:
        return json.loads(body)
    except ValueError:
        return unreadable


class LockError(Exception):
    """The lock could not be taken within the timeout. ``holder`` is the lock's content (dict) or None."""

    def __init__(self, message, holder=None):
        Exception.__init__(self, message)
        self.message, self.holder = message, holder


def versioning_warning(s3, state_store):
    """A warning (str) when the store's bucket does not have versioning enabled, else None.

    kOps' guide asks for a versioned bucket (docs/getting_started/aws.md, "Cluster State storage"):
    without it a bad ``kops replace`` cannot be rolled back. One GetBucketVersioning call.
    """
    bucket, dummy = s3_location(state_store)
    if not bucket:
        return None
    status = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    if status == "Enabled":
        return None
    return (
        "state_store: versioning of bucket %s is %s; kOps asks for a versioned bucket so that earlier cluster "
        "specs can be restored (aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled)"
        % (bucket, (status or "off").lower(), bucket)
    )


def object_versions(s3, state_store, keys):
    """The current version of each object, for roll-back: ``{'s3://bucket/key': version id or None}``.

    ``None`` when the object does not exist; ``'null'`` when the bucket was never versioned. Restore a
    version with ``aws s3api copy-object --copy-source BUCKET/KEY?versionId=ID --bucket BUCKET --key KEY``.
    """
    bucket, dummy = s3_location(state_store)
    found = {}
    for key in keys:
        try:
            found["s3://%s/%s" % (bucket, key)] = s3.head_object(Bucket=bucket, Key=key).get("VersionId") or "null"
        except ClientError as exc:
            if is_missing_key(exc):
                found["s3://%s/%s" % (bucket, key)] = None
            else:
                raise
    return found


def spec_fingerprint(s3, state_store, cluster):
    """``{key: etag}`` of the cluster's spec objects (``<cluster>/config`` and ``<cluster>/instancegroup/*``),
    to tell whether another run wrote them. One ListObjectsV2 call per 1000 objects."""
    bucket, dummy = s3_location(state_store)
    prefix = store_key(state_store, cluster) + "/"
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            rest = obj["Key"][len(prefix) :]
            if is_spec_object(rest):
                found[obj["Key"]] = obj["ETag"]
    return found


class SpecChanged(Exception):
    """Another run wrote the cluster's spec objects while this run waited for the lock (which it now holds): the
    run must read the spec again and plan on it (_kops.run.KopsRun)."""


class ClusterLock(object):
    """The lock of one cluster in an ``s3://`` state store.

    :param s3: a boto3 S3 client.
    :param state_store: the store URL.
    :param cluster: the cluster name.
    :param owner: who holds it (str, shown to a waiting run), e.g. ``kops_cluster on host pid 123``.
    :param sleep: seconds between attempts (float).
    """

    def __init__(self, s3, state_store, cluster, owner, sleep=2.0):
        self.s3, self.cluster, self.owner, self.sleep = s3, cluster, owner, sleep
        self.bucket, dummy = s3_location(state_store)
        self.key = store_key(state_store, LOCK_FOLDER, cluster + ".json")
        self.url = "s3://%s/%s" % (self.bucket, self.key)
        self.token = uuid.uuid4().hex
        self.held = False
        self.waited = 0.0
        self.broken = None
        self.waited_for = None  # the owner of the lock this run waited for (str), read once while it waited

    def holder(self):
        """The lock's content (dict) or None when nobody holds it."""
        return read_json_object(self.s3, self.bucket, self.key, {"owner": "unknown (unreadable lock object)"})

    def break_lock(self):
        """Delete the lock whoever holds it (for a run that crashed); returns the broken lock's content or None."""
        self.broken = self.holder()
        if self.broken is not None:
            self.s3.delete_object(Bucket=self.bucket, Key=self.key)
        return self.broken

    def acquire(self, timeout):
        """Take the lock, waiting up to ``timeout`` seconds (int or float) while another run holds it.

        :raises LockError: still held after ``timeout``; the message names the holder and how to break it.
        """
        body = json.dumps(
            {
                "owner": self.owner,
                "token": self.token,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
        start = time.monotonic()
        while True:
            try:
                self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body.encode(), IfNoneMatch="*", ContentType="application/json")
                self.held = True
                self.waited = round(time.monotonic() - start, 3)
                return self
            except ClientError as exc:
                if error_code(exc) not in BUSY_CODES:
                    raise
                if self.waited_for is None:
                    self.waited_for = ((self.holder() or {}).get("owner")) or "another run"
            elapsed = time.monotonic() - start
            if elapsed >= timeout:
                holder = self.holder()
                raise LockError(
                    "state store lock %s is held by %s since %s; waited %ds (lock_timeout). If that run crashed, "
                    "re-run with break_lock: true" % (self.url, (holder or {}).get("owner", "another run"), (holder or {}).get("since", "?"), int(elapsed)),
                    holder,
                )
            time.sleep(min(self.sleep, max(0.1, timeout - elapsed)))

    def release(self):
        """Delete the lock if it is still ours (kops delete cluster may already have removed it)."""
        if not self.held:
            return
        self.held = False
        holder = self.holder()
        if holder is not None and holder.get("token") == self.token:
            self.s3.delete_object(Bucket=self.bucket, Key=self.key)

    def facts(self):
        """``{'url', 'waited_seconds', 'waited_for', 'broken'}`` for module results (``waited_for``: the owner of the lock
        this run waited for, or None)."""
        return {"url": self.url, "waited_seconds": self.waited, "waited_for": self.waited_for, "broken": self.broken}


class InterruptionNote(object):
    """What a run that was interrupted (Ctrl-C, a cancelled job: SIGINT, SIGTERM, SIGHUP) while it held the cluster's lock
    left behind, kept for the runs after it: the object ``<store path>/.kopsible-locks/<cluster>.interrupted.json``
    beside the lock.

    ansible-core's controller exits on Ctrl-C without waiting for the task's result (executor/task_queue_manager.py
    ``_signal_handler`` raises KeyboardInterrupt at once; the worker passes the signal to the module,
    executor/process/worker.py ``_term``), so the interrupted run's own message reaches nobody: the next run of any
    module on the cluster reports the note (a warning and ``state_store_safety.interrupted_run``), and the next
    successful run of the module that was interrupted, holding the lock, deletes it.

    The note (dict): ``module``, ``owner``, ``host``, ``pid``, ``signal``, ``at`` (UTC), ``msg`` (what the run was doing
    and what it left, str), ``left`` (list of str), ``written`` (list of str, the run's writes).
    """

    def __init__(self, s3, state_store, cluster):
        self.s3, self.cluster = s3, cluster
        self.bucket, dummy = s3_location(state_store)
        self.key = store_key(state_store, LOCK_FOLDER, cluster + ".interrupted.json")
        self.url = "s3://%s/%s" % (self.bucket, self.key)

    def read(self):
        """The note (dict), or None when there is none."""
        return read_json_object(self.s3, self.bucket, self.key, {"msg": "unreadable interruption note %s" % self.url})

    def write(self, module, signal_name, msg, left, written):
        """Store the note of this run (one PUT); returns it (dict)."""
        note = {
            "module": module,
            "owner": "%s (cluster %s)" % (module, self.cluster),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "signal": signal_name,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "msg": msg,
            "left": list(left),
            "written": list(written),
        }
        self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=json.dumps(note, indent=1).encode(), ContentType="application/json")
        return note

    def delete(self):
        """Delete the note (one DELETE)."""
        self.s3.delete_object(Bucket=self.bucket, Key=self.key)


def note_warning(note, url):
    """The warning a run gives about an earlier run's interruption note (str)."""
    return "an earlier run was interrupted: %s (%s on %s, pid %s, at %s; note %s, deleted by the next successful %s run)" % (
        note.get("msg", "?"),
        note.get("signal", "a signal"),
        note.get("host", "?"),
        note.get("pid", "?"),
        note.get("at", "?"),
        url,
        note.get("module", "?"),
    )
