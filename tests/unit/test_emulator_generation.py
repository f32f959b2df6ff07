"""The emulator's write count (tools/emulator.py ``is_read``, ``GET /moto-api/kopsible/generation``), which lets the kube
world's stand-ins skip their AWS reads while nothing was written: every request that may write must count. AWS names
its read-only operations Describe*, List* and Get*; REST reads are GET and HEAD."""

import io
import urllib.parse

import pytest
from emulator import is_read


def environ(method, path="/", query="", target=None, form=None):
    body = urllib.parse.urlencode(form).encode() if form else b""
    found = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
    if form:
        found["CONTENT_TYPE"] = "application/x-www-form-urlencoded; charset=utf-8"
    if target:
        found["HTTP_X_AMZ_TARGET"] = target
    return found


@pytest.mark.parametrize(
    "request_environ, read",
    [
        (environ("GET", "/bucket", "list-type=2"), True),  # S3 ListObjectsV2
        (environ("HEAD", "/bucket/key"), True),
        (environ("PUT", "/bucket/key"), False),  # S3 PutObject
        (environ("DELETE", "/bucket/key"), False),
        (environ("POST", "/bucket", "delete"), False),  # S3 DeleteObjects
        (environ("POST", "/2013-04-01/hostedzone/Z1/rrset/"), False),  # Route53 ChangeResourceRecordSets
        (environ("POST", form={"Action": "DescribeInstances", "Version": "2016-11-15"}), True),
        (environ("POST", form={"Action": "RunInstances", "Version": "2016-11-15"}), False),
        (environ("POST", form={"Action": "GetCallerIdentity"}), True),
        (environ("POST", form={"Action": "SetDesiredCapacity"}), False),
        (environ("POST", query="Action=ListUsers"), True),
        (environ("POST", target="AWSEvents.ListRules"), True),
        (environ("POST", target="AmazonSQS.SendMessage"), False),
        (environ("POST", "/moto-api/reset"), False),
        (environ("POST", "/moto-api/kopsible/state", "restore=x"), False),
    ],
)
def test_every_request_that_may_write_counts(request_environ, read):
    body = request_environ["wsgi.input"].getvalue()
    assert is_read(request_environ) is read
    assert request_environ["wsgi.input"].read() == body  # the body is put back for moto
