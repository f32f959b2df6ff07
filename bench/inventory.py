#!/usr/bin/env python
"""Benchmark of the kopsible.kops.kops inventory plugin (issue 8): how its time grows with the fleet.

On a fresh emulator, one cluster is written by the real kops (tools/harness/store_factory.py) and
cloned into stores of 1, 10, 100 and 500 clusters (3 InstanceGroups each). Each store is read by
the plugin several times:

- ``in-process``: ansible's InventoryManager in this process (the plugin's own time, no Ansible
  start-up); S3 requests are counted with a botocore ``before-send`` hook on every client created,
  i.e. one count per HTTP request actually sent (retries included);
- ``subprocess``: ``ansible-inventory --list`` as a user runs it (includes Ansible's start-up).

With ``--compare-workers 1`` (the default) the 10- and 100-cluster stores are also read in-process by
a single worker, the same requests one after another: the difference is what the concurrency buys.

Prints one JSON line per (mode, size, workers): ``{"mode", "clusters", "median_s", "min_s", "runs",
"s3_requests", "workers"}``. ``s3_requests`` is per run (in-process only; the subprocess sends the same).

    .venv/bin/python bench/inventory.py [--sizes 1,10,100,500] [--runs 5] [--workers 16]
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".cache", "collections")
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))

from harness import store_factory  # noqa: E402
from harness.emulator import Emulator  # noqa: E402
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
        handle.write("plugin: kopsible.kops.kops\nstate_stores: [s3://kopsible-bench-%d]\nmax_workers: %d\n"
                     "keyed_groups:\n  - key: cloud_labels.environment\n    prefix: env\n" % (size, workers))
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
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", path, "--list"],
                          capture_output=True, text=True, env=ansible_env(emulator), timeout=900)
    seconds = time.perf_counter() - start
    hosts = json.loads(proc.stdout or "{}").get("_meta", {}).get("hostvars", {}) if proc.returncode == 0 else {}
    if len(hosts) != size:
        # the cause comes first in Ansible's warning; the last lines only say the source was skipped
        raise SystemExit("ansible-inventory found %d hosts, expected %d: %s" % (len(hosts), size, proc.stderr[:4000]))
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100,500")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--subprocess-runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--compare-workers", type=int, default=1,
                        help="also time this pool size in-process (1 = the sequential reader), 0 to skip")
    parser.add_argument("--compare-sizes", default="10,100")
    parser.add_argument("--compare-runs", type=int, default=2)
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
        in_process(write_config(tmp, sizes[0], args.workers), sizes[0], counter)  # warm-up: imports, moto's first calls
        for size in sizes:
            path = write_config(tmp, size, args.workers)
            report_in_process(path, size, args.workers, args.runs, counter)
            timings = [subprocess_run(path, size, emulator) for _ in range(args.subprocess_runs)]
            print(json.dumps({"mode": "subprocess", "clusters": size, "median_s": round(statistics.median(timings), 3),
                              "min_s": round(min(timings), 3), "runs": args.subprocess_runs,
                              "s3_requests": None, "workers": args.workers}), flush=True)
        if args.compare_workers:
            for size in [int(s) for s in args.compare_sizes.split(",") if int(s) in sizes]:
                path = write_config(tmp, size, args.compare_workers)
                report_in_process(path, size, args.compare_workers, args.compare_runs, counter)
    return 0


def report_in_process(path, size, workers, runs, counter):
    """Time ``runs`` in-process reads of ``path`` and print the JSON line."""
    timings, requests = [], set()
    for _ in range(runs):
        seconds, sent = in_process(path, size, counter)
        timings.append(seconds)
        requests.add(sent)
    print(json.dumps({"mode": "in-process", "clusters": size, "median_s": round(statistics.median(timings), 3),
                      "min_s": round(min(timings), 3), "runs": runs,
                      "s3_requests": sorted(requests)[0] if len(requests) == 1 else sorted(requests),
                      "workers": workers}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
