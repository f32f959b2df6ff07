"""Run the local AWS emulator (tools/emulator.py, a patched moto server) as a child process."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from .process import stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCESS_KEY = "AKIAKOPSIBLETEST0001"
SECRET_KEY = "kopsible-emulator-secret-key-not-real-0001"
REGION = "us-east-1"


class Emulator:
    """A moto server on loopback port ``port`` (a free one by default).

    ``url`` is ``http://127.0.0.1:PORT``. :meth:`reset` empties every backend
    (``POST /moto-api/reset``); :meth:`state` returns ``GET /moto-api/data.json`` as bytes. With ``access_log``
    False the log at ``log_path`` holds errors only (``tools/emulator.py --no-access-log``), not a line per request.
    """

    def __init__(self, log_path=None, port=0, access_log=True):
        self.log_path = log_path or os.path.join(tempfile.gettempdir(), "kopsible-emulator.log")
        self.port = port  # 0: a free port chosen by the system
        self.access_log = access_log
        self.proc = None
        self.url = None
        self._clients, self._clients_lock, self._client_session = {}, threading.Lock(), None  # see client()

    def start(self, timeout=60.0):
        """Start the server and wait until it answers; returns self. Raises RuntimeError on failure."""
        fd, port_file = tempfile.mkstemp(prefix="kopsible-emulator-url-")
        os.close(fd)
        os.unlink(port_file)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "emulator.py"), "--port", str(self.port), "--port-file", port_file]
            + ([] if self.access_log else ["--no-access-log"]),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("emulator exited with %s; see %s" % (self.proc.returncode, self.log_path))
            if os.path.exists(port_file) and os.path.getsize(port_file):
                with open(port_file) as handle:
                    self.url = handle.read().strip()
                try:
                    self.state()
                    os.unlink(port_file)
                    return self
                except OSError:
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("emulator did not answer within %ss; see %s" % (timeout, self.log_path))

    def stop(self):
        """Stop the server process (terminate, then kill after 10 s)."""
        stop_process(self.proc)
        self.proc = None

    def reset(self):
        """Empty every backend (``POST /moto-api/reset``); the emulator's fixes stay applied."""
        urllib.request.urlopen(urllib.request.Request(self.url + "/moto-api/reset", method="POST"), timeout=30).read()

    def save_state(self, name):
        """Keep a copy of the emulator's whole state under ``name`` (an emulator extension, tools/emulator.py
        ``saved_states``); returns the number of backends saved (int)."""
        return self._saved_state("save", name)["backends"]

    def restore_state(self, name):
        """Make the emulator's whole state the copy saved under ``name`` again (what was made since is dropped, as by
        :meth:`reset`). Raises urllib.error.HTTPError (404) for a name never saved."""
        return self._saved_state("restore", name)["backends"]

    def drop_state(self, name):
        """Forget the copy saved under ``name`` (no error if there is none)."""
        self._saved_state("drop", name)

    def _saved_state(self, verb, name):
        query = urllib.parse.urlencode({verb: name})
        request = urllib.request.Request("%s/moto-api/kopsible/state?%s" % (self.url, query), method="POST")
        return json.loads(urllib.request.urlopen(request, timeout=120).read())

    def state(self):
        """The emulator's whole state (bytes of /moto-api/data.json)."""
        return urllib.request.urlopen(self.url + "/moto-api/data.json", timeout=30).read()

    def state_json(self):
        """The emulator's whole state as parsed JSON (dict: service -> model -> items)."""
        return json.loads(self.state())

    def snapshot(self):
        """The emulator's state as AWS shows it, as canonical JSON bytes, for "nothing was written" comparisons.

        Read through the AWS APIs in every region and partition the emulator holds state in (see
        :mod:`harness.snapshot`): hosted zones and record sets, VPCs and everything in them, instances
        (with state), Auto Scaling groups, launch template versions, load balancers, target groups, IAM
        roles/profiles/customer-managed policies (every version)/users/groups/access keys, key pairs,
        SQS queues, EventBridge rules, S3 buckets with every object version and delete marker. Deleted
        resources are gone from it (moto's ``/moto-api/data.json`` keeps them). Only what AWS owns is
        left out (AWS-managed IAM policies, public images). Compare two values with ``==``;
        :meth:`snapshot_diff` says where they differ.
        """
        from . import snapshot

        return snapshot.dumps(snapshot.take(self, self.client))

    def snapshot_state(self):
        """The same state as :meth:`snapshot`, as a dict ``{kind: {id: description}}``."""
        return json.loads(self.snapshot())

    def route53_pending(self, seconds):
        """Make Route53 changes stay PENDING for ``seconds`` after they are submitted (0: INSYNC at once, moto's
        default); an emulator test mode (tools/emulator.py ``route53_pending_mode``). Not undone by :meth:`reset`."""
        request = urllib.request.Request("%s/moto-api/kopsible/route53-pending?seconds=%s" % (self.url, seconds), method="POST")
        urllib.request.urlopen(request, timeout=30).read()

    def enforce_iam(self, on=True):
        """Turn IAM enforcement on (or off): every request signed with another key than the harness' own (the
        account's root credentials: the tests' reads, the kube world, the DNS face) must name an IAM user's access key,
        carry a valid signature and be allowed by that user's policies, as on AWS (an emulator test mode, tools/emulator.py
        ``iam_enforcement_mode``; docs/emulator.md "IAM enforcement"). Undone by :meth:`reset`. Returns the mode (dict)."""
        query = urllib.parse.urlencode({"on": "true" if on else "false", "exempt": ACCESS_KEY})
        request = urllib.request.Request("%s/moto-api/kopsible/iam-enforcement?%s" % (self.url, query), method="POST")
        return json.loads(urllib.request.urlopen(request, timeout=30).read())

    def iam_refusals(self):
        """The requests refused since :meth:`enforce_iam` turned the mode on: list of dicts ``{"action": "ec2:CreateVpc",
        "resource": ARN or "*", "principal": the caller's ARN, "code": "AccessDenied" | "InvalidClientTokenId" |
        "SignatureDoesNotMatch"}``, in the order refused (a refusal a client retried or hid is listed too)."""
        return self._iam_enforcement()["denied"]

    def iam_authorized(self):
        """The requests authorized since :meth:`enforce_iam` turned the mode on, counted per access key and client (the
        User-Agent's product): ``{access key id: {"aws-sdk-go-v2": n, "Boto3": m, ...}}``; exempt requests are not counted."""
        return self._iam_enforcement()["allowed"]

    def iam_authorized_requests(self):
        """Each distinct request authorized since :meth:`enforce_iam` turned the mode on (exempt keys' requests not
        included): list of dicts ``{"principal": the caller's ARN, "action": "ec2:CreateVpc", "resource": the ARN the
        caller's policies were evaluated on, or "*", "count": how many times}``."""
        return self._iam_enforcement()["authorized_requests"]

    def _iam_enforcement(self):
        return json.loads(urllib.request.urlopen(self.url + "/moto-api/kopsible/iam-enforcement", timeout=30).read())

    def warm(self, region=REGION):
        """Make moto create what a real account already has (default VPC and subnets, public AMIs,
        per-service defaults) by one read call per service kops uses, so that a later snapshot
        difference can only come from writes."""
        calls = (
            ("ec2", "describe_vpcs"),
            ("ec2", "describe_images"),
            ("autoscaling", "describe_auto_scaling_groups"),
            ("iam", "list_roles"),
            ("sts", "get_caller_identity"),
            ("elbv2", "describe_load_balancers"),
            ("elb", "describe_load_balancers"),
            ("sqs", "list_queues"),
            ("events", "list_rules"),
            ("route53", "list_hosted_zones"),
            ("s3", "list_buckets"),
        )
        for service, method in calls:
            getattr(self.client(service, region), method)()

    def snapshot_diff(self, before, after, limit=20):
        """Where two :meth:`snapshot` values differ, one line per difference (str, so that pytest prints an assertion
        message made of it in full; a list would be cut to about 240 characters): ``'<region>/<service>.<kind>: +id
        ...'`` for a resource made, ``-id`` for one deleted, ``~id path: old -> new`` for one changed. When a region
        appears in ``after`` only, a last line names the requests that first touched it (``first touched: ...``:
        method, path, X-Amz-Target, User-Agent and credential scope, as the emulator noted them since its last
        reset)."""
        from . import snapshot

        before, after = json.loads(before), json.loads(after)
        found = snapshot.diff(before, after, limit)
        regions = {kind.split("/", 1)[0] for kind in after} - {kind.split("/", 1)[0] for kind in before}
        if regions:
            try:
                touches = json.loads(urllib.request.urlopen(self.url + "/moto-api/kopsible/regions?first_touch=1", timeout=30).read())["first_touch"]
            except (OSError, ValueError, KeyError) as exc:
                touches = {"?": repr(exc)}
            named = {key: value for key, value in touches.items() if key.rsplit(" ", 1)[-1] in regions}
            found.append("first touched: %s" % json.dumps(named, sort_keys=True))
        return "\n".join(found)

    def aws_env(self):
        """The environment a user sets to point AWS tools at this endpoint (dict of str)."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def client(self, service, region=REGION):
        """A boto3 client for this endpoint, made once per (endpoint, service, region) and kept: boto3 clients are
        thread-safe, sessions are not, so the clients are made one at a time from one Session (a new Session per call
        loaded botocore's endpoint and service models again: py-spy found a test worker spending a third of its time
        there)."""
        import boto3

        key = (self.url, service, region)
        with self._clients_lock:
            if key not in self._clients:
                self._client_session = self._client_session or boto3.session.Session()
                self._clients[key] = self._client_session.client(
                    service, endpoint_url=self.url, region_name=region, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY
                )
            return self._clients[key]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
