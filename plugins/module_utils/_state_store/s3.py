# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The S3 client of the state-store code and the S3 error codes it tells apart.

Every client is made with botocore's ``standard`` retry mode (throttling, 5xx and connection errors retried
with backoff, up to :data:`MAX_ATTEMPTS` attempts; botocore/data/_retry.json): it covers paginators and
every call alike, which a retry decorator does not. An ``AccessDenied`` is never retried.
"""

try:
    import botocore.config
except ImportError:  # pragma: no cover - AnsibleAWSModule / the inventory base report a missing botocore
    botocore = None

MAX_ATTEMPTS = 5
# A key (or bucket, for HEAD) that does not exist: GetObject says NoSuchKey, HeadObject only its status.
MISSING_KEY_CODES = ("NoSuchKey", "404", "NotFound")
# A conditional PUT (If-None-Match: *) that lost: the object exists (412) or another PUT is in flight (409).
BUSY_CODES = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def retry_config(max_pool_connections=None):
    """A ``botocore.config.Config`` with the retries above; ``max_pool_connections`` (int) for clients shared by threads."""
    extra = {"max_pool_connections": max_pool_connections} if max_pool_connections else {}
    return botocore.config.Config(retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS}, **extra)


def s3_client(module):
    """A boto3 S3 client for a module (AnsibleAWSModule: its region, endpoint and credentials), with retries."""
    return module.client("s3", config=retry_config())


def error_code(exc):
    """AWS' error code of a botocore ``ClientError`` (str, ``''`` when there is none)."""
    return str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))


def is_missing_key(exc):
    """True when ``exc`` says the object does not exist (:data:`MISSING_KEY_CODES`)."""
    return error_code(exc) in MISSING_KEY_CODES
