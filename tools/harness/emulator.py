"""Run the local AWS emulator (tools/emulator.py, a patched moto server) as a child process."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCESS_KEY = "AKIAKOPSIBLETEST0001"
SECRET_KEY = "kopsible-emulator-secret-key-not-real-0001"
REGION = "us-east-1"


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
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def reset(self):
        urllib.request.urlopen(urllib.request.Request(self.url + "/moto-api/reset", method="POST"), timeout=30).read()

    def state(self):
        """The emulator's whole state (bytes of /moto-api/data.json)."""
        return urllib.request.urlopen(self.url + "/moto-api/data.json", timeout=30).read()

    def state_json(self):
        return json.loads(self.state())

    def snapshot(self):
        """The emulator's state as canonical JSON bytes, for "nothing was written" comparisons.

        Everything is kept except two things moto creates lazily, per partition, on the first call
        of any service, which are not writes by the caller: IAM's catalogue of AWS-managed policies
        (``arn:<partition>:iam::aws:policy/...``, read-only reference data) and IAM's
        ``AccountSummary`` (counters derived from the rest of the state, which is compared anyway).
        """
        state = self.state_json()
        iam = state.get("iam")
        if isinstance(iam, dict):
            iam.pop("AccountSummary", None)
            for key, items in iam.items():
                if isinstance(items, list):
                    iam[key] = [i for i in items if not (isinstance(i, dict) and ":iam::aws:policy/" in str(i.get("arn", "")))]
        return json.dumps(state, sort_keys=True).encode()

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
        import boto3

        return boto3.client(service, endpoint_url=self.url, region_name=region,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
