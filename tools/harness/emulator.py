"""Run the local AWS emulator (tools/emulator.py, a patched moto server) as a child process."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from .process import stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCESS_KEY = "AKIAKOPSIBLETEST0001"
SECRET_KEY = "kopsible-emulator-secret-key-not-real-0001"
REGION = "us-east-1"


def _canonical_items(items):
    """Sorted JSON strings of ``items``: the first item per ``id`` (or ``version_id``), identical id-less items once."""
    seen, kept = set(), set()
    for item in items:
        key = None
        if isinstance(item, dict):
            # moto's dump lists every instance it made: a view object (a listed S3 delete marker, say) appears
            # once per listing with its id (``id``, or ``version_id`` for S3 object versions)
            key = next((item[k] for k in ("id", "version_id") if isinstance(item.get(k), str)), None)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        kept.add(json.dumps(item, sort_keys=True))
    return sorted(kept)


class Emulator:
    """A moto server on a free loopback port.

    ``url`` is ``http://127.0.0.1:PORT``. :meth:`reset` empties every backend
    (``POST /moto-api/reset``); :meth:`state` returns ``GET /moto-api/data.json`` as bytes.
    """

    def __init__(self, log_path=None):
        self.log_path = log_path or os.path.join(tempfile.gettempdir(), "kopsible-emulator.log")
        self.proc = None
        self.url = None

    def start(self, timeout=60.0):
        """Start the server and wait until it answers; returns self. Raises RuntimeError on failure."""
        fd, port_file = tempfile.mkstemp(prefix="kopsible-emulator-url-")
        os.close(fd)
        os.unlink(port_file)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "emulator.py"), "--port", "0", "--port-file", port_file],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
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

    def state(self):
        """The emulator's whole state (bytes of /moto-api/data.json)."""
        return urllib.request.urlopen(self.url + "/moto-api/data.json", timeout=30).read()

    def state_json(self):
        """The emulator's whole state as parsed JSON (dict: service -> model -> items)."""
        return json.loads(self.state())

    def snapshot(self):
        """The emulator's state as canonical JSON bytes, for "nothing was written" comparisons.

        Everything is kept except two things moto creates lazily, per partition, on the first call
        of any service, which are not writes by the caller: IAM's catalogue of AWS-managed policies
        (``arn:<partition>:iam::aws:policy/...``, read-only reference data) and IAM's
        ``AccountSummary`` (counters derived from the rest of the state, which is compared anyway).
        Items are also folded per object and sorted: moto's data.json lists every live model
        instance in creation order, and some reads build fresh view instances of stored objects
        (DescribeSecurityGroupRules makes a new SecurityGroupRule per rule and call, with the same
        id and ``from_port`` -1 instead of null). So per ``id`` the first instance (the stored one,
        made by the write) is kept; items without an id are folded when identical.
        """
        state = self.state_json()
        iam = state.get("iam")
        if isinstance(iam, dict):
            iam.pop("AccountSummary", None)
            for key, items in iam.items():
                if isinstance(items, list):
                    iam[key] = [i for i in items if not (isinstance(i, dict) and ":iam::aws:policy/" in str(i.get("arn", "")))]
        for models in state.values():
            if isinstance(models, dict):
                for key, items in models.items():
                    if isinstance(items, list):
                        models[key] = _canonical_items(items)
        return json.dumps(state, sort_keys=True).encode()

    def warm(self, region=REGION):
        """Make moto create what a real account already has (default VPC and subnets, public AMIs,
        per-service defaults) by one read call per service kops uses, so that a later snapshot
        difference can only come from writes."""
        calls = (("ec2", "describe_vpcs"), ("ec2", "describe_images"), ("autoscaling", "describe_auto_scaling_groups"),
                 ("iam", "list_roles"), ("sts", "get_caller_identity"), ("elbv2", "describe_load_balancers"),
                 ("elb", "describe_load_balancers"), ("sqs", "list_queues"), ("events", "list_rules"),
                 ("route53", "list_hosted_zones"), ("s3", "list_buckets"))
        for service, method in calls:
            getattr(self.client(service, region), method)()

    @staticmethod
    def snapshot_diff(before, after, limit=10):
        """Where two :meth:`snapshot` values differ: list of ``'service.Model: +N/-M items'`` (str)."""
        a, b = json.loads(before), json.loads(after)
        found = []
        for service in sorted(set(a) | set(b)):
            models_a, models_b = a.get(service) or {}, b.get(service) or {}
            if not isinstance(models_a, dict) or not isinstance(models_b, dict):
                if models_a != models_b:
                    found.append(service)
                continue
            for model in sorted(set(models_a) | set(models_b)):
                items_a = [i if isinstance(i, str) else json.dumps(i, sort_keys=True) for i in models_a.get(model) or []]
                items_b = [i if isinstance(i, str) else json.dumps(i, sort_keys=True) for i in models_b.get(model) or []]
                if items_a != items_b:
                    added = [i for i in items_b if i not in items_a]
                    removed = [i for i in items_a if i not in items_b]
                    found.append("%s.%s: +%d/-%d %s" % (service, model, len(added), len(removed), (added or removed)[:1]))
        return found[:limit]

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
        """A boto3 client for this endpoint, from its own Session (safe to call from several threads)."""
        import boto3

        return boto3.session.Session().client(service, endpoint_url=self.url, region_name=region,
                                              aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
