#!/usr/bin/env python3
"""A fault-injecting, request-counting HTTP reverse proxy for the local AWS emulator.

Put it between an AWS client (Ansible modules, boto3, kops) and the emulator by giving the client
the proxy's URL as its endpoint. Every request is forwarded unchanged: method, path, query, body and
every end-to-end header (hop-by-hop ones such as ``Connection`` and ``Transfer-Encoding`` belong to
each connection; a chunked body goes on with its ``Content-Length``), ``Host`` included. SigV4
signs the Host header, so the signature the client made for the proxy's address is what the
emulator receives (and moto checks signatures only once
``INITIAL_NO_AUTH_ACTION_COUNT`` requests have been served, infinite unless that variable is set
(moto/settings.py); the emulator does not set it). With ``rate`` > 0 a seeded random
generator picks requests to fail instead, in the shape AWS uses for the request's protocol:

=============  ======================================================================================
fault kind     what the client receives
=============  ======================================================================================
``throttle``   Route53 (REST-XML): 400 ``<ErrorResponse><Error><Type>Sender</Type><Code>Throttling``
               (or ``PriorRequestNotComplete`` for a Route53 write); S3: 503 ``<Error><Code>SlowDown``;
               EC2: 503 ``<Response><Errors><Error><Code>RequestLimitExceeded``; other query
               services (STS, IAM, Auto Scaling, ELB): 400 ``Throttling``; JSON services:
               400 ``{"__type": "ThrottlingException"}``; REST-JSON: 400 ``x-amzn-ErrorType``.
``server``     500 ``InternalError`` or 503 ``ServiceUnavailable`` (``Unavailable`` for EC2,
               ``InternalFailure`` for JSON services), same shapes.
``drop``       the connection is closed without an answer; the request never reaches the emulator.
``lost``       the request is forwarded (the emulator acts on it) and the connection is then closed
               without an answer: a response lost on the way back. Not in the default mix.
``busy``       Route53: 400 ``PriorRequestNotComplete``; other services: as ``throttle``. Not in the
               default mix (``throttle`` already answers it to half the Route53 writes).
``denied``     an authorization failure no client retries: 403 ``AccessDenied`` (query and REST-XML
               services, S3), 403 ``UnauthorizedOperation`` (EC2), 400 ``AccessDeniedException`` (JSON
               services), each message naming ``service:Operation`` as AWS does. Not in the default mix.
=============  ======================================================================================

``clients`` limits faults to the requests of some clients, told apart by their ``User-Agent``:
``botocore`` (boto3/botocore: the collection's modules and the tests) and ``go`` (the AWS SDK for Go:
kops). Every operation's counters say how many requests came from each client.

With ``latency`` > 0 every AWS request waits that long (each on its own thread, so concurrent requests wait
side by side) before it is forwarded: a model of the round trip to AWS, which the emulator on loopback
answers in a few milliseconds (bench/run.py uses it to measure overhead at a realistic request cost).

Requests under ``/moto-api/`` (the emulator's own reset and state API) are forwarded and counted
apart, never faulted. ``GET /__proxy__/stats`` answers the counters as JSON (see
:meth:`FaultProxy.stats`); ``POST /__proxy__/reset`` zeroes them.

Each AWS request is counted by service and operation: the service is the signing name in the SigV4
credential scope (``Authorization`` header or ``X-Amz-Credential`` query parameter); the operation
is the ``X-Amz-Target`` header (JSON protocols), the ``Action`` parameter (query protocols) or, for
REST protocols, the botocore operation whose HTTP method and ``requestUri`` match the request.

Command line (a pure counting proxy with ``--rate 0``)::

    python tools/fault_proxy.py --upstream http://127.0.0.1:PORT [--rate 0.2] [--seed 1]
        [--mix throttle=2,server=1,drop=1] [--latency-ms 0] [--port 0] [--port-file PATH]
"""

import argparse
import http.client
import http.server
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import urllib.parse
import uuid

DEFAULT_MIX = {"throttle": 2, "server": 1, "drop": 1}
FAULT_KINDS = ("throttle", "server", "drop", "lost", "busy", "denied")
CLIENTS = ("botocore", "go", "other")
INTERNAL_PREFIXES = ("/moto-api/",)
CONTROL_PREFIX = "/__proxy__/"
# Headers that describe one hop, not the request: never forwarded as they came.
HOP_HEADERS = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "content-length",
}
CREDENTIAL = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/,\s]+)/aws4_request")
QUERY_VERSIONS = {"sts": "2011-06-15", "iam": "2010-05-08", "autoscaling": "2011-01-01", "elasticloadbalancing": "2015-12-01", "ec2": "2016-11-15"}


def parse_mix(text):
    """Parse ``'throttle=2,server=1,drop=1'`` into ``{kind: weight}`` (weights are floats >= 0).

    :raises ValueError: an unknown kind, a malformed item, a negative weight, or all weights zero.
    """
    mix = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, sep, weight = item.partition("=")
        if not sep or kind not in FAULT_KINDS:
            raise ValueError("mix: %r is not KIND=WEIGHT with KIND one of %s" % (item, ", ".join(FAULT_KINDS)))
        mix[kind] = float(weight)
    return check_mix(mix)


def check_mix(mix):
    """Return ``mix`` (dict kind -> weight) if every kind is known and the weights are usable.

    :raises ValueError: unknown kind, negative weight, or no positive weight.
    """
    for kind, weight in mix.items():
        if kind not in FAULT_KINDS:
            raise ValueError("mix: unknown fault kind %r (known: %s)" % (kind, ", ".join(FAULT_KINDS)))
        if weight < 0:
            raise ValueError("mix: weight of %s must be >= 0, got %s" % (kind, weight))
    if not any(w > 0 for w in mix.values()):
        raise ValueError("mix: at least one fault kind needs a positive weight")
    return dict(mix)


class RestOperations:
    """Maps a REST request (method, path, query) to its botocore operation name, per service.

    Built lazily from botocore's service models: each operation's ``http.method`` and
    ``http.requestUri`` (``/2013-04-01/hostedzone/{Id}/rrset/``, ``/{Bucket}?versioning``,
    ``/{Bucket}/{Key+}``) becomes a pattern, and its required query-string and header members
    become conditions; among the matches the most specific wins (most literal characters, then
    most conditions), so ``GET /b?versioning`` is GetBucketVersioning rather than ListObjects and
    a PUT with ``x-amz-copy-source`` is CopyObject rather than PutObject.
    Unknown services or requests map to ``'METHOD /first-path-element'``.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._tables = {}
        self._session = None

    def _table(self, service):
        with self._lock:
            if service not in self._tables:
                self._tables[service] = self._build(service)
            return self._tables[service]

    def _build(self, service):
        try:
            import botocore.session

            if self._session is None:
                self._session = botocore.session.get_session()
            model = self._session.get_service_model(service)
        except Exception:  # no botocore, or no model of that name: fall back to a generic name
            return None
        table = []
        for name in model.operation_names:
            operation = model.operation_model(name)
            http = operation.http
            path, _, query = http.get("requestUri", "/").partition("?")
            literal = len(re.sub(r"\{[^}]*\}", "", path))
            pattern = re.escape(path.rstrip("/") or "/")
            pattern = re.sub(r"\\\{[^}]*?\\\+\\\}", ".+", pattern)
            pattern = re.sub(r"\\\{[^}]*?\\\}", "[^/]+", pattern)
            required = [tuple(item.split("=", 1)) if "=" in item else (item, None) for item in query.split("&") if item]
            headers = []
            shape = operation.input_shape
            for member in shape.required_members if shape is not None else ():
                where = shape.members[member].serialization
                if where.get("location") == "querystring":
                    required.append((where.get("name", member), None))
                elif where.get("location") == "header":
                    headers.append(where.get("name", member).lower())
            regex = re.compile("^" + pattern + ("/?$" if pattern != "/" else "$"))
            table.append((http.get("method", "GET"), regex, required, headers, (literal, len(required) + len(headers)), name))
        return table

    def operation(self, service, method, path, query, headers=None):
        """The operation name (str) of a REST request to ``service`` (a botocore service name).

        :param query: dict of query parameters (``urllib.parse.parse_qs`` shape, keep_blank_values).
        :param headers: the request's header names, lowercase (a set); required header and query
            members tell apart operations on the same URI (PutObject, CopyObject, UploadPart).
        """
        best = None
        headers = headers or set()
        for op_method, regex, required, required_headers, rank, name in self._table(service) or ():
            if op_method != method or not regex.match(path):
                continue
            if any(key not in query or (value is not None and value not in query[key]) for key, value in required):
                continue
            if any(header not in headers for header in required_headers):
                continue
            if best is None or rank > best[0]:
                best = (rank, name)
        if best:
            return best[1]
        first = path.strip("/").split("/", 1)[0]
        return "%s /%s" % (method, first) if first else "%s /" % method


def classify(method, path, headers, body, rest_operations=None):
    """Identify an AWS request: returns ``(service, operation, protocol)`` (three str).

    ``service`` is the SigV4 signing name (``route53``, ``s3``, ``sts``, ``ec2``...), ``'moto-api'``
    for the emulator's own API, or ``'unsigned'``. ``protocol`` is one of ``json``, ``rest-json``,
    ``query``, ``ec2``, ``rest-xml``, ``s3``, ``internal``.

    :param headers: a mapping with case-insensitive ``get`` (e.g. ``http.client.HTTPMessage``).
    :param body: the request body (bytes).
    """
    split = urllib.parse.urlsplit(path)
    if split.path.startswith(INTERNAL_PREFIXES):
        return "moto-api", split.path, "internal"
    query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
    found = CREDENTIAL.search(headers.get("Authorization") or "") or CREDENTIAL.search("Credential=" + (query.get("X-Amz-Credential") or [""])[0])
    service = found.group(2) if found else "unsigned"
    target = headers.get("X-Amz-Target")
    if target:
        return service, target.rsplit(".", 1)[-1], "json"
    action = (query.get("Action") or [None])[0]
    content_type = (headers.get("Content-Type") or "").lower()
    if action is None and method == "POST" and "x-www-form-urlencoded" in content_type:
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        action = (form.get("Action") or [None])[0]
    if action:
        return service, action, "ec2" if service == "ec2" else "query"
    rest_operations = rest_operations or RestOperations()
    operation = rest_operations.operation(service, method, urllib.parse.unquote(split.path), query, {name.lower() for name in headers.keys()})
    if service == "s3":
        return service, operation, "s3"
    protocol = "rest-xml" if service in ("route53", "cloudfront") else "rest-json"
    return service, operation, protocol


def client_family(user_agent):
    """The SDK a request came from, by its User-Agent (str): ``boto3`` (botocore; Ansible's AWS modules and
    plugins), ``aws-sdk-go-v2`` (kops), ``aws-sdk-go`` (v1), else the User-Agent's first product ('' when none).
    SDKs put other products first at times (APN/1.0 ... for partner tools), so every product is looked at."""
    products = [p.split("/", 1)[0].lower() for p in user_agent.split()]
    for family, names in (("boto3", ("boto3", "botocore")), ("aws-sdk-go-v2", ("aws-sdk-go-v2",)), ("aws-sdk-go", ("aws-sdk-go",))):
        if any(p in names for p in products):
            return family
    return user_agent.split("/", 1)[0].split(" ", 1)[0]


def client_of(user_agent):
    """The client kind of a request (str, one of ``CLIENTS``) from its ``User-Agent`` header (str or None):
    ``botocore`` (boto3), ``go`` (the AWS SDK for Go, v2 or v1: kops), else ``other`` (see :func:`client_family`)."""
    family = client_family(user_agent or "")
    return {"boto3": "botocore", "aws-sdk-go-v2": "go", "aws-sdk-go": "go"}.get(family, "other")


def _xml(text):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + text).encode()


def fault_response(kind, service, operation, protocol, method, rng):
    """Build the AWS error answer for a ``throttle``, ``busy`` or ``server`` fault.

    :param rng: a ``random.Random`` (chooses between equivalent codes, e.g. 500 or 503).
    :returns: ``(status int, headers list of (name, value), body bytes)``.
    """
    request_id = str(uuid.UUID(int=rng.getrandbits(128)))
    if kind == "denied":
        return _denied_response(service, operation, protocol, method, request_id)
    busy = kind == "busy" and service == "route53"
    if kind in ("throttle", "busy"):
        status, code, message, sender = 400, "Throttling", "Rate exceeded", "Sender"
        if protocol == "s3":
            status, code, message = 503, "SlowDown", "Please reduce your request rate."
        elif protocol == "ec2":
            status, code, message = 503, "RequestLimitExceeded", "Request limit exceeded."
        elif protocol in ("json", "rest-json"):
            code = "ThrottlingException"
        elif busy or (service == "route53" and method in ("POST", "DELETE") and rng.random() < 0.5):
            code = "PriorRequestNotComplete"
            message = "The request was rejected because Route 53 was still processing a prior request."
    else:
        sender = "Receiver"
        if rng.random() < 0.5:
            status, code, message = 500, "InternalError", "We encountered an internal error. Please try again."
            if protocol in ("json", "rest-json"):
                code = "InternalFailure"
        else:
            status, code, message = 503, "ServiceUnavailable", "Service is unavailable. Please try again."
            if protocol == "ec2":
                code = "Unavailable"
    headers = [("x-amzn-RequestId", request_id)]
    if protocol in ("json", "rest-json"):
        headers += [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", code)]
        body = json.dumps({"__type": code, "message": message}).encode()
    elif protocol == "s3":
        headers = [("x-amz-request-id", request_id[:16]), ("Content-Type", "application/xml")]
        body = _xml(
            "<Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId><HostId>%s</HostId></Error>" % (code, message, request_id[:16], request_id)
        )
    elif protocol == "ec2":
        headers.append(("Content-Type", "text/xml"))
        body = _xml(
            "<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>" % (code, message, request_id)
        )
    else:
        namespace = (
            "https://route53.amazonaws.com/doc/2013-04-01/"
            if service == "route53"
            else "https://%s.amazonaws.com/doc/%s/" % (service, QUERY_VERSIONS.get(service, "2011-01-01"))
        )
        headers.append(("Content-Type", "text/xml"))
        body = _xml(
            '<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error>'
            "<RequestId>%s</RequestId></ErrorResponse>" % (namespace, sender, code, message, request_id)
        )
    if method == "HEAD":
        body = b""  # a HEAD answer has no body; botocore then takes the status as the error code
    return status, headers, body


def _denied_response(service, operation, protocol, method, request_id):
    """The AWS answer to a caller without the permission for ``service:operation`` (status, headers, body)."""
    message = "User: arn:aws:iam::123456789012:user/fault-proxy is not authorized to perform: %s:%s" % (service, operation)
    headers = [("x-amzn-RequestId", request_id)]
    if protocol in ("json", "rest-json"):
        status, code = 400, "AccessDeniedException"
        headers += [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", code)]
        body = json.dumps({"__type": code, "message": message}).encode()
    elif protocol == "s3":
        status = 403
        headers = [("x-amz-request-id", request_id[:16]), ("Content-Type", "application/xml")]
        body = _xml("<Error><Code>AccessDenied</Code><Message>%s</Message><RequestId>%s</RequestId></Error>" % (message, request_id[:16]))
    elif protocol == "ec2":
        status = 403
        headers.append(("Content-Type", "text/xml"))
        body = _xml(
            "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to"
            " perform this operation (%s:%s).</Message></Error></Errors><RequestID>%s</RequestID></Response>" % (service, operation, request_id)
        )
    else:
        status = 403
        namespace = (
            "https://route53.amazonaws.com/doc/2013-04-01/"
            if service == "route53"
            else "https://%s.amazonaws.com/doc/%s/" % (service, QUERY_VERSIONS.get(service, "2011-01-01"))
        )
        headers.append(("Content-Type", "text/xml"))
        body = _xml(
            '<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>%s</Message>'
            "</Error><RequestId>%s</RequestId></ErrorResponse>" % (namespace, message, request_id)
        )
    if method == "HEAD":
        body = b""
    return status, headers, body


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    timeout = 120  # idle keep-alive connections end after this many seconds

    def log_message(self, fmt, *args):  # quiet: counters tell the story
        pass

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self):
        proxy = self.server.proxy
        body = self._read_body()
        if self.path.startswith(CONTROL_PREFIX):
            return self._control(proxy)
        service, operation, protocol = classify(self.command, self.path, self.headers, body, proxy.rest_operations)
        agent = self.headers.get("User-Agent") or ""
        if protocol != "internal":
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            proxy.count_token(service, self.headers.get("X-Amz-Security-Token") or (query.get("X-Amz-Security-Token") or [""])[0], client_family(agent))
        kind = proxy.decide(service, operation, protocol, client_of(agent))
        if kind in ("throttle", "busy", "server", "denied"):
            status, headers, data = fault_response(kind, service, operation, protocol, self.command, proxy.rng_for_fault())
            return self._answer(status, headers, data, content_length=len(data))
        if kind == "drop":
            return self._drop()
        if proxy.latency > 0 and protocol != "internal":
            time.sleep(proxy.latency)
        try:
            status, reason, headers, data = self._forward(proxy, body)
        except OSError as exc:
            proxy.count_upstream_error()
            data = ("fault_proxy: upstream %s unreachable: %s" % (proxy.upstream, exc)).encode()
            return self._answer(502, [("Content-Type", "text/plain")], data, content_length=len(data))
        if kind == "lost":
            return self._drop()
        length = dict((k.lower(), v) for k, v in headers).get("content-length") if self.command == "HEAD" else len(data)
        self._answer(status, headers, data, reason=reason, content_length=length)

    def _forward(self, proxy, body):
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=proxy.upstream_timeout)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_HEADERS:
                    conn.putheader(name, value)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            response = conn.getresponse()
            data = response.read()
            headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_HEADERS]
            return response.status, response.reason, headers, data
        finally:
            conn.close()

    def _answer(self, status, headers, data, reason=None, content_length=None):
        self.send_response_only(status, reason)
        for name, value in headers:
            self.send_header(name, value)
        if content_length is not None:
            self.send_header("Content-Length", str(content_length))
        self.end_headers()
        if self.command != "HEAD" and data:
            self.wfile.write(data)
        self.wfile.flush()

    def _drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _control(self, proxy):
        path = urllib.parse.urlsplit(self.path).path
        if path == CONTROL_PREFIX + "stats" and self.command == "GET":
            data = json.dumps(proxy.stats(), sort_keys=True, indent=1).encode()
        elif path == CONTROL_PREFIX + "reset" and self.command == "POST":
            proxy.reset_stats()
            data = b'{"reset": true}'
        else:
            data = b'{"error": "unknown proxy control path or method"}'
            return self._answer(404, [("Content-Type", "application/json")], data, content_length=len(data))
        self._answer(200, [("Content-Type", "application/json")], data, content_length=len(data))

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _handle


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FaultProxy:
    """A threaded reverse proxy on ``host``:``port`` (0: a free port) in front of ``upstream``.

    :param upstream: the emulator's URL, ``http://HOST:PORT`` (str).
    :param rate: probability (0.0-1.0) that an AWS request is faulted; 0 makes a counting proxy.
    :param seed: seed of the random generator (int): the same request sequence gets the same faults.
    :param mix: ``{kind: weight}`` over ``throttle``, ``server``, ``drop``, ``lost``, ``busy`` (default
        ``DEFAULT_MIX``: throttle 2, server 1, drop 1).
    :param services: when given, only requests to these signing names (e.g. ``{'route53'}``) are faulted.
    :param operations: when given, only these operations (``service:Operation``, e.g.
        ``{'route53:CreateHostedZone'}``, as in :meth:`stats`) are faulted.
    :param max_faults: when given, at most this many faults are injected in all (e.g. 1: lose one response,
        then answer every retry); :meth:`reset_stats` counts afresh.
    :param latency: seconds (float, >= 0) every forwarded AWS request waits first (a modelled round trip).
    :param clients: when given, only requests of these clients (``botocore``, ``go``, ``other``: see
        :func:`client_of`) are faulted.
    :raises ValueError: a rate outside 0..1, a negative latency, a bad mix or an unknown client.

    ``url`` is set by :meth:`start`. Use as a context manager or ``start()``/``stop()``.
    """

    def __init__(
        self,
        upstream,
        rate=0.0,
        seed=0,
        mix=None,
        services=None,
        host="127.0.0.1",
        port=0,
        upstream_timeout=120.0,
        latency=0.0,
        operations=None,
        max_faults=None,
        clients=None,
    ):
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError("upstream: expected http://HOST:PORT, got %r" % upstream)
        self.upstream = upstream.rstrip("/")
        self.upstream_host, self.upstream_port = parsed.hostname, parsed.port or 80
        self.upstream_timeout = upstream_timeout
        self.host, self.port = host, port
        self.services = set(services) if services else None
        self.operations = set(operations) if operations else None
        self.clients = set(clients) if clients else None
        if self.clients and not self.clients <= set(CLIENTS):
            raise ValueError("clients: expected some of %s, got %s" % (", ".join(CLIENTS), ", ".join(sorted(self.clients))))
        if max_faults is not None and max_faults < 0:
            raise ValueError("max_faults: must be 0 or more, got %s" % max_faults)
        self.max_faults = max_faults
        self.rest_operations = RestOperations()
        self._lock = threading.Lock()
        self.latency = 0.0
        self.configure(rate, seed, mix, latency)
        self.reset_stats()
        self._server = self._thread = None
        self.url = None

    def configure(self, rate=None, seed=None, mix=None, latency=None):
        """Change the fault rate, reseed the generator, change the mix and/or the latency (seconds) between runs.

        :raises ValueError: a rate outside 0..1, a negative latency or a bad mix.
        """
        with self._lock:
            if latency is not None:
                if not latency >= 0:
                    raise ValueError("latency: must be 0 seconds or more, got %s" % latency)
                self.latency = float(latency)
            if rate is not None:
                if not 0.0 <= rate <= 1.0:
                    raise ValueError("rate: must be between 0 and 1, got %s" % rate)
                self.rate = float(rate)
            if seed is not None:
                self.seed = seed
                self._rng = random.Random(seed)
            if mix is not None or not hasattr(self, "mix"):
                self.mix = check_mix(mix if mix is not None else DEFAULT_MIX)

    def reset_stats(self):
        """Zero every counter."""
        with self._lock:
            self._operations = {}
            self._tokens = {}
            self._internal = 0
            self._upstream_errors = 0

    def decide(self, service, operation, protocol, client="other"):
        """Count one request of ``client`` and choose its fate: ``None`` (forward) or a fault kind (str)."""
        with self._lock:
            if protocol == "internal":
                self._internal += 1
                return None
            entry = self._operations.setdefault("%s:%s" % (service, operation), {"requests": 0, "faults": {}, "clients": {}})
            entry["requests"] += 1
            entry["clients"][client] = entry["clients"].get(client, 0) + 1
            if self.rate <= 0 or (self.services is not None and service not in self.services):
                return None
            if self.clients is not None and client not in self.clients:
                return None
            if self.operations is not None and "%s:%s" % (service, operation) not in self.operations:
                return None
            if self.max_faults is not None and self._faults_so_far() >= self.max_faults:
                return None
            if self._rng.random() >= self.rate:
                return None
            kinds = [k for k in self.mix if self.mix[k] > 0]
            kind = self._rng.choices(kinds, weights=[self.mix[k] for k in kinds])[0]
            entry["faults"][kind] = entry["faults"].get(kind, 0) + 1
            return kind

    def count_token(self, service, token, agent=""):
        """Count one AWS request of ``service`` by the STS session token it carried (``''``: none; the
        ``X-Amz-Security-Token`` header or query parameter SigV4 clients send with temporary credentials) and
        the client that sent it (``agent``: :func:`client_family` of its User-Agent)."""
        with self._lock:
            per_service = self._tokens.setdefault(token or "", {}).setdefault(agent, {})
            per_service[service] = per_service.get(service, 0) + 1

    def _faults_so_far(self):
        return sum(sum(entry["faults"].values()) for entry in self._operations.values())

    def rng_for_fault(self):
        """A generator for the details of one fault, drawn from the seeded one (thread-safe)."""
        with self._lock:
            return random.Random(self._rng.getrandbits(64))

    def count_upstream_error(self):
        with self._lock:
            self._upstream_errors += 1

    def stats(self):
        """The counters as a dict (JSON-ready)::

            {"rate": 0.2, "seed": 1, "mix": {...}, "upstream": url,
             "requests": N, "faults": F, "faults_by_kind": {"throttle": n, ...},
             "services": {"route53": {"requests": n, "faults": f}, ...},
             "operations": {"route53:ListHostedZones": {"requests": n, "faults": f,
                                                        "faults_by_kind": {...},
                                                        "clients": {"botocore": n, "go": n}}, ...},
             "internal_requests": n, "upstream_errors": n, "latency": seconds,
             "session_tokens": {"<token, or '' for none>": {"<User-Agent product>": {"s3": n, ...}}}}

        ``requests`` counts every attempt that reached the proxy (a retried call counts once per
        attempt); ``internal_requests`` the emulator-API calls (``/moto-api/``), not in ``requests``.
        """
        with self._lock:
            operations, services, by_kind = {}, {}, {}
            for key, entry in sorted(self._operations.items()):
                faults = sum(entry["faults"].values())
                operations[key] = {"requests": entry["requests"], "faults": faults, "faults_by_kind": dict(entry["faults"]), "clients": dict(entry["clients"])}
                service = services.setdefault(key.split(":", 1)[0], {"requests": 0, "faults": 0})
                service["requests"] += entry["requests"]
                service["faults"] += faults
                for kind, count in entry["faults"].items():
                    by_kind[kind] = by_kind.get(kind, 0) + count
            return {
                "rate": self.rate,
                "seed": self.seed,
                "latency": self.latency,
                "mix": dict(self.mix),
                "upstream": self.upstream,
                "requests": sum(o["requests"] for o in operations.values()),
                "faults": sum(by_kind.values()),
                "faults_by_kind": by_kind,
                "services": services,
                "operations": operations,
                "internal_requests": self._internal,
                "upstream_errors": self._upstream_errors,
                "session_tokens": {token: {agent: dict(counts) for agent, counts in agents.items()} for token, agents in self._tokens.items()},
            }

    def start(self):
        """Bind and serve in a daemon thread; sets ``url`` and returns self."""
        self._server = _Server((self.host, self.port), _Handler)
        self._server.proxy = self
        self.port = self._server.server_address[1]
        self.url = "http://%s:%d" % (self.host, self.port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop serving and close the listening socket (open keep-alive threads end on their own)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
            self._server = self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    """Run the proxy until interrupted; prints ``PROXY_URL=...`` (and the stats on exit). Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the emulator's URL, http://HOST:PORT")
    parser.add_argument("--rate", type=float, default=0.0, help="fault probability per AWS request (0: count only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mix",
        default=",".join("%s=%g" % kv for kv in DEFAULT_MIX.items()),
        help="fault weights over throttle, server, drop, lost, busy, e.g. throttle=2,server=1,drop=1",
    )
    parser.add_argument("--services", help="comma-separated signing names to fault (default: all)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="wait this long before forwarding each AWS request")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the proxy URL to this file once listening")
    args = parser.parse_args(argv)
    try:
        proxy = FaultProxy(
            args.upstream,
            rate=args.rate,
            seed=args.seed,
            mix=parse_mix(args.mix),
            services=args.services.split(",") if args.services else None,
            host=args.host,
            port=args.port,
            latency=args.latency_ms / 1000.0,
        )
    except ValueError as exc:
        parser.error(str(exc))
    signal.signal(signal.SIGTERM, _interrupt)
    proxy.start()
    print("PROXY_URL=%s" % proxy.url, flush=True)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as handle:
            handle.write(proxy.url)
        os.replace(args.port_file + ".tmp", args.port_file)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        proxy.stop()
        json.dump(proxy.stats(), sys.stdout, indent=1, sort_keys=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
