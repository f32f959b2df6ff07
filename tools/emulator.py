#!/usr/bin/env python3
"""Start the local AWS emulator (a moto server) on loopback, as a separate process.

Usage::

    python tools/emulator.py [--host 127.0.0.1] [--port 5000] [--port-file PATH] [--no-access-log]

With ``--port 0`` a free port is chosen; the chosen URL is printed on stdout as
``EMULATOR_URL=http://127.0.0.1:PORT`` and, with ``--port-file``, written to that file.

Before serving, the launcher applies the fixes in :mod:`emulator_patches` (each one restores an
AWS behaviour that kops relies on and moto gets wrong; see docs/emulator.md) and points moto at
``tools/emulator_amis.json`` so the Ubuntu image of the kops channel exists.
"""

import argparse
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port(host):
    """Return a TCP port number (int) that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def merged_amis_file():
    """Write moto's default AMIs plus ``emulator_amis.json`` to .cache/emulator-amis.json; return its path.

    moto replaces (not extends) its AMI list when ``MOTO_AMIS_PATH`` is set, so the defaults are
    read from moto's packaged resource and our images (the kops channel's Ubuntu) appended.
    """
    import gzip
    import importlib.util
    import json

    # Found without importing moto.ec2: its import reads MOTO_AMIS_PATH, which is not set yet.
    moto_dir = os.path.dirname(importlib.util.find_spec("moto").origin)
    resources = os.path.join(moto_dir, "ec2", "resources")
    with gzip.open(os.path.join(resources, "amis.json.gz"), "rt") as handle:
        amis = json.load(handle)
    with open(os.path.join(HERE, "emulator_amis.json")) as handle:
        amis.extend(json.load(handle))
    path = os.path.join(os.path.dirname(HERE), ".cache", "emulator-amis.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".%d.tmp" % os.getpid(), "w") as handle:
        json.dump(amis, handle)
    os.replace(path + ".%d.tmp" % os.getpid(), path)  # atomic; a file per process: several emulators may start at once
    return path


def backend_regions(request, full_url, headers):
    """``GET /moto-api/kopsible/regions``: where moto holds state, as JSON ``{account id: [region, ...]}``.

    An emulator extension (not an AWS API): moto makes a service's backend for an account and region
    on the first call there, so these are the regions (and partitions, ``aws``, ``aws-cn``...) that any
    call has touched since the last reset. ``Emulator.snapshot()`` reads every one of them through
    the AWS APIs, so that a write in any region shows.
    """
    import json

    from moto.core.base_backend import BackendDict

    found = {}
    for backend in list(BackendDict._instances):
        for account, regions in list(backend.items()):
            found.setdefault(account, set()).update(regions.keys())
    body = {account: sorted(regions) for account, regions in found.items()}
    if "first_touch" in full_url:
        body = {"regions": body, "first_touch": dict(FIRST_TOUCH)}
    return 200, {"Content-Type": "application/json"}, json.dumps(body)


FIRST_TOUCH = {}
CURRENT_REQUEST = __import__("threading").local()


def record_first_touch():
    """Note which request made moto create each service's backend for a region (moto makes it on the first call
    there): ``GET /moto-api/kopsible/regions?first_touch=1`` answers ``{"regions": {...}, "first_touch": {"<service>
    <region>": {"method", "path", "target", "user_agent", "credential_scope", "time"}}}``, cleared by a reset. A
    snapshot difference that shows a region appear names the caller with it (harness.snapshot.diff)."""
    import time

    from moto.core.base_backend import AccountSpecificBackend, BackendDict
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__

    def call(self, environ, start_response):
        CURRENT_REQUEST.environ = environ
        try:
            return dispatch(self, environ, start_response)
        finally:
            CURRENT_REQUEST.environ = None

    DomainDispatcherApplication.__call__ = call
    getitem = AccountSpecificBackend.__getitem__

    def get(self, region_name):
        if region_name not in self.keys():
            environ = getattr(CURRENT_REQUEST, "environ", None) or {}
            authorization = environ.get("HTTP_AUTHORIZATION") or ""
            scope = authorization.partition("Credential=")[2].partition(",")[0].split("/", 1)[-1]
            FIRST_TOUCH.setdefault(
                "%s %s" % (self.service_name, region_name),
                {
                    "method": environ.get("REQUEST_METHOD"),
                    "path": (environ.get("PATH_INFO") or "") + ("?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else ""),
                    "target": environ.get("HTTP_X_AMZ_TARGET"),
                    "user_agent": (environ.get("HTTP_USER_AGENT") or "")[:120],
                    "credential_scope": scope,
                    "time": time.time(),
                },
            )
        return getitem(self, region_name)

    AccountSpecificBackend.__getitem__ = get
    reset = BackendDict.reset.__func__

    def cleared(cls):
        FIRST_TOUCH.clear()
        return reset(cls)

    BackendDict.reset = classmethod(cleared)


def fast_backend_lookup():
    """Find each request's moto backend without touching the disk: moto's dispatcher resolves the backend under one
    lock for every request, listing moto's package directory (``backends.list_of_moto_modules``: a listdir and an
    isdir per service, each releasing the GIL) and then trying every service's URL pattern. Under kops' parallel calls
    requests queued on that lock (py-spy on a test run: 47 % of the emulator's samples waited there). The package's
    modules and a host's backend do not change while the server runs, so both are computed once (same answers)."""
    import functools

    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    lookup = DomainDispatcherApplication.get_backend_for_host

    @functools.wraps(lookup)
    def get_backend_for_host(self, host):
        cache = self.__dict__.setdefault("_kopsible_backend_for_host", {})
        if host not in cache:
            cache[host] = lookup(self, host)
        return cache[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host


def cached_action_names():
    """Compute each response class's method names once: moto's dispatcher lists them for every request
    (``moto.core.responses.BaseResponse.call_action`` calls ``method_names_from_class``, an ``inspect.getmembers``
    over the whole class: 5 % of an emulator's request time in a py-spy profile of a test run). The classes and the
    emulator's patches to them are set before the server starts, so the list is the same on every request."""
    import functools

    from moto.core import responses

    responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)


def no_access_log():
    """Drop werkzeug's line per answered request (``WSGIRequestHandler.log_request``: 8 % of an emulator's request
    time in a test run, where nobody reads it). Errors are still logged: werkzeug writes "Error on request" and its
    traceback through ``server.log``, which the test harness reads to fail a test whose request got an HTTP 500."""
    from werkzeug.serving import WSGIRequestHandler

    WSGIRequestHandler.log_request = lambda self, code="-", size="-": None


def one_request_at_a_time():
    """Handle one request at a time in moto's backends. moto's models are not thread-safe, and the threaded server
    runs concurrent requests through them: an instance termination racing its Auto Scaling group's forced deletion
    left a replacement instance running with no group, or answered 500 (23 of 40 rounds of
    test_emulator_patches.py's race case; seen in a full run as the Molecule teardown scenario's orphaned instance).
    AWS applies each call atomically. Backend work is CPU-bound Python under the GIL, so serializing it
    costs little; sockets are still read and written by each request's own thread."""
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__
    lock = threading.Lock()
    profile = os.environ.get("KOPSIBLE_EMULATOR_PROFILE")
    costs = {}

    def call(self, environ, start_response):
        with lock:
            if not is_read(environ):
                GENERATION[0] += 1  # before the write: a reader that sees the old number reads again next pass
            if not profile:
                return dispatch(self, environ, start_response)
            key = request_kind(environ)
            start = time.process_time()
            try:
                return dispatch(self, environ, start_response)
            finally:
                entry = costs.setdefault(key, [0, 0.0])
                entry[0] += 1
                entry[1] += time.process_time() - start

    def dump():
        with open("%s.%d.json" % (profile, os.getpid()), "w") as handle:
            json.dump({" ".join(k): {"requests": n, "cpu_seconds": round(t, 3)} for k, (n, t) in sorted(costs.items())}, handle, indent=1)

    if profile:
        import atexit
        import signal

        atexit.register(dump)
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    DomainDispatcherApplication.__call__ = call


# How many requests that may write have reached the emulator (GET /moto-api/kopsible/generation).
GENERATION = [0]
_READ_PREFIXES = ("Describe", "List", "Get")


def is_read(environ):
    """True for a request that cannot change the emulator's state: a GET or HEAD, or a Query-protocol or JSON-protocol
    call whose operation starts with Describe, List or Get (AWS' naming of its read-only operations, e.g. EC2
    ``DescribeInstances``, STS ``GetCallerIdentity``). Anything else counts as a write, moto's own ``/moto-api/`` POSTs
    (reset, saved states) included; a read counted as a write only costs a reader one more pass."""
    import io
    import urllib.parse

    method = environ.get("REQUEST_METHOD")
    if method in ("GET", "HEAD"):
        return True
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return target.rsplit(".", 1)[-1].startswith(_READ_PREFIXES)
    if method != "POST" or "/moto-api/" in environ.get("PATH_INFO", ""):
        return False
    action = (urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("Action") or [None])[0]
    if action is None and "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        action = (urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("Action") or [None])[0]
    return bool(action) and action.startswith(_READ_PREFIXES)


def generation(request, full_url, headers):
    """``GET /moto-api/kopsible/generation``: ``{"generation": N}``, the number of requests that may have written
    (:func:`is_read`) since the server started. An emulator extension (not an AWS API) for the kube world's stand-ins
    (tools/kubeworld), which poll AWS state several times a second: while the number stands still, what they read last
    still holds, so an idle world reads nothing."""
    return 200, {"Content-Type": "application/json"}, json.dumps({"generation": GENERATION[0]})


def request_kind(environ):
    """``(caller, service, operation)`` of a request, for KOPSIBLE_EMULATOR_PROFILE (a benchmark aid: the CPU the
    emulator spends per kind of request): the caller from the User-Agent (``kops`` for aws-sdk-go, ``kube-world``,
    else ``boto3``), the service from the SigV4 credential scope, the operation from X-Amz-Target, the Query
    protocol's ``Action`` (the body is read and put back) or, for REST services, the method and the shape of the
    path (``/bucket``, ``/bucket/key``) with the query's parameter names."""
    import io
    import re
    import urllib.parse

    agent = environ.get("HTTP_USER_AGENT", "")
    caller = "kops" if "aws-sdk-go" in agent else "kube-world" if "kopsible-kube-world" in agent else "boto3"
    scope = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
    service = scope.group(1) if scope else "?"
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return caller, service, target.rsplit(".", 1)[-1]
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    action = (query.get("Action") or [None])[0]
    if action is None and environ.get("REQUEST_METHOD") == "POST" and "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        action = (urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("Action") or [None])[0]
    if action:
        return caller, service, action
    depth = len([p for p in environ.get("PATH_INFO", "").split("/") if p])
    shape = "/" if depth == 0 else "/bucket" if depth == 1 or service != "s3" else "/bucket/key"
    if service != "s3":
        shape = re.sub(r"/[A-Z0-9]{8,}", "/ID", environ.get("PATH_INFO", ""))[:60]
    return caller, service, "%s %s?%s" % (environ.get("REQUEST_METHOD"), shape, ",".join(sorted(query)))


def register_regions_endpoint():
    """Serve :func:`backend_regions` next to moto's own ``/moto-api/`` paths (before the server starts)."""
    from moto.moto_api._internal import urls

    urls.url_paths["{0}/moto-api/kopsible/regions"] = backend_regions
    urls.url_paths["{0}/moto-api/kopsible/state"] = saved_states
    urls.url_paths["{0}/moto-api/kopsible/generation"] = generation


SAVED_STATES = {}


def _copy_backends(entries):
    """Deep copies of ``[(backend dict, account, region, backend), ...]``, in ONE ``deepcopy`` so that objects shared
    between services (an Auto Scaling group's EC2 instances, a load balancer's) stay shared in the copy. moto's
    registries (the backend dicts) are referenced, not copied; locks, which cannot be copied, are made anew."""
    import copy
    import copyreg
    import threading

    from moto.core.base_backend import BackendDict
    from moto.ec2.models.security_groups import SecurityGroupRule
    from moto.s3.utils import _VersionedKeyStore

    copyreg.pickle(type(threading.Lock()), lambda lock: (threading.Lock, ()))
    copyreg.pickle(type(threading.RLock()), lambda lock: (threading.RLock, ()))

    def copy_versioned_keys(store, memo):
        # S3's key store answers items() with the newest version of each key only: copy every version
        made = memo[id(store)] = _VersionedKeyStore()
        for key, versions in list(dict.items(store)):
            dict.__setitem__(made, key, copy.deepcopy(versions, memo))
        made.__dict__.update(copy.deepcopy(store.__dict__, memo))
        return made

    def copy_all_attributes(obj, memo):
        # moto's own __deepcopy__ of a security group rule keeps the original EC2 backend (its tags would be read
        # from the backend the copy was made from): copy every attribute, the backend included
        made = memo[id(obj)] = object.__new__(type(obj))
        for key, value in list(obj.__dict__.items()):
            made.__dict__[key] = copy.deepcopy(value, memo)
        return made

    copy._deepcopy_dispatch[_VersionedKeyStore] = copy_versioned_keys
    copy._deepcopy_dispatch[SecurityGroupRule] = copy_all_attributes
    memo = {}
    for bd in list(BackendDict._instances) + [entry[0] for entry in entries]:
        memo[id(bd)] = bd
        for regions in dict.values(bd):
            memo[id(regions)] = regions
    backends = copy.deepcopy([entry[3] for entry in entries], memo)
    return [entry[:3] + (backend,) for entry, backend in zip(entries, backends)]


def _rebuild_bucket_accounts():
    """Make moto's registry of bucket names (``s3_backends.bucket_accounts``: name -> (partition, account), S3's one
    namespace across accounts) name exactly the buckets the S3 backends hold. A restore replaces the backends without
    moto's own bookkeeping: a bucket made after the save stayed registered, so a later HeadBucket or CreateBucket of
    that name looked for it in a backend without it and recursed until Python's limit (a 500 where AWS answers 404 or
    creates the bucket), and a restored bucket was missing from the registry."""
    from moto.s3.models import s3_backends

    s3_backends.bucket_accounts.clear()
    for account, partitions in list(s3_backends.items()):
        for partition, backend in list(dict.items(partitions)):
            for bucket in list(backend.buckets) + list(backend.table_buckets):
                s3_backends.bucket_accounts[bucket] = (partition, account)


def saved_states(request, full_url, headers):
    """``POST /moto-api/kopsible/state?save=NAME``, ``?restore=NAME`` and ``?drop=NAME``: keep a copy of every
    backend (the whole emulator's state) under NAME, make the emulator's state that copy again (the backends made
    since are dropped, as by a reset), or forget the copy. An emulator extension (not an AWS API) for tests that
    start many times from one state, e.g. an applied cluster: restoring takes a fraction of a second where making
    the state again with kops takes many. Answers ``{"saved"|"restored": NAME, "backends": N}``; 404 for a name never saved."""
    import json
    import urllib.parse

    from moto.core.base_backend import BackendDict, backend_lock
    from moto.core.model_instances import reset_model_data

    query = urllib.parse.parse_qs(urllib.parse.urlparse(full_url).query)
    with backend_lock:
        if "save" in query:
            name = query["save"][0]
            entries = [
                (bd, account, region, backend)
                for bd in list(BackendDict._instances)
                for account, regions in list(bd.items())
                for region, backend in list(dict.items(regions))
            ]
            SAVED_STATES[name] = _copy_backends(entries)
            return 200, {"Content-Type": "application/json"}, json.dumps({"saved": name, "backends": len(entries)})
        if "drop" in query:
            SAVED_STATES.pop(query["drop"][0], None)
            return 200, {"Content-Type": "application/json"}, json.dumps({"dropped": query["drop"][0]})
        name = (query.get("restore") or [""])[0]
        if name not in SAVED_STATES:
            return 404, {"Content-Type": "application/json"}, json.dumps({"error": "no saved state %r" % name})
        for bd in list(BackendDict._instances):
            dict.clear(bd)
        BackendDict._instances.clear()
        reset_model_data()
        for bd, account, region, backend in _copy_backends(SAVED_STATES[name]):
            dict.__setitem__(bd[account], region, backend)
        _rebuild_bucket_accounts()
        return 200, {"Content-Type": "application/json"}, json.dumps({"restored": name, "backends": len(SAVED_STATES[name])})


ROUTE53_PENDING = {"seconds": 0.0, "changes": {}}


def route53_pending_mode(seconds):
    """A test mode: Route53 changes stay ``PENDING`` for ``seconds`` after they are submitted (AWS: usually
    under a minute), so that code waiting for ``INSYNC`` is exercised. moto answers ``INSYNC`` at once and
    gives every change the same id. With the mode on, each change gets its own id (``/change/K...``) and
    ``GetChange`` answers ``PENDING`` until ``seconds`` have passed. Switched at start by
    ``KOPSIBLE_ROUTE53_PENDING_SECONDS`` and at run time by ``POST /moto-api/kopsible/route53-pending?seconds=N``
    (0: off, moto's behaviour).
    """
    import itertools
    import time
    import urllib.parse

    from moto.moto_api._internal import urls
    from moto.route53.responses import Route53

    ROUTE53_PENDING["seconds"] = seconds
    counter = itertools.count(1)

    def pending(method):
        def wrapper(self):
            answer = method(self)
            info = getattr(answer, "result", {}).get("ChangeInfo") if isinstance(getattr(answer, "result", None), dict) else None
            if info is not None and ROUTE53_PENDING["seconds"] > 0:
                info["Id"] = "/change/K%012d" % next(counter)
                info["Status"] = "PENDING"
                ROUTE53_PENDING["changes"][info["Id"].rsplit("/", 1)[-1]] = time.monotonic() + ROUTE53_PENDING["seconds"]
            return answer

        return wrapper

    for name in (
        "create_hosted_zone",
        "delete_hosted_zone",
        "change_resource_record_sets",
        "associate_vpc_with_hosted_zone",
        "disassociate_vpc_from_hosted_zone",
    ):
        setattr(Route53, name, pending(getattr(Route53, name)))
    original_get_change = Route53.get_change

    def get_change(self):
        answer = original_get_change(self)
        info = answer.result["ChangeInfo"]
        until = ROUTE53_PENDING["changes"].get(str(info["Id"]).rsplit("/", 1)[-1])
        if until is not None and time.monotonic() < until:
            info["Status"] = "PENDING"
        return answer

    Route53.get_change = get_change

    def switch(request, full_url, headers):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(full_url).query)
        ROUTE53_PENDING["seconds"] = float(query.get("seconds", ["0"])[0])
        return 200, {"Content-Type": "application/json"}, '{"seconds": %s}' % ROUTE53_PENDING["seconds"]

    urls.url_paths["{0}/moto-api/kopsible/route53-pending"] = switch


IAM_ENFORCEMENT = {"on": False, "exempt": set(), "denied": [], "allowed": {}, "requests": {}}


def _access_key_of(headers):
    """The access key id a SigV4-signed request names (its ``Authorization`` header's ``Credential=``), or None."""
    authorization = headers.get("Authorization") or ""
    if "Credential=" not in authorization:
        return None
    return authorization.partition("Credential=")[2].partition("/")[0] or None


def iam_enforcement_mode():
    """A test mode: moto's IAM authorization (credentials, signature, then the caller's policies) for every request
    except those signed with an exempt access key.

    moto 5.2.5 authorizes a request only after ``settings.INITIAL_NO_AUTH_ACTION_COUNT`` requests (infinity by
    default, i.e. never); then ``moto.core.authorization.ActionAuthenticatorMixin`` makes an ``IAMRequest`` (S3:
    ``S3IAMRequest``, moto/iam/access_control.py) that (1) finds the access key among the IAM users' keys (or STS's
    assumed-role keys): an unknown key is ``InvalidClientTokenId`` (EC2: ``AuthFailure``; S3: ``InvalidAccessKeyId``),
    (2) recomputes the SigV4 signature over the signed headers and the body with that key's secret, for every
    service: a mismatch is ``SignatureDoesNotMatch`` (EC2: ``AuthFailure``), (3) evaluates the user's inline and
    attached policies and its groups' (``AccessDenied`` / EC2 ``UnauthorizedOperation``). Its differences from AWS and
    the emulator's fixes are in docs/emulator.md ("IAM enforcement").

    ``POST /moto-api/kopsible/iam-enforcement?on=true&exempt=KEY[&exempt=KEY2]`` turns it on (``on=false``: off);
    ``GET`` answers ``{"on": bool, "exempt": [...], "denied": [...], "allowed": {...}}``, ``denied`` listing every
    refusal since it was turned on as ``{"action", "resource", "principal", "code", "client"}``, ``allowed`` counting
    the authorized requests per access key and client (the User-Agent's product, e.g. ``aws-sdk-go-v2``, ``Boto3``),
    and ``authorized_requests`` each distinct authorized ``{"principal", "action", "resource", "count"}`` (the ARN
    the policies were evaluated on: what a statement must match to be needed).
    The exempt keys are the harness' own (the account's root credentials, allowed everything as on AWS: the tests'
    reads, the kube world, the DNS face). ``POST /moto-api/reset`` turns the mode off and clears both.
    """
    import json
    import urllib.parse

    from emulator_patches.iam_enforcement import record_iam_refusals
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.moto_api._internal import urls
    from moto.moto_api._internal.models import MotoAPIBackend

    def switch(on, exempt=()):
        IAM_ENFORCEMENT["on"] = on
        IAM_ENFORCEMENT["exempt"] = set(exempt)
        IAM_ENFORCEMENT["denied"] = []
        IAM_ENFORCEMENT["allowed"] = {}
        IAM_ENFORCEMENT["requests"] = {}
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0 if on else float("inf")
        ActionAuthenticatorMixin.request_count = 0

    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def authenticate_and_authorize(self, iam_request_cls, resource="*"):
        key = _access_key_of(self.headers)
        if not IAM_ENFORCEMENT["on"] or key in IAM_ENFORCEMENT["exempt"]:
            return None
        answer = original(self, iam_request_cls, resource)
        client = (self.headers.get("User-Agent") or "").split("/")[0]
        allowed = IAM_ENFORCEMENT["allowed"].setdefault(key, {})
        allowed[client] = allowed.get(client, 0) + 1
        return answer

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_and_authorize

    def record_allowed(action, resource, principal):
        requests = IAM_ENFORCEMENT["requests"]
        requests[(principal, action, resource)] = requests.get((principal, action, resource), 0) + 1

    record_iam_refusals(lambda entry: IAM_ENFORCEMENT["denied"].append(entry), record_allowed)

    original_reset = MotoAPIBackend.reset

    def reset(self):
        switch(False)
        return original_reset(self)

    MotoAPIBackend.reset = reset

    def endpoint(request, full_url, headers):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(full_url).query)
        if request.method == "POST":
            switch(query.get("on", ["false"])[0].lower() == "true", query.get("exempt", []))
        body = {key: IAM_ENFORCEMENT[key] for key in ("on", "denied", "allowed")}
        body["exempt"] = sorted(IAM_ENFORCEMENT["exempt"])
        body["authorized_requests"] = [
            {"principal": principal, "action": action, "resource": resource, "count": count}
            for (principal, action, resource), count in sorted(IAM_ENFORCEMENT["requests"].items(), key=str)
        ]
        return 200, {"Content-Type": "application/json"}, json.dumps(body)

    urls.url_paths["{0}/moto-api/kopsible/iam-enforcement"] = endpoint


def main(argv=None):
    """Parse arguments, patch moto, and serve until killed. Returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--port-file")
    parser.add_argument("--no-access-log", action="store_true", help="do not log each answered request (errors are still logged)")
    args = parser.parse_args(argv)
    if not args.host.startswith("127.") and args.host not in ("localhost", "::1"):
        parser.error("--host must be a loopback address")

    os.environ.setdefault("MOTO_AMIS_PATH", merged_amis_file())
    os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    sys.path.insert(0, HERE)
    import emulator_patches  # noqa: E402  (after MOTO_* env is set: moto reads it at import)

    emulator_patches.apply_all()
    fast_backend_lookup()
    cached_action_names()
    if args.no_access_log:
        no_access_log()
    register_regions_endpoint()
    record_first_touch()
    one_request_at_a_time()
    route53_pending_mode(float(os.environ.get("KOPSIBLE_ROUTE53_PENDING_SECONDS") or 0))
    iam_enforcement_mode()

    port = args.port or free_port(args.host)
    url = "http://%s:%d" % (args.host, port)
    if args.port_file:
        with open(args.port_file, "w") as handle:
            handle.write(url + "\n")
    print("EMULATOR_URL=%s" % url, flush=True)

    from moto.server import main as moto_main

    moto_main(["-H", args.host, "-p", str(port)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
