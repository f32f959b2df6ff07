"""docs/getting-started.md as a user follows it: `make sandbox` (scripts/sandbox.py, the script the make target runs),
the page's playbook (examples/getting-started/cluster.yml, included in the page verbatim) run with the page's commands
and ``-e @sandbox-vars.yml`` only, then `make sandbox-stop`:

- in --check from scratch: the emulator's whole state is the same afterwards, and the preview says what it would make;
- for real: the delegation, the versioned bucket, the cluster validated by kops against its real control plane, the
  spot group's mixed instances policy and the scaled worker group, read back from the emulator;
- again: changed=0; then the page's teardown: only the parent zone is left.

The sandbox refuses an address another process holds, naming it (a second sandbox, `make demo`, the emulator port).
The sandbox here runs on its own DNS address and a free port, with its files in a temporary directory, so that the
test workers' DNS faces (tests/conftest.py) and a user's own sandbox are left alone.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from harness.emulator import Emulator
from harness.playbook import PlaybookRun
from harness.ports import ensure_free

pytestmark = pytest.mark.kops

PLAYBOOK = os.path.join("examples", "getting-started", "cluster.yml")
PAGE = os.path.join(ROOT, "docs", "getting-started.md")
SUBDOMAIN = "dev.example.org"
CLUSTER = "c1.dev.example.org"
BUCKET = "dev-example-org-kops-state"


def dns_address():
    """127.0.K.99 with KOPSIBLE_DNS_BASE=K, else 127.0.0.99: no test worker's DNS face (127.0.K.53+N) nor the
    default sandbox (127.0.0.1)."""
    return "127.0.%d.99" % int(os.environ.get("KOPSIBLE_DNS_BASE") or 0)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sandbox_cmd(command, directory, *extra):
    return [sys.executable, os.path.join(ROOT, "scripts", "sandbox.py"), command, "--dir", str(directory), "--out-dir", str(directory)] + list(extra)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A started sandbox: ``(directory, dns address, port, start output)``; stopped afterwards (and the stop checked)."""
    directory = tmp_path_factory.mktemp("sandbox")
    address, port = dns_address(), free_port()
    # `make sandbox` runs this script with these options (make -n prints the command without running it).
    made = subprocess.run(
        ["make", "-n", "sandbox", "SANDBOX_DNS=" + address, "SANDBOX_PORT=%d" % port], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert ("scripts/sandbox.py start --parent-zone example.org --dns-address %s --port %d --iam enforced" % (address, port)) in made
    assert "scripts/sandbox.py stop" in subprocess.run(["make", "-n", "sandbox-stop"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    start = subprocess.run(sandbox_cmd("start", directory, "--dns-address", address, "--port", str(port)), capture_output=True, text=True, timeout=300)
    assert start.returncode == 0, start.stdout + start.stderr
    yield directory, address, port, start.stdout
    # the sandbox's kube world counted no error in its loops or node agents while this file's tests ran (issue 29 item 5:
    # a kubelet stand-in that silently failed a pass would make a proof pass for the wrong reason)
    with open(os.path.join(str(directory), "kube-world", "world.json")) as handle:
        errors = json.load(handle).get("errors") or {}
    assert not errors, "the sandbox's kube world counted errors:\n%s" % "\n".join("%5d x %s" % (n, k) for k, n in sorted(errors.items()))
    stop = subprocess.run(sandbox_cmd("stop", directory), capture_output=True, text=True, timeout=300)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert "sandbox: stopped" in stop.stdout
    # everything it held is free again
    ensure_free(address, 53, "udp")
    ensure_free("127.0.0.1", port, "tcp")
    assert not os.path.exists(os.path.join(str(directory), "sandbox.pid"))


def serve_pid(directory):
    with open(os.path.join(str(directory), "sandbox.pid")) as handle:
        return int(handle.read())


def test_sandbox_refuses_an_occupied_address_naming_the_holder(sandbox, tmp_path):
    directory, address, port, started = sandbox
    assert "DNS face: %s:53" % address in started and "source " in started and "-e @" in started
    pid = serve_pid(directory)
    # a second sandbox on the same DNS address: refused before it starts anything, naming the first one
    second = subprocess.run(sandbox_cmd("start", tmp_path, "--dns-address", address, "--port", str(free_port())), capture_output=True, text=True, timeout=120)
    assert second.returncode == 1
    assert re.search(
        r"sandbox: refused: %s:53/udp is taken by python3? \(pid %d: \S+python\S* \S+scripts/sandbox.py serve " % (re.escape(address), pid), second.stderr
    ), second.stderr
    assert "make sandbox SANDBOX_DNS=" in second.stderr
    assert not os.path.exists(tmp_path / "sandbox.env")
    # its emulator port: named too (the emulator process of the first sandbox)
    other = "127.0.%d.98" % int(os.environ.get("KOPSIBLE_DNS_BASE") or 0)
    taken_port = subprocess.run(sandbox_cmd("start", tmp_path, "--dns-address", other, "--port", str(port)), capture_output=True, text=True, timeout=120)
    assert taken_port.returncode == 1
    assert "127.0.0.1:%d/tcp is taken by python" % port in taken_port.stderr and "tools/emulator.py" in taken_port.stderr
    # `make demo` refuses the same address instead of sharing it
    demo = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "demo.py"), "--dns-address", address], capture_output=True, text=True, timeout=120)
    assert demo.returncode == 1
    assert demo.stderr.startswith("demo: refused: %s:53/udp is taken by python" % address), demo.stderr
    assert "(pid %d:" % pid in demo.stderr


def test_the_page_includes_the_playbook_verbatim():
    with open(os.path.join(ROOT, PLAYBOOK)) as handle:
        playbook = handle.read()
    with open(PAGE) as handle:
        page = handle.read()
    assert "```yaml\n" + playbook + "```\n" in page
    for command in ("make sandbox", "make sandbox-stop", "source sandbox.env", "ansible-playbook -i localhost, -e @sandbox-vars.yml %s" % PLAYBOOK):
        assert command in page, command


def run(directory, *args):
    """``ansible-playbook -i localhost, -e @sandbox-vars.yml cluster.yml ARGS`` as the page says, from a directory
    outside the checkout (the user's own, holding a copy of examples/getting-started/cluster.yml) with only what
    ``source sandbox.env`` exports for Ansible (ANSIBLE_COLLECTIONS_PATH: issue 33 item 9) and no AWS variable in the
    environment (sandbox-vars.yml carries it all); the json callback only makes the results readable here."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KOPS", "S3_", "ANSIBLE_"))}
    with open(os.path.join(str(directory), "sandbox.env")) as handle:
        exported = dict(re.findall(r"^export (ANSIBLE_[A-Z_]+)=(\S+)$", handle.read(), re.M))
    assert exported.get("ANSIBLE_COLLECTIONS_PATH") == os.path.join(ROOT, ".cache", "collections"), exported
    env.update(exported)
    env.update(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1", PATH=os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")]))
    own = os.path.join(str(directory), "own")
    os.makedirs(own, exist_ok=True)
    shutil.copy(os.path.join(ROOT, PLAYBOOK), os.path.join(own, "cluster.yml"))
    cmd = ["ansible-playbook", "-i", "localhost,", "-e", "@" + os.path.join(str(directory), "sandbox-vars.yml"), "cluster.yml"] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=own, timeout=1800)
    result = PlaybookRun(proc.returncode, proc.stdout, proc.stderr)
    assert result.rc == 0, [(n, r.get("msg")) for n, r in result.results if r.get("failed")] or proc.stdout[-3000:] + proc.stderr[-3000:]
    return result


def sandbox_env(directory):
    """The variables sandbox.env exports (dict)."""
    with open(os.path.join(str(directory), "sandbox.env")) as handle:
        return dict(re.findall(r"^export (\w+)=(.*)$", handle.read(), re.M))


def aws_error(call):
    """The AWS error code ``call()`` raised (str), or None when it succeeded."""
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return None


def test_the_sandbox_enforces_iam_for_its_operator_user(sandbox, tmp_path):
    """Issue 33 item 10: sandbox.env's key is IAM user kops's (the kOps guide's group with its managed policies, the
    kops_iam role's defaults); a wrong secret, an unknown key and a call outside the policies are refused as AWS
    refuses them; ``--iam open`` (make sandbox SANDBOX_IAM=open) accepts any key."""
    import boto3

    directory, _address, _port, started = sandbox
    assert "IAM: enforced; your credentials are IAM user kops's" in started
    env = sandbox_env(directory)
    url, key, secret = env["AWS_ENDPOINT_URL"], env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]

    def client(service, access_key=key, secret_key=secret):
        return boto3.client(service, endpoint_url=url, region_name="us-east-1", aws_access_key_id=access_key, aws_secret_access_key=secret_key)

    assert client("sts").get_caller_identity()["Arn"] == "arn:aws:iam::123456789012:user/kops"
    groups = emulator_of(directory).client("iam").list_attached_group_policies(GroupName="kops")["AttachedPolicies"]
    with open(os.path.join(ROOT, "roles", "kops_iam", "defaults", "main.yml")) as handle:
        assert sorted(p["PolicyName"] for p in groups) == sorted(yaml.safe_load(handle)["kops_iam_managed_policies"])
    assert aws_error(lambda: client("s3").list_buckets()) is None
    assert aws_error(lambda: client("s3", secret_key="wrong" + secret).list_buckets()) == "SignatureDoesNotMatch"
    assert aws_error(lambda: client("s3", access_key="AKIAUNKNOWN000000000").list_buckets()) == "InvalidAccessKeyId"
    assert aws_error(lambda: client("ssm").get_parameter(Name="/kops/not-in-the-policies")) == "AccessDeniedException"
    # kops by hand with exactly what `source sandbox.env` exports, as its comment says: kops reads the state store
    # (it refused a custom S3 endpoint without S3_ACCESS_KEY_ID before sandbox.env exported it)
    client("s3").create_bucket(Bucket="by-hand-kops-state")
    by_hand = subprocess.run(
        [env["KOPSIBLE_WRAPPER"], "get", "clusters", "--state", "s3://by-hand-kops-state"],
        env=dict(env, PATH=os.environ["PATH"], HOME=os.environ.get("HOME", "/root")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert by_hand.returncode == 1 and "Error: no clusters found" in by_hand.stderr, by_hand.stderr[-2000:]
    # the sandbox is shared by this file's tests: the getting-started page's teardown expects no bucket of its own left
    client("s3").delete_bucket(Bucket="by-hand-kops-state")

    # the open mode: any key is taken
    address, port = "127.0.%d.97" % int(os.environ.get("KOPSIBLE_DNS_BASE") or 0), free_port()
    opened = subprocess.run(
        sandbox_cmd("start", tmp_path, "--dns-address", address, "--port", str(port), "--iam", "open"), capture_output=True, text=True, timeout=300
    )
    try:
        assert opened.returncode == 0 and "IAM: open (any credentials are accepted)" in opened.stdout, opened.stdout + opened.stderr
        other = sandbox_env(tmp_path)
        anyone = boto3.client("s3", endpoint_url=other["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="AKIAANY", aws_secret_access_key="any")
        assert aws_error(anyone.list_buckets) is None
    finally:
        subprocess.run(sandbox_cmd("stop", tmp_path), capture_output=True, text=True, timeout=300)


def changed(run_result):
    return sum(stats["changed"] for stats in run_result.stats.values())


def emulator_of(directory):
    with open(os.path.join(str(directory), "sandbox.env")) as handle:
        url = re.search(r"^export AWS_ENDPOINT_URL=(\S+)$", handle.read(), re.M).group(1)
    emulator = Emulator()
    emulator.url = url
    return emulator


def test_the_getting_started_playbook_in_the_sandbox(sandbox):
    directory = sandbox[0]
    emulator = emulator_of(directory)
    r53, s3, asg = emulator.client("route53"), emulator.client("s3"), emulator.client("autoscaling")
    with open(os.path.join(str(directory), "sandbox-vars.yml")) as handle:
        assert yaml.safe_load(handle)["kopsible_defaults"]["endpoint_url"] == emulator.url

    # 1. preview of the whole new environment: nothing written, and it says what it would do
    before = emulator.snapshot()
    preview = run(directory, "--check", "--diff")
    assert emulator.snapshot() == before, emulator.snapshot_diff(before, emulator.snapshot())
    assert preview.result("Delegate the subdomain %s" % SUBDOMAIN)["changed"] is True
    assert preview.result("kopsible.kops.state_store : What the state store task would change")["msg"] == "would create bucket " + BUCKET
    assert "would create cluster %s" % CLUSTER in preview.result("What the kops steps would do (preview of a new environment)")["msg"]

    # 2. for real, read back from the emulator
    built = run(directory)
    assert changed(built) >= 5
    zones = {z["Name"]: z["Id"] for z in r53.list_hosted_zones()["HostedZones"]}
    assert set(zones) == {"example.org.", SUBDOMAIN + "."}
    delegation = [
        r for r in r53.list_resource_record_sets(HostedZoneId=zones["example.org."])["ResourceRecordSets"] if r["Name"] == SUBDOMAIN + "." and r["Type"] == "NS"
    ]
    assert sorted(v["Value"].rstrip(".") for v in delegation[0]["ResourceRecords"]) == sorted(
        ns.rstrip(".") for ns in r53.get_hosted_zone(Id=zones[SUBDOMAIN + "."])["DelegationSet"]["NameServers"]
    )
    assert built.result("Delegate the subdomain %s" % SUBDOMAIN)["verified"] is True
    assert s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
    assert "%s/config" % CLUSTER in [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    created = built.result("Create the cluster and apply it (kops create cluster, update cluster --yes, validate cluster)")
    assert created["validation"]["ok"] is True
    groups = {g["AutoScalingGroupName"]: g for g in asg.describe_auto_scaling_groups()["AutoScalingGroups"]}
    assert sorted(groups) == sorted(["control-plane-us-east-1a.masters." + CLUSTER, "nodes-us-east-1a." + CLUSTER, "spot-workers." + CLUSTER])
    workers = groups["nodes-us-east-1a." + CLUSTER]
    assert (workers["MinSize"], workers["MaxSize"], workers["DesiredCapacity"]) == (2, 2, 2)
    spot = groups["spot-workers." + CLUSTER]
    overrides = spot["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == ["t3.medium", "t3a.medium", "t3.large"]
    assert spot["MixedInstancesPolicy"]["InstancesDistribution"]["OnDemandPercentageAboveBaseCapacity"] == 0
    assert (spot["MinSize"], spot["MaxSize"]) == (0, 3)
    assert built.result("What a rolling update would replace")["msg"] == []

    # 3. again: nothing to do
    again = run(directory)
    assert changed(again) == 0, [n for n, r in again.results if r.get("changed")]

    # 4. the page's teardown: cluster, bucket and subdomain gone; the parent zone a user had stays
    torn = run(directory, "-e", "cluster_state=absent")
    assert changed(torn) == 3
    assert [z["Name"] for z in r53.list_hosted_zones()["HostedZones"]] == ["example.org."]
    assert [r["Type"] for r in r53.list_resource_record_sets(HostedZoneId=zones["example.org."])["ResourceRecordSets"] if r["Name"] == SUBDOMAIN + "."] == []
    assert s3.list_buckets()["Buckets"] == []
    assert asg.describe_auto_scaling_groups()["AutoScalingGroups"] == []
