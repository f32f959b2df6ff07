"""tools/fault_proxy.py: request classification, the AWS error shapes (parsed by botocore's own
parsers, as a client would), the seeded fault choice, and forwarding over real sockets to a small
recording HTTP server."""

import http.client
import http.server
import json
import threading
import urllib.request

import botocore.parsers
import pytest

from fault_proxy import FaultProxy, RestOperations, check_mix, classify, client_family, fault_response, parse_mix

AUTH = "AWS4-HMAC-SHA256 Credential=AKIAKOPSIBLETEST0001/20261130/us-east-1/%s/aws4_request, SignedHeaders=host, Signature=0"
OPS = RestOperations()


def headers(service=None, **extra):
    msg = http.client.HTTPMessage()
    if service:
        msg["Authorization"] = AUTH % service
    for name, value in extra.items():
        msg[name.replace("_", "-")] = value
    return msg


@pytest.mark.parametrize(
    "method, path, hdrs, body, expected",
    [
        ("GET", "/2013-04-01/hostedzone", headers("route53"), b"", ("route53", "ListHostedZones", "rest-xml")),
        ("POST", "/2013-04-01/hostedzone", headers("route53"), b"<x/>", ("route53", "CreateHostedZone", "rest-xml")),
        ("GET", "/2013-04-01/hostedzone/Z123/rrset", headers("route53"), b"", ("route53", "ListResourceRecordSets", "rest-xml")),
        ("POST", "/2013-04-01/hostedzone/Z123/rrset/", headers("route53"), b"", ("route53", "ChangeResourceRecordSets", "rest-xml")),
        ("GET", "/2013-04-01/change/C1", headers("route53"), b"", ("route53", "GetChange", "rest-xml")),
        ("GET", "/bucket?versioning", headers("s3"), b"", ("s3", "GetBucketVersioning", "s3")),
        ("GET", "/bucket?list-type=2", headers("s3"), b"", ("s3", "ListObjectsV2", "s3")),
        ("GET", "/bucket", headers("s3"), b"", ("s3", "ListObjects", "s3")),
        ("HEAD", "/bucket", headers("s3"), b"", ("s3", "HeadBucket", "s3")),
        ("PUT", "/bucket/a/b%20c", headers("s3"), b"x", ("s3", "PutObject", "s3")),
        ("PUT", "/bucket/a/b", headers("s3", x_amz_copy_source="/o/k"), b"", ("s3", "CopyObject", "s3")),
        ("PUT", "/bucket/k?partNumber=1&uploadId=u", headers("s3"), b"x", ("s3", "UploadPart", "s3")),
        ("GET", "/", headers("s3"), b"", ("s3", "ListBuckets", "s3")),
        (
            "POST",
            "/",
            headers("sts", Content_Type="application/x-www-form-urlencoded; charset=utf-8"),
            b"Action=GetCallerIdentity&Version=2011-06-15",
            ("sts", "GetCallerIdentity", "query"),
        ),
        (
            "POST",
            "/",
            headers("ec2", Content_Type="application/x-www-form-urlencoded"),
            b"Action=DescribeVpcs&Version=2016-11-15",
            ("ec2", "DescribeVpcs", "ec2"),
        ),
        ("GET", "/?Action=ListRoles&Version=2010-05-08", headers("iam"), b"", ("iam", "ListRoles", "query")),
        ("POST", "/", headers("events", X_Amz_Target="AWSEvents.ListRules"), b"{}", ("events", "ListRules", "json")),
        ("GET", "/moto-api/data.json", headers(), b"", ("moto-api", "/moto-api/data.json", "internal")),
        ("GET", "/bucket/k?X-Amz-Credential=AK%2F20261130%2Fus-east-1%2Fs3%2Faws4_request", headers(), b"", ("s3", "GetObject", "s3")),
    ],
)
def test_classify(method, path, hdrs, body, expected):
    assert classify(method, path, hdrs, body, OPS) == expected


def parse_error(protocol, status, hdrs, body, service):
    """Parse a fault answer with botocore's parser for ``protocol``, as boto3 would (``service`` names
    the case in failure output)."""
    parser = botocore.parsers.create_parser(protocol if protocol != "s3" else "rest-xml")
    parsed = parser.parse({"status_code": status, "headers": dict(hdrs), "body": body}, None)
    return parsed["Error"]


@pytest.mark.parametrize(
    "kind, service, protocol, method, status, code",
    [
        ("throttle", "route53", "rest-xml", "GET", 400, "Throttling"),
        ("throttle", "s3", "s3", "GET", 503, "SlowDown"),
        ("throttle", "ec2", "ec2", "POST", 503, "RequestLimitExceeded"),
        ("throttle", "sts", "query", "POST", 400, "Throttling"),
        ("throttle", "iam", "query", "POST", 400, "Throttling"),
        ("throttle", "events", "json", "POST", 400, "ThrottlingException"),
        ("server", "route53", "rest-xml", "GET", None, None),
        ("server", "s3", "s3", "GET", None, None),
        ("server", "ec2", "ec2", "POST", None, None),
        ("server", "sts", "query", "POST", None, None),
        ("server", "events", "json", "POST", None, None),
    ],
)
def test_fault_shapes_parse_as_aws_errors(kind, service, protocol, method, status, code):
    import random

    for seed in range(8):  # both variants of a server fault (500 and 503)
        got_status, hdrs, body = fault_response(kind, service, "Op", protocol, method, random.Random(seed))
        error = parse_error(protocol if protocol != "s3" else "rest-xml", got_status, hdrs, body, service)
        if kind == "throttle":
            assert (got_status, error["Code"]) == (status, code)
        else:
            expected = {
                500: ("InternalFailure" if protocol == "json" else "InternalError"),
                503: ("Unavailable" if protocol == "ec2" else "ServiceUnavailable"),
            }
            assert error["Code"] == expected[got_status]
        assert error["Message"]


@pytest.mark.parametrize(
    "service, protocol, method, status, code",
    [
        ("route53", "rest-xml", "POST", 403, "AccessDenied"),
        ("s3", "s3", "PUT", 403, "AccessDenied"),
        ("ec2", "ec2", "POST", 403, "UnauthorizedOperation"),
        ("sts", "query", "POST", 403, "AccessDenied"),
        ("autoscaling", "query", "POST", 403, "AccessDenied"),
        ("events", "json", "POST", 400, "AccessDeniedException"),
    ],
)
def test_denied_is_an_authorization_failure_naming_the_operation(service, protocol, method, status, code):
    """``denied``: the code AWS answers a caller without the permission, which botocore does not retry
    (not in botocore's retry codes), and a message naming ``service:Operation``."""
    import random

    from botocore.retries.standard import ThrottledRetryableChecker, TransientRetryableChecker

    got_status, hdrs, body = fault_response("denied", service, "PutThing", protocol, method, random.Random(0))
    error = parse_error(protocol if protocol != "s3" else "rest-xml", got_status, hdrs, body, service)
    assert (got_status, error["Code"]) == (status, code)
    assert "%s:PutThing" % service in error["Message"] or "(%s:PutThing)" % service in error["Message"]
    assert code not in TransientRetryableChecker._TRANSIENT_ERROR_CODES  # botocore's standard retry mode
    assert code not in ThrottledRetryableChecker._THROTTLED_ERROR_CODES


@pytest.mark.parametrize(
    "agent, client",
    [
        ("Boto3/1.44.5 md/Botocore#1.44.8 ua/2.1 os/linux Python/3.13.5 Botocore/1.44.8", "botocore"),
        ("Botocore/1.44.8 Python/3.13.5", "botocore"),
        ("aws-sdk-go-v2/1.39.2 ua/2.1 os/linux lang/go#1.25.5 md/GOOS#linux api/ec2#1.254.1 m/E", "go"),
        ("kops/1.36.2 aws-sdk-go-v2/1.39.2", "go"),
        ("curl/8.14.1", "other"),
        (None, "other"),
    ],
)
def test_client_of_user_agent(agent, client):
    from fault_proxy import client_of

    assert client_of(agent) == client


def test_route53_writes_may_get_prior_request_not_complete():
    import random

    codes = set()
    for seed in range(20):
        status, hdrs, body = fault_response("throttle", "route53", "Op", "rest-xml", "POST", random.Random(seed))
        codes.add(parse_error("rest-xml", status, hdrs, body, "route53")["Code"])
    assert codes == {"Throttling", "PriorRequestNotComplete"}


def test_busy_is_prior_request_not_complete_on_route53_only():
    import random

    status, hdrs, body = fault_response("busy", "route53", "GetChange", "rest-xml", "GET", random.Random(0))
    assert (status, parse_error("rest-xml", status, hdrs, body, "route53")["Code"]) == (400, "PriorRequestNotComplete")
    status, hdrs, body = fault_response("busy", "sts", "GetCallerIdentity", "query", "POST", random.Random(0))
    assert (status, parse_error("query", status, hdrs, body, "sts")["Code"]) == (400, "Throttling")


def test_head_faults_have_no_body():
    import random

    status, _, body = fault_response("throttle", "s3", "HeadBucket", "s3", "HEAD", random.Random(0))
    assert (status, body) == (503, b"")


def test_mix_parsing_and_rules():
    assert parse_mix("throttle=2, drop=1") == {"throttle": 2.0, "drop": 1.0}
    for bad, message in (("throttle", "KIND=WEIGHT"), ("boom=1", "KIND=WEIGHT"), ("drop=0", "positive weight")):
        with pytest.raises(ValueError, match=message):
            parse_mix(bad)
    with pytest.raises(ValueError, match="must be >= 0"):
        check_mix({"drop": -1, "server": 1})
    with pytest.raises(ValueError, match="rate: must be between 0 and 1"):
        FaultProxy("http://127.0.0.1:1", rate=1.5)
    with pytest.raises(ValueError, match="upstream"):
        FaultProxy("127.0.0.1:1")


def decisions(proxy, n, service="route53", operation="ListHostedZones", protocol="rest-xml"):
    return [proxy.decide(service, operation, protocol) for _ in range(n)]


def test_decisions_follow_rate_seed_and_filters():
    proxy = FaultProxy("http://127.0.0.1:1", rate=0.3, seed=5)
    first = decisions(proxy, 2000)
    proxy.configure(seed=5)
    assert decisions(proxy, 2000) == first  # same seed, same faults
    faulted = [k for k in first if k]
    assert 0.26 < len(faulted) / 2000 < 0.34
    shares = {k: faulted.count(k) / len(faulted) for k in set(faulted)}
    assert set(shares) == {"throttle", "server", "drop"}  # default mix: 2:1:1, "lost" off
    assert 0.44 < shares["throttle"] < 0.56
    stats = proxy.stats()
    assert stats["requests"] == 4000 and stats["faults"] == 2 * len(faulted)
    assert stats["operations"]["route53:ListHostedZones"]["faults"] == 2 * len(faulted)
    assert decisions(proxy, 50, "moto-api", "/moto-api/reset", "internal") == [None] * 50
    assert proxy.stats()["internal_requests"] == 50 and proxy.stats()["requests"] == 4000
    proxy.configure(rate=0.0)
    assert decisions(proxy, 200) == [None] * 200
    only_s3 = FaultProxy("http://127.0.0.1:1", rate=1.0, services=["s3"])
    assert decisions(only_s3, 20) == [None] * 20
    assert all(decisions(only_s3, 20, "s3", "ListBuckets", "s3"))
    proxy.reset_stats()
    assert proxy.stats()["requests"] == 0


class Recorder(http.server.BaseHTTPRequestHandler):
    """Upstream stand-in: records each request and answers 200 with a JSON echo."""

    protocol_version = "HTTP/1.1"
    seen = []

    def log_message(self, *args):
        pass

    def _any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Recorder.seen.append((self.command, self.path, dict(self.headers.items()), body))
        data = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Upstream", "yes")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _any


@pytest.fixture
def upstream():
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_forwards_unchanged_and_counts(upstream):
    with FaultProxy(upstream) as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port)
        signed = {"Authorization": AUTH % "route53", "Host": "127.0.0.1:%d" % proxy.port, "X-Amz-Date": "20261130T000000Z"}
        conn.request("POST", "/2013-04-01/hostedzone/Z1/rrset/", body=b"<ChangeBatch/>", headers=signed)
        response = conn.getresponse()
        assert (response.status, response.getheader("X-Upstream"), json.loads(response.read())) == (200, "yes", {"path": "/2013-04-01/hostedzone/Z1/rrset/"})
        # Same connection (keep-alive), chunked upload: forwarded with its length, body intact.
        conn.putrequest("PUT", "/bucket/key", skip_host=True)
        conn.putheader("Host", "127.0.0.1:%d" % proxy.port)
        conn.putheader("Authorization", AUTH % "s3")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        assert conn.getresponse().read()
        conn.request("HEAD", "/bucket", headers={"Authorization": AUTH % "s3"})
        head = conn.getresponse()
        assert head.status == 200 and head.read() == b""
        urllib.request.urlopen(proxy.url + "/moto-api/data.json").read()
        stats = json.loads(urllib.request.urlopen(proxy.url + "/__proxy__/stats").read())
    method, path, hdrs, body = Recorder.seen[0]
    assert (method, path, body) == ("POST", "/2013-04-01/hostedzone/Z1/rrset/", b"<ChangeBatch/>")
    assert hdrs["Host"] == signed["Host"] and hdrs["Authorization"] == signed["Authorization"]
    assert Recorder.seen[1][3] == b"hello world" and Recorder.seen[1][2]["Content-Length"] == "11"
    assert "Transfer-Encoding" not in Recorder.seen[1][2]
    assert stats["operations"] == {
        "route53:ChangeResourceRecordSets": {"requests": 1, "faults": 0, "faults_by_kind": {}, "clients": {"other": 1}},
        "s3:PutObject": {"requests": 1, "faults": 0, "faults_by_kind": {}, "clients": {"other": 1}},
        "s3:HeadBucket": {"requests": 1, "faults": 0, "faults_by_kind": {}, "clients": {"other": 1}},
    }
    assert stats["internal_requests"] == 1 and stats["requests"] == 3


@pytest.mark.parametrize("kind, reaches_upstream", [("drop", False), ("lost", True)])
def test_dropped_connections(upstream, kind, reaches_upstream):
    with FaultProxy(upstream, rate=1.0, mix={kind: 1}) as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        conn.request("GET", "/2013-04-01/hostedzone", headers={"Authorization": AUTH % "route53"})
        with pytest.raises(http.client.RemoteDisconnected):
            conn.getresponse()
        assert proxy.stats()["faults_by_kind"] == {kind: 1}
    assert len(Recorder.seen) == (1 if reaches_upstream else 0)


def test_operations_and_max_faults_choose_what_is_faulted(upstream):
    """operations: only the named ``service:Operation`` is faulted; max_faults: no fault after that many
    (one lost CreateHostedZone response, then its retry answered); a negative max_faults is refused."""
    with FaultProxy(upstream, rate=1.0, mix={"lost": 1}, operations=["route53:CreateHostedZone"], max_faults=1) as proxy:
        answers = []
        for method, path in (("GET", "/2013-04-01/hostedzone"), ("POST", "/2013-04-01/hostedzone"), ("POST", "/2013-04-01/hostedzone")):
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            conn.request(method, path, body=b"<x/>" if method == "POST" else None, headers={"Authorization": AUTH % "route53"})
            try:
                answers.append(conn.getresponse().status)
            except http.client.RemoteDisconnected:
                answers.append("lost")
        assert answers == [200, "lost", 200]
        stats = proxy.stats()
        assert stats["operations"]["route53:CreateHostedZone"] == {"requests": 2, "faults": 1, "faults_by_kind": {"lost": 1}, "clients": {"other": 2}}
        assert stats["operations"]["route53:ListHostedZones"]["faults"] == 0
    assert len(Recorder.seen) == 3  # the lost request reached the emulator too
    with pytest.raises(ValueError, match="max_faults"):
        FaultProxy(upstream, max_faults=-1)


def test_clients_choose_whose_requests_are_faulted(upstream):
    """clients=['botocore']: a boto3 request is denied, a Go SDK request (kops) is forwarded; both counted
    per client; an unknown client name is refused."""
    with FaultProxy(upstream, rate=1.0, mix={"denied": 1}, clients=["botocore"]) as proxy:
        answers = []
        for agent in ("Boto3/1.44.5 Botocore/1.44.8", "aws-sdk-go-v2/1.39.2"):
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            conn.request("GET", "/2013-04-01/hostedzone", headers={"Authorization": AUTH % "route53", "User-Agent": agent})
            answers.append(conn.getresponse().status)
        assert answers == [403, 200]
        entry = proxy.stats()["operations"]["route53:ListHostedZones"]
        assert entry["clients"] == {"botocore": 1, "go": 1}
        assert entry["faults_by_kind"] == {"denied": 1}
    with pytest.raises(ValueError, match="clients"):
        FaultProxy(upstream, clients=["python"])


def test_moto_api_is_never_faulted(upstream):
    with FaultProxy(upstream, rate=1.0) as proxy:
        for _ in range(20):
            assert urllib.request.urlopen(urllib.request.Request(proxy.url + "/moto-api/reset", method="POST")).status == 200
        assert proxy.stats()["faults"] == 0
        urllib.request.urlopen(urllib.request.Request(proxy.url + "/__proxy__/reset", method="POST")).read()
        assert proxy.stats()["internal_requests"] == 0


def test_unreachable_upstream_is_a_502():
    with FaultProxy("http://127.0.0.1:1") as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        conn.request("GET", "/", headers={"Authorization": AUTH % "s3"})
        response = conn.getresponse()
        assert response.status == 502 and b"unreachable" in response.read()
        assert proxy.stats()["upstream_errors"] == 1


def test_latency_delays_each_aws_request_side_by_side(upstream):
    """latency: every AWS request waits before it is forwarded; concurrent requests wait in parallel;
    the emulator's own API does not wait; a negative latency is refused."""
    import concurrent.futures
    import time

    with pytest.raises(ValueError, match="latency"):
        FaultProxy(upstream, latency=-0.1)
    with FaultProxy(upstream, latency=0.3) as proxy:

        def one(_):
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            conn.request("GET", "/bucket/key", headers={"Authorization": AUTH % "s3"})
            return conn.getresponse().status

        start = time.monotonic()
        assert one(0) == 200
        single = time.monotonic() - start
        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(one, range(8))) == [200] * 8
        eight = time.monotonic() - start
        start = time.monotonic()
        urllib.request.urlopen(proxy.url + "/moto-api/data.json").read()
        internal = time.monotonic() - start
        assert proxy.stats()["latency"] == 0.3
        proxy.configure(latency=0)
        start = time.monotonic()
        assert one(0) == 200
        none = time.monotonic() - start
    assert single >= 0.3 and 0.3 <= eight < 2.4, (single, eight)  # eight in a row would take 2.4 s
    assert internal < 0.3 and none < 0.3, (internal, none)
    assert len(Recorder.seen) == 11  # 1 + 8 + the emulator API + 1


@pytest.mark.parametrize(
    "user_agent, family",
    [
        ("Boto3/1.44.5 md/Botocore#1.44.8 ua/2.1 os/linux#6.1 lang/python#3.11.7 cfg/retry-mode#legacy Botocore/1.44.8", "boto3"),
        ("APN/1.0 Ansible/2.19.14 amazon.aws/10.1.2 Boto3/1.44.5 md/Botocore#1.44.8", "boto3"),
        ("APN/1.0 kops/1.36.2 aws-sdk-go-v2/1.39.2 ua/2.1 os/linux lang/go#1.24.6 api/s3#1.88.4", "aws-sdk-go-v2"),
        ("aws-sdk-go/1.55.5 (go1.22; linux; amd64)", "aws-sdk-go"),
        ("curl/8.5.0", "curl"),
        ("", ""),
    ],
)
def test_client_family(user_agent, family):
    assert client_family(user_agent) == family
