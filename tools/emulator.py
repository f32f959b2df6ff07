#!/usr/bin/env python3
"""Start the local AWS emulator (a moto server) on loopback, as a separate process.

Usage::

    python tools/emulator.py [--host 127.0.0.1] [--port 5000] [--port-file PATH]

With ``--port 0`` a free port is chosen; the chosen URL is printed on stdout as
``EMULATOR_URL=http://127.0.0.1:PORT`` and, with ``--port-file``, written to that file.

Before serving, the launcher applies the fixes in :mod:`emulator_patches` (each one restores an
AWS behaviour that kops relies on and moto gets wrong; see docs/emulator.md) and points moto at
``tools/emulator_amis.json`` so the Ubuntu image of the kops channel exists.
"""
import argparse
import os
import socket
import sys

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
    import json
    import importlib.util

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
    body = json.dumps({account: sorted(regions) for account, regions in found.items()})
    return 200, {"Content-Type": "application/json"}, body


def register_regions_endpoint():
    """Serve :func:`backend_regions` next to moto's own ``/moto-api/`` paths (before the server starts)."""
    from moto.moto_api._internal import urls

    urls.url_paths["{0}/moto-api/kopsible/regions"] = backend_regions


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

    for name in ("create_hosted_zone", "delete_hosted_zone", "change_resource_record_sets",
                 "associate_vpc_with_hosted_zone", "disassociate_vpc_from_hosted_zone"):
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


def main(argv=None):
    """Parse arguments, patch moto, and serve until killed. Returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--port-file")
    args = parser.parse_args(argv)
    if not args.host.startswith("127.") and args.host not in ("localhost", "::1"):
        parser.error("--host must be a loopback address")

    os.environ.setdefault("MOTO_AMIS_PATH", merged_amis_file())
    os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    sys.path.insert(0, HERE)
    import emulator_patches  # noqa: E402  (after MOTO_* env is set: moto reads it at import)

    emulator_patches.apply_all()
    register_regions_endpoint()
    route53_pending_mode(float(os.environ.get("KOPSIBLE_ROUTE53_PENDING_SECONDS") or 0))

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
