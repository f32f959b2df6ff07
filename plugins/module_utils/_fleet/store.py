# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet update run's record as one JSON object in S3 (``<prefix><run>.json``), changed only by conditional PUTs:
a new record with ``If-None-Match: *`` (S3 accepts it only when no object exists), a change with ``If-Match: <the
ETag read>`` (S3 accepts it only when nobody wrote the object since). A PUT refused with 412 Precondition Failed
(another controller wrote first) reads the record again and applies the change again, so two controllers never
overwrite each other's state (the care of the state-store lock, _state_store/lock.py)."""

import json

try:
    from botocore.exceptions import ClientError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    ClientError = Exception

from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import error_code, is_missing_key

# conditional PUTs refused because another controller wrote in between, tried again this many times
ATTEMPTS = 8


class Conflict(Exception):
    """The record kept changing under this run (:data:`ATTEMPTS` conditional PUTs refused)."""


def key_of(prefix, run):
    """The record's key (str) for run name ``run`` under ``prefix`` (a folder, '' for the bucket's root)."""
    prefix = (prefix or "").strip("/")
    return "%s/%s.json" % (prefix, run) if prefix else "%s.json" % run


def read(s3, bucket, key):
    """``(record or None, etag or None)``: one GetObject. Raises ClientError (other than a missing key) and ValueError
    (the object is not JSON)."""
    try:
        answer = s3.get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if is_missing_key(exc):
            return None, None
        raise
    return json.loads(answer["Body"].read()), answer["ETag"]


def write(s3, bucket, key, record, etag):
    """Put ``record`` if the object is still at ``etag`` (None: if it does not exist). Returns the new ETag, or None when
    S3 refused the condition (412, or 409 for a conditional write that raced another). Raises other ClientErrors."""
    body = json.dumps(record, indent=1, sort_keys=True).encode()
    condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
    try:
        return s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json", **condition)["ETag"]
    except ClientError as exc:
        if error_code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
            return None
        raise


def update(s3, bucket, key, change, check_mode=False):
    """Read the record, apply ``change(record or None)`` and write it back conditionally; again on a refused condition.

    ``change`` returns ``(record to write or None for no write, value)``; it may raise (nothing is written). Returns
    ``(before, record, value, written)``: the record as read before the change (None when there was none), the record
    as stored (or as it would be, in check mode), the change's value, and whether a PUT happened. Raises Conflict after
    :data:`ATTEMPTS` refusals, ClientError, ValueError."""
    for dummy in range(ATTEMPTS):
        current, etag = read(s3, bucket, key)
        new, value = change(json.loads(json.dumps(current)) if current is not None else None)
        if new is None or new == current or check_mode:
            return current, (new if new is not None else current), value, False
        if write(s3, bucket, key, new, etag) is not None:
            return current, new, value, True
    raise Conflict("s3://%s/%s changed under this run %d times in a row; nothing more was written" % (bucket, key, ATTEMPTS))
