# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State-store URLs: ``s3://BUCKET[/PATH]`` (and ``file://PATH`` for one machine), parsed in one place.

kops resolves the URL in util/pkg/vfs/context.go (``BuildVfsPath``) and keeps an S3 path as written
(s3fs.go ``S3Path``); keys under it are joined with ``path.Join`` (s3fs.go ``Join``).
"""

import re


class StoreError(Exception):
    """A state store could not be read or its URL is not one. ``store`` is its URL (str); the message names it and the cause."""

    def __init__(self, store, message):
        super(StoreError, self).__init__("state store %s: %s" % (store, message))
        self.store = store


def split_store(state_store):
    """``s3://bucket/path/`` -> ``('s3', 'bucket', 'path')`` (path without leading/trailing ``/``);
    ``file:///dir`` -> ``('file', '', '/dir')``; any other scheme ``(scheme, '', rest)``. Never raises."""
    scheme, dummy, rest = state_store.partition("://")
    if scheme == "s3":
        bucket, dummy, prefix = rest.partition("/")
        return "s3", bucket, prefix.strip("/")
    return scheme, "", rest


def s3_location(state_store):
    """``s3://bucket/some/path`` -> ``('bucket', 'some/path')``; ``(None, None)`` for other schemes."""
    scheme, bucket, path = split_store(state_store)
    return (bucket, path) if scheme == "s3" else (None, None)


def parse_store_url(url):
    """Split ``s3://BUCKET[/PREFIX]`` into ``(bucket, prefix)``; ``prefix`` is ``''`` or ends with ``/``
    (ready to prepend to a key). Leading/trailing white space is ignored, the scheme is case-insensitive.

    :raises StoreError: not an ``s3://`` URL or no bucket name.
    """
    scheme, sep, rest = (url or "").strip().partition("://")
    dummy, bucket, prefix = split_store("s3://" + rest)
    if not sep or scheme.lower() != "s3" or not bucket:
        raise StoreError(url, "must be an s3://BUCKET[/PREFIX] URL")
    return bucket, prefix + "/" if prefix else ""


def normalize_store_url(url):
    """The canonical form of a store URL (str): ``s3://BUCKET`` or ``s3://BUCKET/PREFIX``, no trailing slash.

    :raises StoreError: as :func:`parse_store_url`.
    """
    bucket, prefix = parse_store_url(url)
    return "s3://%s/%s" % (bucket, prefix.rstrip("/")) if prefix else "s3://" + bucket


# S3 bucket names (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html), with the legacy
# us-east-1 allowance of uppercase and '_' (up to 255 characters) so that old buckets still pass.
_BUCKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}")


def state_store_problem(store):
    """Why ``store`` (str) is not a state store URL kops and the collection read alike (str naming ``state_store``),
    or None.

    An ``s3://`` URL names a bucket (S3 naming rules) and a path without empty segments. kops keeps the path as
    written (util/pkg/vfs/context.go:349, s3fs.go:69-76) and lists under that raw prefix (s3fs.go:431 ReadDir),
    but cleans it when it joins a key (s3fs.go:263-266 ``path.Join``: ``team//prod`` + ``c/config`` is
    ``team/prod/c/config``), and the lock and spec fingerprint split the path and drop the empty segment
    (layout.store_key). The same URL would name different keys to different readers.
    """
    scheme, dummy, rest = store.strip().partition("://")
    if scheme not in ("s3", "file") or not rest.strip("/") or store != store.strip():
        return "state_store: %r must be an s3://BUCKET[/PATH] (or file://PATH) URL" % store
    if scheme == "s3":
        segments = rest.rstrip("/").split("/")
        if not _BUCKET_RE.fullmatch(segments[0]):
            return "state_store: %r does not name an S3 bucket (3 to 63 characters: letters, digits, '.', '-'; older us-east-1 buckets also '_')" % store
        if "" in segments[1:]:
            return (
                "state_store: %r has an empty path segment ('//'); kops lists under it as written but "
                "writes and locks under the cleaned path, so they would use different keys: write s3://%s" % (store, "/".join(s for s in segments if s))
            )
    return None
