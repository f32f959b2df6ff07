# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options and helpers shared by every module that runs kops (documented in doc_fragments/kops.py)."""

import contextlib
import os
import re

from ansible.module_utils import basic
from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.validation import check_type_dict

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    BotoCoreError = ClientError = None

try:
    from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
except ImportError:  # pragma: no cover - amazon.aws is a dependency of the collection (galaxy.yml)
    AnsibleAWSModule = object

from ansible_collections.kopsible.kops.plugins.module_utils.kops_output import HAS_YAML


class KopsModule(AnsibleAWSModule):
    """AnsibleAWSModule whose warnings reach the result the way ansible-core 2.19 supports.

    amazon.aws (>= 10) copies the warnings it recorded into ``exit_json(warnings=...)`` on ansible-core >= 2.19
    (modules.py ``_should_inject_warnings``), and ansible-core 2.19 answers every such call with the deprecation
    "Passing ``warnings`` to ``exit_json`` or ``fail_json`` is deprecated" (module_utils/basic.py
    ``_return_formatted``). ``AnsibleAWSModule.warn`` already forwards to ``AnsibleModule.warn``, which puts the
    warning in the result itself, so the copy is left out: the same warnings, no deprecation.
    """

    def _should_inject_warnings(self):
        return False

    def __init__(self, *args, **kwargs):
        spec = kwargs.get("argument_spec") or {}
        if any(option.get("options") for option in spec.values()):
            # ansible-core validates suboptions even when the value failed its type check (a list given for a dict
            # option crashes it with a TypeError): such an option is checked by type alone, which fails cleanly
            kwargs["argument_spec"] = spec_for_shapes(spec, given_params())
        super(KopsModule, self).__init__(*args, **kwargs)
        token = security_token_fallback(self.params)
        if token:
            self.params["session_token"] = token
            self._module.no_log_values.add(token)
        if any(option.get("options") for option in spec.values()):
            drop_unset_suboptions(self.params, given_params(), spec)
        self.written = []
        self.runner = None
        self._cleanups = []

    def on_exit(self, cleanup):
        """Run ``cleanup()`` before the result is printed (exit_json and fail_json alike), last registered first.
        It returns None, or a str saying what it could not undo (e.g. a lock it could not delete): the run
        then fails with that in ``msg`` and in ``cleanup_failed``."""
        self._cleanups.append(cleanup)

    def _run_cleanups(self):
        problems = []
        while self._cleanups:
            problem = self._cleanups.pop()()
            if problem:
                problems.append(problem)
        return problems

    def exit_json(self, **kwargs):
        """AnsibleModule.exit_json after the :meth:`on_exit` clean-ups; a clean-up that failed fails the run
        (its result kept, ``changed`` included)."""
        problems = self._run_cleanups()
        if problems:
            kwargs["msg"] = "; ".join(problems)
            kwargs["cleanup_failed"] = problems
            self.fail_json(**kwargs)
        super(KopsModule, self).exit_json(**kwargs)

    def wrote(self, what):
        """Record one write this run made (str, e.g. ``'hosted zone sub.example.org (Z123)'``), for the
        ``written`` field of a failure."""
        if what not in self.written:
            self.written.append(what)

    def writes(self):
        """Everything this run wrote so far (list of str): what :meth:`wrote` recorded, then each kops
        command that may have written the state store or the cloud (:meth:`KopsRunner.writes`)."""
        return list(self.written) + (self.runner.writes() if self.runner is not None else [])

    def fail_json(self, *args, **kwargs):
        """AnsibleModule.fail_json with the failure shape of every kopsible module: ``written`` (list of str:
        what the run wrote before it failed, empty when nothing) and, when kops ran, ``kops_invocations``."""
        problems = self._run_cleanups()
        if problems:
            kwargs["msg"] = "%s; %s" % (kwargs.get("msg") or (args[0] if args else "failed"), "; ".join(problems))
            kwargs["cleanup_failed"] = kwargs.get("cleanup_failed", []) + problems
            args = ()
        kwargs.setdefault("written", self.writes())
        if self.runner is not None:
            kwargs.setdefault("kops_invocations", self.runner.calls)
        super(KopsModule, self).fail_json(*args, **kwargs)

    @contextlib.contextmanager
    def aws_failures(self, doing):
        """Turn an AWS error raised in the ``with`` block into the module's failure:
        ``fail_json_aws`` with ``msg`` ``'<doing>: An error occurred (<Code>) when calling the <Operation>
        operation: ...'`` (botocore names the operation), plus ``written``. ``doing``: what the run was doing (str)."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            self.fail_json_aws(exc, msg=doing)


def given_params():
    """The module's parameters as the task gave them (dict; module_defaults included), before the argument spec
    added a ``None`` for every suboption not given. ansible-core's ``basic._load_params`` re-reads them; it is the
    documented way for a module to see its raw input."""
    return basic._load_params()


def _as_dict(value):
    """``value`` as the dict ansible-core makes of it for a dict option (a dict, or a ``k=v`` / JSON str), or None."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            return check_type_dict(value)
        except TypeError:
            return None
    return None


def spec_for_shapes(spec, given):
    """A copy of ``spec`` without the suboptions of each option whose given value cannot become what it holds (a dict,
    or a list of dicts), so that ansible-core reports the wrong type instead of crashing on it. ``given``: the raw
    parameters (:func:`given_params`)."""
    result = {}
    for name, option in spec.items():
        sub, value = option.get("options"), given.get(name) if isinstance(given, dict) else None
        if sub and value is not None:
            if option.get("type") == "list":
                items = value if isinstance(value, list) else None
                if items is None or any(_as_dict(item) is None for item in items):
                    option = dict((k, v) for k, v in option.items() if k not in ("options", "mutually_exclusive", "required_if"))
                else:
                    merged = {}
                    for item in items:
                        merged.update(_as_dict(item))
                    option = dict(option, options=spec_for_shapes(sub, merged))
            elif _as_dict(value) is None:
                option = dict((k, v) for k, v in option.items() if k not in ("options", "mutually_exclusive", "required_if"))
            else:
                option = dict(option, options=spec_for_shapes(sub, _as_dict(value)))
        result[name] = option
    return result


def drop_unset_suboptions(params, given, spec):
    """Remove from ``params`` (validated, modified in place) the ``None`` that the argument spec put in for each
    suboption the task did not give, so that a dict option stays a patch: a key given as ``null`` removes that key
    from the stored value, a key not given keeps it (kops_spec.desired_object). Recurses into suboptions and into
    the elements of ``type: list, elements: dict`` options (index by index, as given). ``given``: the raw parameters
    (:func:`given_params`); ``spec``: the argument spec."""
    for name, option in spec.items():
        sub = option.get("options")
        if not sub:
            continue
        value, raw = params.get(name), given.get(name) if isinstance(given, dict) else None
        raw = _as_dict(raw) if isinstance(raw, str) else raw
        if isinstance(value, dict) and isinstance(raw, dict):
            _drop_unset(value, raw, sub)
        elif isinstance(value, list) and isinstance(raw, list):
            for item, raw_item in zip(value, raw):
                if isinstance(item, dict) and isinstance(raw_item, dict):
                    _drop_unset(item, raw_item, sub)


def _drop_unset(value, raw, sub):
    for key in list(value):
        if key not in raw and value[key] is None:
            del value[key]
    drop_unset_suboptions(value, raw, sub)


def security_token_fallback(params, environ=None):
    """The STS token to use from ``AWS_SECURITY_TOKEN`` (str), or None.

    AWX's "Amazon Web Services" credential type injects a token as ``AWS_SECURITY_TOKEN``
    (awx/main/models/credential/injectors.py ``aws``), the name boto2 used; botocore's environment provider
    still reads it, but amazon.aws 10 takes ``session_token`` only from ``AWS_SESSION_TOKEN`` and then hands
    boto3 the access key without a token. So: when no ``session_token`` option, no ``AWS_SESSION_TOKEN``
    and no ``profile`` are given, the token comes from ``AWS_SECURITY_TOKEN`` (as botocore's EnvProvider
    would take it).
    """
    environ = os.environ if environ is None else environ
    if params.get("session_token") or params.get("profile") or environ.get("AWS_SESSION_TOKEN"):
        return None
    return environ.get("AWS_SECURITY_TOKEN") or None


def kops_argument_spec():
    """The argument spec of the ``kopsible.kops.kops`` doc fragment (dict, a fresh copy each call)."""
    return dict(
        state_store=dict(type="str"),
        kops_binary=dict(type="str", default="kops"),
        kops_env=dict(type="dict", default={}),
        kops_timeout=dict(type="int", default=1800),
        allowed_account_ids=dict(type="list", elements="str"),
        lock_timeout=dict(type="int", default=600),
        break_lock=dict(type="bool", default=False),
    )


def state_store_of(module):
    """The state store URL from ``state_store`` or ``KOPS_STATE_STORE``; fails the module when there is none
    or it is not an ``s3://``/``file://`` URL, and when PyYAML (which every kops module needs to read and
    write kops objects) is missing on the host that runs the module."""
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    store = module.params.get("state_store") or os.environ.get("KOPS_STATE_STORE")
    if not store:
        module.fail_json(msg="state_store: required (or set KOPS_STATE_STORE), e.g. s3://my-kops-state")
    problem = state_store_problem(store)
    if problem:
        module.fail_json(msg=problem)
    if module.params.get("kops_timeout", 1) < 1:
        module.fail_json(msg="kops_timeout: must be 1 second or more")
    problem = kops_env_problem(module.params.get("kops_env"))
    if problem:
        module.fail_json(msg=problem)
    return store.rstrip("/")


def state_store_problem(store):
    """Why ``store`` (str) is not a state store URL kops and the collection read alike (str naming ``state_store``),
    or None.

    An ``s3://`` URL names a bucket (S3 naming rules) and a path without empty segments. kops keeps the path as
    written (util/pkg/vfs/context.go:349, s3fs.go:69-76) and lists under that raw prefix (s3fs.go:431 ReadDir),
    but cleans it when it joins a key (s3fs.go:263-266 ``path.Join``: ``team//prod`` + ``c/config`` is
    ``team/prod/c/config``), and the lock and spec fingerprint split the path and drop the empty segment
    (kops_state_store.store_key). The same URL would name different keys to different readers.
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


def check_account(module, allowed, sts=None):
    """Fail the module unless the caller's AWS account is one of ``allowed`` (list of 12-digit str).

    One STS GetCallerIdentity call, made before anything is written (the guard of terraform's AWS provider
    option ``allowed_account_ids``; kops has none).
    Returns the account id (str), or None when ``allowed`` is empty.
    """
    if not allowed:
        return None
    for value in allowed:
        if not (len(value) == 12 and value.isdigit()):
            module.fail_json(msg="allowed_account_ids: %r is not a 12-digit AWS account id" % value)
    client = sts or module.client("sts")
    account = client.get_caller_identity()["Account"]
    if account not in allowed:
        module.fail_json(
            msg="allowed_account_ids: the credentials belong to account %s, which is not one of %s; nothing was changed" % (account, ", ".join(allowed))
        )
    return account


class StoreGuard(object):
    """What every kops module does around a run that may write the state store or the cloud.

    On entry: the account check (``allowed_account_ids``), the versioning warning of an ``s3://`` store
    (added to the module's warnings and to :meth:`facts`), and a fingerprint of the cluster's spec objects.
    :meth:`take_lock` (given to ClusterOps as ``before_write``) takes the cluster's lock right before the first
    write, so a run with nothing to write writes nothing, not even a lock. Once it holds the lock it compares
    the fingerprint: if another run wrote the spec since this run read it, its plan was computed from a spec that
    is gone, so it raises SpecChanged before writing and the module plans again on the new spec, as Terraform plans
    after taking its lock (:func:`replan_on_change`). On exit the lock is released, also after a failure.

    :param module: the AnsibleAWSModule (options of :func:`kops_argument_spec`).
    :param state_store: store URL; ``cluster``: the cluster name the lock is for.
    """

    def __init__(self, module, state_store, cluster):
        from ansible_collections.kopsible.kops.plugins.module_utils import kops_state_store as store

        self.module, self.state_store, self.cluster = module, state_store, cluster
        self.s3 = module.client("s3") if store.split_store(state_store)[0] else None
        self.lock = None
        self.warning = None
        self.account = None
        self.fingerprint = None
        self.replanned = False

    def __enter__(self):
        from ansible_collections.kopsible.kops.plugins.module_utils import kops_state_store as store

        module = self.module
        self.account = check_account(module, module.params.get("allowed_account_ids"))
        if module.params.get("lock_timeout", 0) < 0:
            module.fail_json(msg="lock_timeout: must be 0 seconds or more")
        if self.s3 is None:
            return self
        try:
            self.warning = store.versioning_warning(self.s3, self.state_store)
            if not module.check_mode:
                self.fingerprint = store.spec_fingerprint(self.s3, self.state_store, self.cluster)
        except store.ClientError as exc:
            bucket = store.split_store(self.state_store)[0]
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
            if code in ("NoSuchBucket", "404"):
                module.fail_json(
                    msg="state_store: bucket %s of %s does not exist (create it first, e.g. with role kopsible.kops.state_store)" % (bucket, self.state_store),
                    kops_invocations=[],
                )
            module.fail_json_aws(exc, msg="state_store: cannot read bucket %s of %s" % (bucket, self.state_store))
        if self.warning:
            module.warn(self.warning)
        return self

    def take_lock(self):
        """Take the cluster's lock now (no-op in check mode, for non-s3 stores, or when already held).
        Fails the module naming the holder after ``lock_timeout`` seconds. Raises
        kops_state_store.SpecChanged, still holding the lock, when another run wrote the spec while this run
        waited (the module plans again on the new spec: :func:`replan_on_change`)."""
        from ansible_collections.kopsible.kops.plugins.module_utils import kops_state_store as store

        module = self.module
        if self.lock is not None or module.check_mode or self.s3 is None:
            return
        owner = "%s (cluster %s)" % (module._name, self.cluster)
        self.lock = store.ClusterLock(self.s3, self.state_store, self.cluster, owner)
        if module.params.get("break_lock"):
            self.lock.break_lock()
        try:
            self.lock.acquire(module.params.get("lock_timeout", 600))
            if hasattr(module, "wrote"):
                module.wrote("lock %s (deleted again when the run ends)" % self.lock.url)
                module.on_exit(self._release)
        except store.LockError as exc:
            module.fail_json(msg=exc.message, lock_holder=exc.holder, state_store_safety=self.facts())
        now = store.spec_fingerprint(self.s3, self.state_store, self.cluster) if self.fingerprint is not None else None
        if now is not None and now != self.fingerprint:
            # another run wrote the spec while this one waited: plan again on it, under the lock (replan_on_change)
            self.fingerprint = now
            self.replanned = True
            raise store.SpecChanged()

    def _release(self):
        """Delete the lock (KopsModule.on_exit); returns None, or what went wrong and how to recover (str)."""
        from ansible_collections.kopsible.kops.plugins.module_utils import kops_state_store as store

        if self.lock is None:
            return None
        try:
            self.lock.release()
        except store.ClientError as exc:
            return (
                "the run could not delete its lock %s (%s); the next run on cluster %s waits lock_timeout for it: "
                "delete the object, or re-run with break_lock: true" % (self.lock.url, exc, self.cluster)
            )
        return None

    def __exit__(self, exc_type, exc, tb):
        # Normally the lock is deleted by the module's exit_json/fail_json (on_exit, registered by take_lock), so
        # that a failed deletion is reported in the result; here only when an exception is on its way out.
        if exc_type is not None and self.lock is not None and self.lock.held:
            self._release()
        return False

    def versions_reader(self):
        """For ClusterOps(versions=...): a callable ``(keys) -> {url: version id}`` reading with this guard's
        S3 client (one client per run: making one costs ~0.3 s), or None for a ``file://`` store."""
        from ansible_collections.kopsible.kops.plugins.module_utils import kops_state_store as store

        if self.s3 is None:
            return None
        return lambda keys: store.object_versions(self.s3, self.state_store, keys)

    def facts(self):
        """``{'versioning_warning': str or None, 'lock': {'url', 'waited_seconds', 'broken', 'replanned'} or None,
        'account': str or None}``; ``replanned``: another run wrote the spec while this one waited, so it planned
        again on the new spec."""
        lock = dict(self.lock.facts(), replanned=self.replanned) if self.lock else None
        return {"versioning_warning": self.warning, "lock": lock, "account": self.account}


def replan_on_change(module, guard, ops, attempt):
    """Run ``attempt()`` (the module's read-plan-write step, returning its result dict); when another run wrote the
    cluster's spec while this one waited for the lock (StoreGuard.take_lock raised SpecChanged before any write), run
    it again, now holding the lock, on the spec as it is now. The second attempt fails the module before writing when
    a field this run sets was changed by the other run in between (``ops.planned`` of the two attempts, compared by
    kops_spec.changed_meanwhile; ClusterOps.intend records them), naming the fields; fields only the other run
    changed are kept (``ops`` None: no fields to compare, e.g. rolling_update). Only one retry is needed: the lock is
    held from then on."""
    from ansible_collections.kopsible.kops.plugins.module_utils.kops_state_store import SpecChanged

    try:
        return attempt()
    except SpecChanged:
        if ops is not None:
            ops.replan(module, guard)
        return attempt()
