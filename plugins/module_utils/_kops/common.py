# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module class of every kopsible module and the options shared by the modules that run kops (documented in
doc_fragments/kops.py): the state store URL, the kops environment, the account guard. What a run does around the state
store (versioning, lock, re-plan) is in ``_state_store.guard``."""

import contextlib
import os
import re

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.validation import check_type_dict
from ansible.module_utils.errors import UnsupportedError

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # pragma: no cover - AnsibleAWSModule reports missing botocore
    BotoCoreError = ClientError = None

try:
    from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
except ImportError:  # pragma: no cover - amazon.aws is a dependency of the collection (galaxy.yml)
    AnsibleAWSModule = object

from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import HAS_YAML
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import state_store_problem


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
        nested = dict((name, option) for name, option in spec.items() if option.get("options"))
        if nested:
            # ansible-core checks an option with suboptions by its type alone here (a dict, or a list of dicts: a wrong
            # shape fails cleanly); its suboptions are checked after, against the value as given (check_suboptions)
            kwargs["argument_spec"] = dict(spec, **dict((name, type_only(option)) for name, option in nested.items()))
        super(KopsModule, self).__init__(*args, **kwargs)
        token = security_token_fallback(self.params)
        if token:
            self.params["session_token"] = token
            self._module.no_log_values.add(token)
        self.written = []
        self.runner = None
        self._cleanups = []
        self.succeeded = False
        for name, option in nested.items():
            self.check_suboptions(name, option)

    def check_suboptions(self, name, option):
        """Check the value given for option ``name`` against its suboptions (``option['options']``, nested ones
        included) with ansible-core's own validator, the way AnsibleModule would have, and replace it by the checked
        value without the ``None`` the validator adds for each suboption not given: a dict option is a patch, where a
        key given as ``null`` removes that key from the stored value and a key not given keeps it
        (spec.desired_object). A refused value fails the module with ansible-core's message (``... found in 'name'``;
        ``Unsupported parameters for (module) module: name.key. Supported parameters include: ...``)."""
        given = self.params.get(name)
        if given is None:
            return
        result = ArgumentSpecValidator({name: option}).validate({name: given})
        if result.error_messages:
            msg = result.errors.msg
            if isinstance(result.errors[0], UnsupportedError):
                msg = "Unsupported parameters for (%s) module: %s" % (self._name, msg)
            self.fail_json(msg=msg)
        checked = result.validated_parameters[name]
        if isinstance(checked, dict):
            _drop_unset(checked, given, option["options"])
        else:
            for item, raw_item in zip(checked, given):
                _drop_unset(item, raw_item, option["options"])
        self.params[name] = checked

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
        self.succeeded = True  # for clean-ups that act only after a successful run (StoreGuard: an earlier run's note)
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


def type_only(option):
    """A copy of the argument spec entry ``option`` without its suboptions and their checks: ansible-core then checks
    only the value's type (a dict, or a list of dicts) and leaves it as given (KopsModule.check_suboptions)."""
    checks = ("options", "mutually_exclusive", "required_if", "required_together", "required_one_of", "required_by", "apply_defaults")
    return dict((key, value) for key, value in option.items() if key not in checks)


def _drop_unset(value, raw, sub):
    """Remove from the checked dict ``value`` (in place) each key of the suboptions ``sub`` that ``raw`` (the dict as
    given) does not hold and that the validator set to ``None``; recurses into nested suboptions and into the elements
    of ``type: list, elements: dict`` ones (index by index, as given)."""
    if isinstance(raw, str):  # a nested dict given as "k=v" or JSON text, as ansible-core reads it
        try:
            raw = check_type_dict(raw)
        except TypeError:
            return
    if not isinstance(value, dict) or not isinstance(raw, dict):
        return
    for key in list(value):
        if key not in raw and value[key] is None:
            del value[key]
    for key, option in sub.items():
        if not option.get("options") or raw.get(key) is None:
            continue
        if isinstance(value.get(key), dict):
            _drop_unset(value[key], raw[key], option["options"])
        elif isinstance(value.get(key), list) and isinstance(raw[key], list):
            for item, raw_item in zip(value[key], raw[key]):
                _drop_unset(item, raw_item, option["options"])


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


def kops_setting(params, name):
    """The value of kops' environment variable ``name`` for a run with module options ``params``: O(kops_env) first,
    then the module's own environment (what kops_runner.kops_environment hands kops); None when unset."""
    return (params.get("kops_env") or {}).get(name, os.environ.get(name))


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
