# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options and helpers shared by every module that runs kops (documented in doc_fragments/kops.py)."""
import os
import re


def kops_argument_spec():
    """The argument spec of the ``kopsible.kops.kops`` doc fragment (dict, a fresh copy each call)."""
    return dict(
        state_store=dict(type="str"),
        kops_binary=dict(type="str", default="kops"),
        kops_env=dict(type="dict", default={}),
        kops_timeout=dict(type="int", default=1800),
    )


def state_store_of(module):
    """The state store URL from ``state_store`` or ``KOPS_STATE_STORE``; fails the module when there is none
    or it is not an ``s3://``/``file://`` URL."""
    store = module.params.get("state_store") or os.environ.get("KOPS_STATE_STORE")
    if not store:
        module.fail_json(msg="state_store: required (or set KOPS_STATE_STORE), e.g. s3://my-kops-state")
    scheme, _, rest = store.strip().partition("://")
    if scheme not in ("s3", "file") or not rest.strip("/") or store != store.strip():
        module.fail_json(msg="state_store: %r must be an s3://BUCKET[/PATH] (or file://PATH) URL" % store)
    if module.params.get("kops_timeout", 1) < 1:
        module.fail_json(msg="kops_timeout: must be 1 second or more")
    if scheme == "s3" and not _BUCKET_RE.fullmatch(rest.split("/", 1)[0]):
        module.fail_json(msg="state_store: %r does not name an S3 bucket (3 to 63 characters: letters, digits, '.', "
                             "'-'; older us-east-1 buckets also '_')" % store)
    problem = kops_env_problem(module.params.get("kops_env"))
    if problem:
        module.fail_json(msg=problem)
    return store.rstrip("/")


# S3 bucket names (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html), with the legacy
# us-east-1 allowance of uppercase and '_' (up to 255 characters) so that old buckets still pass.
_BUCKET_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}")
_ENV_NAME_RE = re.compile(r"[^=\x00]+")


def kops_env_problem(env):
    """Why ``kops_env`` (dict or None) cannot be a process environment (str naming ``kops_env``), or None.

    Names must be non-empty without '=' or NUL and values without NUL: execve(2) cannot pass them
    (Python's subprocess raises ValueError).
    """
    for key, value in (env or {}).items():
        if not _ENV_NAME_RE.fullmatch(str(key)):
            return "kops_env: %r is not an environment variable name (empty, or holds '=' or NUL)" % (key,)
        if "\x00" in str(value):
            return "kops_env: the value of %s holds a NUL character" % key
    return None
