# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options and helpers shared by every module that runs kops (documented in doc_fragments/kops.py)."""
import os


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
    return store.rstrip("/")
