#!/usr/bin/env python3
"""`make sandbox` / `make sandbox-stop`: the local world kept running in the background for one's own playbooks.

    scripts/sandbox.py start [--parent-zone example.org] [--dns-address 127.0.0.1] [--port 5000] [--iam enforced|open]
    scripts/sandbox.py status
    scripts/sandbox.py stop

``start`` starts the emulator (the local AWS, on 127.0.0.1:PORT), its DNS face (DNS-ADDRESS:53, answering from the
emulator's Route53 as Route53's name servers do) and the kube world (a real control plane for every cluster applied
in it) as one background process (tools/harness/local_world.py, the launcher `make demo` uses too); creates the
parent zone; with ``--iam enforced`` (the default) makes the kOps guide's operator, IAM user ``kops`` in group
``kops`` with the group's managed policies (role kopsible.kops.kops_iam with its defaults), and turns
the emulator's IAM enforcement on, so that a wrong key, a wrong secret or a call the policies do not allow is refused
as AWS refuses it (``--iam open``: any credentials are accepted, as before); writes ``sandbox.env`` (AWS variables to
``source``: the operator's access key) and ``sandbox-vars.yml`` (module_defaults values and the kops settings, for
``ansible-playbook -e @sandbox-vars.yml``); prints how to use them. Logs and state are
under ``.cache/sandbox/``. It refuses to start when the DNS address or the port is taken, naming the holder.
``stop`` stops every part (the emulator's state is in memory: it is gone afterwards).

Development tooling: it is not part of the collection tarball (galaxy.yml build_ignore).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from harness.emulator import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402
from harness.kops_env import UBUNTU_AMI  # noqa: E402
from harness.local_world import LocalWorld  # noqa: E402
from harness.ports import AddressTaken  # noqa: E402

DEFAULT_DIR = os.path.join(ROOT, ".cache", "sandbox")
HINT = (
    "Stop it first (`make sandbox-stop` for a sandbox, a running `make demo` ends on its own), or choose another "
    "address: make sandbox SANDBOX_DNS=127.0.0.2 SANDBOX_PORT=5001"
)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status", "serve"])
    parser.add_argument("--parent-zone", default="example.org", help="public hosted zone to create (default example.org)")
    parser.add_argument("--dns-address", default="127.0.0.1", help="loopback address of the DNS face, port 53")
    parser.add_argument("--port", type=int, default=5000, help="TCP port of the emulator on 127.0.0.1 (default 5000)")
    parser.add_argument("--dir", default=DEFAULT_DIR, help="logs and state (default .cache/sandbox)")
    parser.add_argument("--out-dir", default=ROOT, help="where sandbox.env and sandbox-vars.yml go (default: the checkout)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds start waits for the sandbox to answer")
    parser.add_argument(
        "--iam",
        choices=["enforced", "open"],
        default="enforced",
        help="enforced (default): only the sandbox's IAM user kops, within its policies; open: any credentials",
    )
    args = parser.parse_args(argv)
    args.dir, args.out_dir = os.path.abspath(args.dir), os.path.abspath(args.out_dir)
    return args


def _path(args, name):
    return os.path.join(args.dir, name)


def running_pid(args):
    """The pid (int) of the sandbox serving ``args.dir``, or None when none runs."""
    try:
        with open(_path(args, "sandbox.pid")) as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def start(args):
    """Start ``serve`` in the background and wait until it is ready; write the env files. Returns the exit code."""
    pid = running_pid(args)
    if pid:
        print("sandbox: already running (pid %d, %s); `make sandbox-stop` stops it" % (pid, args.dir), file=sys.stderr)
        return 1
    try:
        LocalWorld(args.dns_address, args.port, hint=HINT).check_free()
    except AddressTaken as exc:
        print("sandbox: refused: %s" % exc, file=sys.stderr)
        return 1
    os.makedirs(args.dir, exist_ok=True)
    ready = _path(args, "ready.json")
    if os.path.exists(ready):
        os.unlink(ready)
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "serve",
        "--parent-zone",
        args.parent_zone,
        "--dns-address",
        args.dns_address,
        "--port",
        str(args.port),
        "--dir",
        args.dir,
        "--iam",
        args.iam,
    ]
    with open(_path(args, "sandbox.log"), "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + args.timeout
    while not os.path.exists(ready):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(60)
            with open(_path(args, "sandbox.log"), errors="replace") as handle:
                tail = handle.read()[-3000:]
            print("sandbox: did not start (exit %s); %s ends with:\n%s" % (proc.returncode, _path(args, "sandbox.log"), tail), file=sys.stderr)
            return 1
        time.sleep(0.2)
    with open(ready) as handle:
        info = json.load(handle)
    env_file, vars_file = write_files(args, info)
    print(usage(args, info, env_file, vars_file))
    return 0


def serve(args):
    """The background process: run the local world until SIGTERM/SIGINT. Returns the exit code."""
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stopping.set())
    signal.signal(signal.SIGINT, lambda *a: stopping.set())
    with open(_path(args, "sandbox.pid"), "w") as handle:
        handle.write("%d\n" % os.getpid())
    local = LocalWorld(args.dns_address, args.port, log_dir=args.dir, hint=HINT)
    try:
        local.start()
        local.create_parent_zone(args.parent_zone)
        credentials = {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "user": None}
        if args.iam == "enforced":
            credentials = make_operator(local.emulator)
            local.emulator.enforce_iam()
        info = {
            "iam": args.iam,
            "credentials": credentials,
            "pid": os.getpid(),
            "url": local.emulator.url,
            "dns_address": args.dns_address,
            "control_planes": local.world.prefix + ".N:443",
            "parent_zone": args.parent_zone,
            "kops": local.kops_options(),
            "dir": args.dir,
        }
        with open(_path(args, "ready.json.tmp"), "w") as handle:
            json.dump(info, handle, indent=2)
        os.replace(_path(args, "ready.json.tmp"), _path(args, "ready.json"))
        print("sandbox: ready: %s" % json.dumps(info), flush=True)
        while not stopping.wait(1):
            if local.emulator.proc.poll() is not None:
                print("sandbox: the emulator exited (%s); stopping" % local.emulator.proc.returncode, flush=True)
                break
    finally:
        local.stop()
        for name in ("ready.json", "sandbox.pid"):
            try:
                os.unlink(_path(args, name))
            except OSError:
                pass
        print("sandbox: stopped", flush=True)
    return 0


def stop(args, timeout=90):
    """Stop the background process (it stops the control planes, the DNS face and the emulator). Exit code."""
    pid = running_pid(args)
    if not pid:
        print("sandbox: not running (%s)" % args.dir)
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            print("sandbox: stopped (pid %d); logs stay in %s" % (pid, os.path.relpath(args.dir, ROOT)))
            return 0
        time.sleep(0.2)
    print("sandbox: pid %d did not stop within %ds; see %s" % (pid, timeout, _path(args, "sandbox.log")), file=sys.stderr)
    return 1


def status(args):
    pid = running_pid(args)
    if not pid:
        print("sandbox: not running")
        return 1
    with open(_path(args, "ready.json")) as handle:
        info = json.load(handle)
    print(
        "sandbox: running (pid %d): emulator %s, DNS %s:53, control planes %s, parent zone %s"
        % (pid, info["url"], info["dns_address"], info["control_planes"], info["parent_zone"])
    )
    return 0


def make_operator(emulator):
    """The kOps guide's operator in the sandbox's account, made by the collection's own role kopsible.kops.kops_iam with
    its defaults (group ``kops`` with the guide's managed policies, user ``kops``) and an access key, with the emulator's
    root credentials, before IAM enforcement is on. Returns ``{"access_key", "secret_key", "user": the user's ARN}``."""
    from harness.kops_env import kops_operator

    operator = kops_operator(emulator)
    arn = emulator.client("iam").get_user(UserName="kops")["User"]["Arn"]
    return {"access_key": operator["AWS_ACCESS_KEY_ID"], "secret_key": operator["AWS_SECRET_ACCESS_KEY"], "user": arn}


def sandbox_vars(info):
    """The content of sandbox-vars.yml (dict): module_defaults values for the collection's group and for amazon.aws,
    the settings kops needs offline, and the interpreter of this checkout's venv."""
    creds = info["credentials"]
    aws = {"endpoint_url": info["url"], "region": REGION, "access_key": creds["access_key"], "secret_key": creds["secret_key"]}
    return {
        # module_defaults: {group/kopsible.kops.kops: "{{ kopsible_defaults }}", group/aws: "{{ aws_defaults }}"}
        "kopsible_defaults": dict(aws, **info["kops"]),
        "aws_defaults": aws,
        # what differs offline: kops' channel is on GitHub (`none` needs an image), and the parent zone's name
        # servers are the sandbox's DNS face
        "kops_channel": "none",
        "kops_image": UBUNTU_AMI,
        "dns_nameservers": [info["dns_address"]],
        "ansible_python_interpreter": sys.executable,
    }


def write_files(args, info):
    """Write sandbox.env and sandbox-vars.yml into ``args.out_dir``; returns their paths."""
    import yaml

    env = {
        "AWS_ENDPOINT_URL": info["url"],
        "AWS_ACCESS_KEY_ID": info["credentials"]["access_key"],
        "AWS_SECRET_ACCESS_KEY": info["credentials"]["secret_key"],
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "S3_ENDPOINT": info["url"],
        "S3_REGION": REGION,
        # kops by hand refuses a custom S3 endpoint without its own key pair (util/pkg/vfs/s3context.go: "S3_ACCESS_KEY_ID
        # cannot be empty when S3_ENDPOINT is not empty"); the modules set these themselves (kops_runner.kops_environment)
        "S3_ACCESS_KEY_ID": info["credentials"]["access_key"],
        "S3_SECRET_ACCESS_KEY": info["credentials"]["secret_key"],
    }
    kops_env = dict(info["kops"]["kops_env"])
    env_file = os.path.join(args.out_dir, "sandbox.env")
    lines = [
        "# The kopsible sandbox (scripts/sandbox.py), emulator %s; `source sandbox.env`." % info["url"],
        (
            "# The access key of the sandbox's IAM user kops (%s, the kOps guide's managed policies); IAM is enforced: a"
            " wrong key or a call its policies do not allow is refused, as on AWS. Never use real credentials here." % info["credentials"]["user"]
            if info["iam"] == "enforced"
            else "# Dummy credentials: the sandbox runs with --iam open and accepts any. Never use real ones here."
        ),
    ]
    lines += ["export %s=%s" % (k, v) for k, v in env.items()]
    lines += ["# kops by hand: $KOPSIBLE_WRAPPER get clusters --state s3://BUCKET (resolves through the sandbox's DNS)"]
    lines += ["export %s=%s" % (k, v) for k, v in sorted(kops_env.items())]
    lines += ["export KOPSIBLE_WRAPPER=%s" % info["kops"]["kops_binary"]]
    lines += [
        "# ansible-playbook from a directory outside the checkout finds the collection here",
        "export ANSIBLE_COLLECTIONS_PATH=%s" % os.path.join(ROOT, ".cache", "collections"),
        "# a play that talks to a cluster's Kubernetes API (kubernetes.core, rolling_update with a kubeconfig) resolves",
        "# api.<cluster> through the sandbox's DNS face: $KOPSIBLE_WITH_LOCAL_DNS ansible-playbook ...",
        "export KOPSIBLE_WITH_LOCAL_DNS=%s" % os.path.join(ROOT, "tools", "with-local-dns"),
    ]
    with open(env_file, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    vars_file = os.path.join(args.out_dir, "sandbox-vars.yml")
    with open(vars_file, "w") as handle:
        handle.write(
            "# The kopsible sandbox (scripts/sandbox.py): ansible-playbook -e @sandbox-vars.yml PLAYBOOK\n"
            "# A play reads these as\n"
            "#   module_defaults:\n"
            '#     group/kopsible.kops.kops: "{{ kopsible_defaults | default({}) }}"\n'
            '#     group/aws: "{{ aws_defaults | default({}) }}"\n'
        )
        yaml.safe_dump(sandbox_vars(info), handle, default_flow_style=False, sort_keys=False)
    return env_file, vars_file


def usage(args, info, env_file, vars_file):
    rel = lambda path: os.path.relpath(path)  # noqa: E731
    return "\n".join(
        [
            "sandbox: running (pid %d)" % info["pid"],
            "  emulator (the local AWS): %s" % info["url"],
            "  DNS face: %s:53 (answers from the emulator's Route53)" % info["dns_address"],
            "  Kubernetes: a real control plane per applied cluster on %s" % info["control_planes"],
            "  parent zone: %s (created)" % info["parent_zone"],
            (
                "  IAM: enforced; your credentials are IAM user kops's (the kOps guide's managed policies); make sandbox SANDBOX_IAM=open accepts any"
                if info["iam"] == "enforced"
                else "  IAM: open (any credentials are accepted)"
            ),
            "  logs: %s" % rel(args.dir),
            "",
            "Shell tools (aws, boto3, kops through $KOPSIBLE_WRAPPER):  source %s" % rel(env_file),
            "Playbooks:  ansible-playbook -i localhost, -e @%s examples/getting-started/cluster.yml  (docs/getting-started.md)" % rel(vars_file),
            '  (in your plays: module_defaults: {group/kopsible.kops.kops: "{{ kopsible_defaults | default({}) }}", '
            'group/aws: "{{ aws_defaults | default({}) }}"})',
            "From your own directory: source %s (ANSIBLE_COLLECTIONS_PATH points at this checkout's collection)" % rel(env_file),
            "Plays that reach a cluster's Kubernetes API:  $KOPSIBLE_WITH_LOCAL_DNS ansible-playbook ...  (api.<cluster> resolves "
            "through the sandbox's DNS face)",
            "Stop:  make sandbox-stop   (the emulator keeps its state in memory only)",
        ]
    )


def main(argv=None):
    args = parse(argv)
    return {"start": start, "stop": stop, "status": status, "serve": serve}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
