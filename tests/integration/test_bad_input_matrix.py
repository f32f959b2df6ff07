"""The bad-input matrix: malformed inputs generated with hypothesis (tools/harness/inputs.py) for every
module. Every SAMPLE_EVERY-th input (and the valid base) runs through ONE ansible-playbook per module (a task per
input, ignore_errors), so the controller's part stays proven (module_defaults, the action group, the argument
checks ansible-core makes before the module); the others run through the module's real ``main()`` in this process
(tools/harness/in_process.py: the same argument spec, rules and fail_json, with the arguments the play would give,
without a module process per input).

Each input must fail through fail_json naming its option (the option name as a whole word in ``msg``), without a
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


def problems_of(case, result):
    """Why ``result`` is not a clean, field-naming failure for ``case`` (list of str; empty when clean)."""
    found = []
    text = json.dumps(result, default=repr)
    if result.get("failed") is not True:
        found.append("accepted (changed=%s)" % result.get("changed"))
    elif not any(names(field, (result.get("msg") or "").split("Supported parameters include")[0]) for field in case.fields):
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
