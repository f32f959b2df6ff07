"""The bad-input matrix: malformed inputs generated with hypothesis (tools/harness/inputs.py) for every
module. Every SAMPLE_EVERY-th input (and the valid base) runs through ONE ansible-playbook per module (a task per
input, ignore_errors), so the controller's part stays proven (module_defaults, the action group, the argument
checks ansible-core makes before the module); the others run through the module's real ``main()`` in this process
(tools/harness/in_process.py: the same argument spec, rules and fail_json, with the arguments the play would give,
without a module process per input).

Each input must fail through fail_json naming its option (the option name as a whole word in ``msg``) and saying why
(its category's pattern in REASONS: the rule's own words, so that a case refused for another reason shows), without a
traceback (no "Traceback", "MODULE FAILURE" or ansible-core's "Module failed:" of an uncaught exception), without running kops (no
``kops_invocations``), and the run must write nothing: the emulator's snapshot and every object
version of the state-store bucket (bodies included) are identical before and after.

The kops modules run the real kops (.cache/bin/kops) against a real state-store bucket, without the
local DNS: every input must fail before kops, so none needs a DNS lookup. The figures go to
out/bad-input-matrix.json as ``{module: {tried, failed_cleanly}}``.
"""

import json
import os

import pytest

from conftest import BUCKET, ROOT, UBUNTU_AMI
from harness import in_process, inputs
from harness.kops_env import artifact_mirror, kops_binary
from harness.playbook import run_playbook

GOSSIP = "c1.k8s.local"  # an existing cluster (spec only) for the instance-group and rolling-update matrices
NEW = "matrix.k8s.local"  # a cluster that does not exist: an accepted input would create it
REPORT = os.path.join(ROOT, "out", "bad-input-matrix.json")
SAMPLE_EVERY = 8  # one input in SAMPLE_EVERY goes through ansible-playbook


def kops_options():
    """kops options for module_defaults, without the DNS wrapper: the real binary, kops' offline settings."""
    return {
        "kops_binary": kops_binary(),
        "state_store": "s3://" + BUCKET,
        "kops_env": {"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest"},
    }


def known_options(module):
    """Option names of ``module`` (so that generated "unknown" options really are unknown)."""
    import importlib

    spec = importlib.import_module("ansible_collections.kopsible.kops.plugins.modules." + module).argument_spec()
    names = set(spec)
    for option in spec.values():
        names.update(option.get("aliases") or [])
    return names


def bucket_state(emulator):
    """Every object version of the state-store bucket: ``{(key, version id): (etag, body bytes)}``."""
    s3 = emulator.client("s3")
    state = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
        for version in page.get("Versions", []):
            body = s3.get_object(Bucket=BUCKET, Key=version["Key"], VersionId=version["VersionId"])["Body"].read()
            state[(version["Key"], version["VersionId"])] = (version["ETag"], body)
        for marker in page.get("DeleteMarkers", []):
            state[(marker["Key"], marker["VersionId"])] = ("delete marker", b"")
    return state


def make_bucket(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})


def names(field, message):
    """True when ``message`` holds the option name ``field`` as a whole word (``name`` is not named by
    ``cluster_name`` or ``names``; ``spec.foo`` and ``zones[0]`` name ``spec`` and ``zones``)."""
    import re

    return re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(field), message) is not None


# Why each category fails, as its message must say it: (category label pattern, message pattern), first match wins.
# A category no entry covers fails the matrix ("no reason listed"), so a new category says why it must fail.
DNS_CHARACTERS = r"may hold only a-z, 0-9 and '-'|must be lowercase letters, digits, '-' and '\.'|must be a lowercase RFC 1123 subdomain"
NOT_ONE_OF = r"must be one of: |is not one of "
REASONS = [
    (r"unknown option|unknown rolling_update key", r"^Unsupported parameters for \(kopsible\.kops\.\w+\) module: "),
    (r"^wrong type \((int|bool|dict|list)\)$|instances not a list", r"is of type \w+ .*unable to convert to (int|bool|dict|list)"),
    # Ansible turns a list or dict given for a str option into its text: the DNS rule then refuses the characters
    (r"bad label|name bad|uppercase|bad instance group name|group name reached kops|name wrong type|bad dns_zone", DNS_CHARACTERS),
    (r"label over 63", r"is \d+ characters long; the limit is 63|has a label of \d+ characters; .* at most 63 characters"),
    (r"over 253", r"is \d+ characters long|has \d+ characters; an InstanceGroup name is at most 253"),
    (r"name empty|cluster empty|^name empty$", r"a DNS name is required|must be lowercase letters"),
    (r"single label", r"must be a fully qualified DNS name"),
    (r"^unknown role$", NOT_ONE_OF + r"|the role of an existing group cannot change"),
    (r"unknown (state|topology|dns|instance_manager|networking|cloud|api_loadbalancer_type|target)", NOT_ONE_OF),
    (r"out of range|below 1|negative|validate_count", r"must be between \d+ and \d+|must be \d+ (second )?or more"),
    (r"bad name server|name server not an address", r"must be IP, IP:PORT or \[IPv6\]:PORT"),
    (r"private without vpc_id", r"vpc_id: required when private is true"),
    (r"vpc_id", r"is not a VPC id such as vpc-"),
    (r"vpc_region", r"is not an AWS region name such as us-east-1"),
    (r"comment over 256", r"characters; Route53 keeps at most 256"),
    (r"mutually exclusive", r"parameters are mutually exclusive: "),
    (r"malformed zone", r"is not an availability zone name such as us-east-1a"),
    (r"zones from two regions", r"all zones must be in one region"),
    (r"zone outside the region option|control plane in another region", r"zones are in [a-z0-9-]+ but (the region option is|zones are in)"),
    (r"zone listed twice", r"are listed more than once"),
    (r"empty zones", r"at least one availability zone is required"),
    (r"even control-plane zones|even control_plane_count|even count", r"etcd needs an odd number of control-plane (zones|nodes) for quorum"),
    (r"count below (the zone count|zones)", r"is less than the \d+ control_plane_zones"),
    (r"kubernetes_version|bad upgrade_to", r"is not a version such as 1\.34\.1"),
    (r"bad CIDR", r"is not a network in CIDR form"),
    (r"bastion without private topology", r"a bastion needs topology: private"),
    (r"terraform without out", r"target is terraform but all of the following are missing: out"),
    (r"instance type|machine_type", r"is not an instance type such as t3\.medium"),
    (r"bad duration|duration reached kops", r"is not a duration such as 24h, 90m or 30s"),
    (r"unknown spec field", r"unknown field\(s\) .*kops would drop them silently"),
    (r"malformed ssh_public_key|malformed public key", r"not an OpenSSH public key line"),
    (r"private key as ssh_public_key", r"this is a private key; give the public key"),
    (r"egress of an unknown type", r"must be a NAT gateway \(nat-\.\.\.\)"),
    (r"egress on public subnets", r"needs topology: private \(or ipv6: true\)"),
    (r"security group id", r"is not a security group id such as sg-"),
    (r"feature gate", r"is not a feature gate such as SELinuxMount"),
    (r"discovery_store", r"is not a store such as s3://|karpenter needs discovery_store"),
    (r"set not PATH=VALUE", r"is not PATH=VALUE"),
    (r"api_server_count without the feature flag", r"only with the APIServerNodes feature flag"),
    (r"additional CIDRs without network_cidr", r"needs network_cidr"),
    (r"state_store|bucket name", r"must be an s3://BUCKET\[/PATH\] \(or file://PATH\) URL|does not name an S3 bucket"),
    (r"kops_env bad name|empty environment name", r"is not an environment variable name"),
    (r"NUL in", r"holds a NUL character"),
    (r"kops_binary not executable", r"kops_binary: ('.*' is not an executable file or a command on PATH|could not start )"),
    # a max below min may also be negative: refused first for that
    (r"max below min", r"is less than min_size \d+ \(maxSize must be greater than or equal to minSize\)|must be 0 or more"),
    (r"control plane size|control-plane sizes", r"a ControlPlane InstanceGroup has at most 1 instance"),
    (r"max_instance_lifetime", r"is under 24h; it must be 0 or at least 24h|is not a duration such as 24h"),
    (r"instance_metadata", r"must be required or optional|must be 64 or less|must be 1 or more|^Unsupported parameters"),
    (
        r"mixed_instances_policy",
        r"must be between 0 and 100|is not one of|must be 0 or more|cannot be negative|is not an instance type|^Unsupported parameters|unable to convert",
    ),
    (r"warm_pool", r"cannot be negative|cannot be lower than min_size|^Unsupported parameters"),
    (r"external_load_balancers", r"which takes at most 10|characters; at most 32|is not a target group ARN|both|^Unsupported parameters"),
    (r"bad taint", r"must be key\[=value\]:Effect with Effect one of NoSchedule, PreferNoSchedule, NoExecute"),
    (r"unknown process", r"is not an Auto Scaling process"),
    (r"additional_user_data", r"^missing required arguments: |^Unsupported parameters"),
    (r"sysctl without =", r"must contain a '=' character"),
    (r"root_volume", r"must be 0 \(kops' default\) or more|^Unsupported parameters|unable to convert to int"),
    (r"validate without kubeconfig", r"validate: needs name \(one cluster\) and kubeconfig"),
    (r"upgrade_to without name", r"upgrade_to: needs name"),
    (r"unknown format", NOT_ONE_OF),
    (r"bad file mode", r"is not a file mode|has bits beyond the permissions"),
    (r"dest not writable", r"is not a directory, so .* cannot be made"),
]


def expected_reason(kind):
    """The message pattern (str, a regular expression) for category ``kind``, or None when none is listed."""
    import re

    return next((reason for pattern, reason in REASONS if re.search(pattern, kind)), None)


def problems_of(case, result):
    """Why ``result`` is not a clean failure for ``case`` that names its option and says why (list of str; empty
    when clean)."""
    import re

    found = []
    text = json.dumps(result, default=repr)
    reason = expected_reason(case.kind)
    if result.get("failed") is not True:
        found.append("accepted (changed=%s)" % result.get("changed"))
    elif reason is None:
        found.append("no reason listed for category %r (REASONS): msg %r" % (case.kind, (result.get("msg") or "")[:300]))
    elif not re.search(reason, result.get("msg") or ""):
        found.append("msg does not say why (%s): %r" % (reason, (result.get("msg") or "")[:300]))
    if result.get("failed") is True and not any(names(field, (result.get("msg") or "").split("Supported parameters include")[0]) for field in case.fields):
        # ansible-core's "Unsupported parameters ... Supported parameters include: <every option>" names every option
        # in its list: only the part before the list counts
        found.append("msg does not name %s: %r" % ("/".join(case.fields), (result.get("msg") or "")[:300]))
    # ansible-core 2.19 adds ``exception: "(traceback unavailable)"`` to every failure, fail_json's too; an
    # exception the module did not catch shows as msg "Task failed: Module failed: <error>" instead of our text.
    if "Traceback" in text or "MODULE FAILURE" in text or "Module failed:" in (result.get("msg") or ""):
        found.append("crash: %s %s" % (result.get("msg"), (result.get("module_stderr") or "")[-400:]))
    # a read of the stored spec may precede a rule that depends on it (e.g. an InstanceGroup's stored role); any
    # other kops command means the bad input got past the checks
    ran = [c["argv"][1:3] for c in result.get("kops_invocations") or [] if c["argv"][1:2] != ["get"]]
    if ran:
        found.append("kops ran: %s" % ran)
    return found


def record(module, tried, clean):
    """Merge ``{module: {tried, failed_cleanly}}`` into out/bad-input-matrix.json."""
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    data = {}
    if os.path.exists(REPORT):
        with open(REPORT) as handle:
            data = json.load(handle)
    data[module] = {"tried": tried, "failed_cleanly": clean}
    with open(REPORT, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)


def run_matrix(emulator, module, base, cases, kops=None):
    """Run ``base`` once in check mode (it must pass) and every case over ``base``: each SAMPLE_EVERY-th in one
    playbook, the rest in process; assert each case fails cleanly and that nothing was written."""
    sampled = [index for index in range(len(cases)) if index % SAMPLE_EVERY == 0]
    tasks = [{"name": "base", "kopsible.kops." + module: dict(base), "check_mode": True, "ignore_errors": True}]
    for index in sampled:
        tasks.append({"name": "case%03d" % index, "kopsible.kops." + module: dict(base, **cases[index].options), "ignore_errors": True})
    emulator.warm()
    store = bucket_state(emulator)
    before = emulator.snapshot()
    run = run_playbook(tasks, emulator=emulator, kops=kops)
    results = {index: run.result("case%03d" % index) for index in sampled}
    defaults = in_process.play_defaults(emulator, module, kops)
    for index, case in enumerate(cases):
        if index not in results:
            results[index] = in_process.run_module(module, dict(defaults, **dict(base, **case.options)))
    after_store = bucket_state(emulator)
    after = emulator.snapshot()
    base_result = run.result("base")
    assert not base_result.get("failed"), ("the valid base must pass", base_result.get("msg"))
    bad = {}
    for index, case in enumerate(cases):
        found = problems_of(case, results[index])
        if found:
            bad["case%03d %s %r%s" % (index, case.kind, case.options, "" if index in sampled else " (in process)")] = found
    record(module, len(cases), len(cases) - len(bad))
    assert not bad, json.dumps(bad, indent=1, default=repr)
    assert "Traceback" not in run.stdout + run.stderr
    assert after == before, emulator.snapshot_diff(before, after)
    assert after_store == store


@pytest.fixture(scope="module")
def gossip_cluster(emulator_session, ssh_public_key):
    """An emptied emulator with the state-store bucket and the spec of ``c1.k8s.local`` (created, not applied)."""
    emulator_session.reset()
    make_bucket(emulator_session)
    options = dict(
        name=GOSSIP,
        zones=["us-east-1a"],
        node_count=1,
        node_size="t3.medium",
        control_plane_size="t3.medium",
        kubernetes_version="1.34.1",
        channel="none",
        image=UBUNTU_AMI,
        ssh_public_key=ssh_public_key,
    )
    run = run_playbook([{"name": "c", "kopsible.kops.kops_cluster": options}], emulator=emulator_session, kops=kops_options())
    assert not run.failed, run.stdout[-2000:]
    return emulator_session


def test_route53_subdomain_matrix(emulator):
    emulator.client("route53").create_hosted_zone(Name="example.org.", CallerReference="parent")
    cases = inputs.cases(inputs.route53_subdomain_categories(known_options("route53_subdomain"))) + inputs.REGRESSIONS["route53_subdomain"]
    make_bucket(emulator)  # compared too, though this module never touches S3
    run_matrix(emulator, "route53_subdomain", {"name": "kopsclustertest.example.org"}, cases)


@pytest.mark.kops
def test_kops_cluster_matrix(emulator, ssh_public_key):
    make_bucket(emulator)
    base = dict(
        name=NEW,
        zones=["us-east-1a"],
        node_count=1,
        node_size="t3.medium",
        control_plane_size="t3.medium",
        kubernetes_version="1.34.1",
        channel="none",
        image=UBUNTU_AMI,
        ssh_public_key=ssh_public_key,
    )
    cases = inputs.cases(inputs.kops_cluster_categories(known_options("kops_cluster"))) + inputs.REGRESSIONS["kops_cluster"]
    run_matrix(emulator, "kops_cluster", base, cases, kops=kops_options())


@pytest.mark.kops
def test_kops_instancegroup_matrix(gossip_cluster):
    cases = inputs.cases(inputs.kops_instancegroup_categories(known_options("kops_instancegroup"))) + inputs.REGRESSIONS["kops_instancegroup"]
    run_matrix(gossip_cluster, "kops_instancegroup", {"cluster": GOSSIP, "name": "nodes-us-east-1a"}, cases, kops=kops_options())


@pytest.mark.kops
def test_rolling_update_matrix(gossip_cluster):
    cases = inputs.cases(inputs.rolling_update_categories(known_options("rolling_update"))) + inputs.REGRESSIONS["rolling_update"]
    run_matrix(gossip_cluster, "rolling_update", {"cluster": GOSSIP, "cloudonly": True}, cases, kops=kops_options())


@pytest.mark.kops
def test_kops_cluster_info_matrix(gossip_cluster):
    cases = inputs.cases(inputs.kops_cluster_info_categories(known_options("kops_cluster_info")))
    run_matrix(gossip_cluster, "kops_cluster_info", {"name": GOSSIP, "cloud": False}, cases, kops=kops_options())


@pytest.mark.kops
def test_kops_instancegroup_info_matrix(gossip_cluster):
    cases = inputs.cases(inputs.kops_instancegroup_info_categories(known_options("kops_instancegroup_info")))
    run_matrix(gossip_cluster, "kops_instancegroup_info", {"cluster": GOSSIP, "cloud": False}, cases, kops=kops_options())


@pytest.mark.kops
def test_kops_toolbox_dump_matrix(gossip_cluster, tmp_path):
    cases = inputs.cases(inputs.kops_toolbox_dump_categories(known_options("kops_toolbox_dump")))
    run_matrix(gossip_cluster, "kops_toolbox_dump", {"name": GOSSIP, "dest": str(tmp_path) + "/"}, cases, kops=kops_options())
    assert list(tmp_path.iterdir()) == []  # the base ran in check mode, every case was refused: no file
