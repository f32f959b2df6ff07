#!/usr/bin/env python3
"""Run the Kubernetes half of the local world for one emulator, as a separate process.

Usage::

    PYTHONPATH=tools python -m kubeworld --emulator-url http://127.0.0.1:PORT --prefix 127.1.0 --state-dir DIR

Every kops cluster applied in the emulator's state stores gets a real control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler from .cache/bin, built by
scripts/ensure_kube.sh) on an address ``PREFIX.N`` port 443, and a node agent standing in for its
kubelets; see tools/kubeworld/ and docs/emulator.md. Runs until SIGTERM/SIGINT, then stops them all.
The AWS credentials are read from the usual environment variables.
"""

import argparse
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tools/: kubeworld and harness


def main(argv=None):
    """Parse arguments and watch the emulator until signalled. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulator-url", required=True)
    parser.add_argument("--prefix", required=True, help="first three octets of a loopback /24, e.g. 127.1.0")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    args = parser.parse_args(argv)
    if not args.prefix.startswith("127.") or args.prefix.count(".") != 2:
        parser.error("--prefix must be three octets of the loopback range, e.g. 127.1.0")
    sys.path.insert(0, HERE)
    import boto3
    import botocore.config

    from kubeworld.world import KubeWorld

    clients, lock = {}, threading.Lock()

    def aws(service, region=None):
        # One client per service and region, made once: the node agents and the watch loop call this several times a
        # second, and making a client (a Session, its JSON service models) was 78 % of this process's CPU (py-spy).
        # boto3 clients are thread-safe; the Session they are made from is not, hence the lock.
        key = (service, region or args.region)
        with lock:
            if key not in clients:
                clients[key] = boto3.session.Session().client(
                    service, endpoint_url=args.emulator_url, region_name=key[1], config=botocore.config.Config(user_agent_extra="kopsible-kube-world")
                )
            return clients[key]

    def generation():
        # the emulator's write count (tools/emulator.py is_read): the stand-ins skip their AWS reads while it stands
        # still. Asked afresh each time (a request that may write takes the emulator's request lock, so the count a
        # reader gets is never older than a state it then reads): a number noted before a read and a write after it
        # only cost one more read on the next pass.
        import json
        import urllib.request

        try:
            with urllib.request.urlopen(args.emulator_url + "/moto-api/kopsible/generation", timeout=10) as answer:
                return json.load(answer)["generation"]
        except (OSError, ValueError, KeyError):
            return None

    aws.generation = generation

    def partitions():
        # the partitions the emulator holds state in (GET /moto-api/kopsible/regions): a bucket can only be there
        import types

        from harness.snapshot import regions_and_partitions

        return regions_and_partitions(types.SimpleNamespace(url=args.emulator_url))[1]

    world = KubeWorld(aws, args.prefix, args.state_dir, partitions=partitions)
    signal.signal(signal.SIGTERM, lambda *a: world.stopping.set())
    signal.signal(signal.SIGINT, lambda *a: world.stopping.set())
    print("kube world: watching %s; control planes on %s.N:443; state in %s" % (args.emulator_url, args.prefix, args.state_dir), flush=True)
    try:
        world.run()
    finally:
        world.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
