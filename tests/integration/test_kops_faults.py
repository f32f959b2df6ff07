"""kops_cluster (create, apply) with kops' own AWS calls behind the fault proxy (tools/fault_proxy.py): the end
state read from the emulator must equal that of a run without faults, and a second run must change nothing.

Two mixes, each with the seeds 1, 2, 3 fixed before any result was seen (docs/reliability.md records which fail
and why): the default mix (throttling, 500/503, dropped connections) on every AWS request at rate 0.05, and
``lost`` responses (the emulator acts, the answer never arrives) on kops' create calls at rate 0.2.
"""

import os

import pytest
from test_interrupted_runs import cloud_summary

from harness.faults import faulty
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops
SEEDS = (1, 2, 3)
# kops' create calls on a first apply (counted on a run through the proxy at rate 0)
CREATES = [
    "ec2:CreateVpc",
    "ec2:CreateSubnet",
    "ec2:CreateSecurityGroup",
    "ec2:CreateInternetGateway",
    "ec2:CreateRouteTable",
    "ec2:CreateRoute",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateVolume",
    "ec2:ImportKeyPair",
    "ec2:CreateDhcpOptions",
    "ec2:CreateTags",
    "autoscaling:CreateAutoScalingGroup",
    "iam:CreateRole",
    "iam:CreateInstanceProfile",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:CreateListener",
    "sqs:CreateQueue",
    "events:PutRule",
    "route53:ChangeResourceRecordSets",
]
# Of those, the creates a retry cannot duplicate on AWS: EC2 calls with a ClientToken (kops' aws-sdk-go-v2 fills it and
# keeps it across retries), ELBv2 creates (idempotent with the same settings), names that are unique (a retry is
# refused: AlreadyExists / EntityAlreadyExists / Duplicate), and upserts. CreateVpc, CreateSubnet,
# CreateSecurityGroup, CreateInternetGateway, CreateDhcpOptions and CreateRoute have no ClientToken in EC2's API:
# a lost answer retried by the SDK makes a second one on AWS as well (docs/reliability.md).
RETRY_SAFE_CREATES = [
    "ec2:CreateLaunchTemplate",
    "ec2:CreateVolume",
    "ec2:CreateRouteTable",
    "ec2:ImportKeyPair",
    "ec2:CreateTags",
    "autoscaling:CreateAutoScalingGroup",
    "iam:CreateRole",
    "iam:CreateInstanceProfile",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:CreateListener",
    "sqs:CreateQueue",
    "events:PutRule",
    "route53:ChangeResourceRecordSets",
]
MIXES = {
    "default": dict(rate=0.05),
    "lost on creates": dict(rate=0.2, mix={"lost": 1}, operations=CREATES),
    "lost on retry-safe creates": dict(rate=0.2, mix={"lost": 1}, operations=RETRY_SAFE_CREATES),
}
LOST_MIXES = ("lost on creates", "lost on retry-safe creates")


@pytest.fixture(scope="module")
def reference(emulator_session, kops_dns, ssh_public_key):
    from conftest import KopsWorld

    emulator_session.reset()
    world = KopsWorld(emulator_session, kops_dns, ssh_public_key)
    with faulty(emulator_session) as counting:
        task = {"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True)}
        run = run_playbook([task], emulator=counting, kops=world.kops)
        stats = counting.proxy.stats()
        again = run_playbook([task], emulator=counting, kops=world.kops).result("c")
    assert again["changed"] is False, again.get("plan_summary")  # through one URL, the re-run plans nothing
    assert not run.result("c").get("failed"), run.result("c").get("msg")
    print("reference: %d requests" % stats["requests"])
    return cloud_summary(world)


# Lost answers to kops' creates (docs/reliability.md records each seed's result and why): about 5 minutes a case,
# so they run with KOPSIBLE_LOST_FAULTS=1, not in `make test`. On every create, seeds 1 and 2 fail for a reason AWS
# shares (a retried CreateVpc / CreateInternetGateway, which take no ClientToken, makes a duplicate): those two are
# expected failures (not strict: which request a seed hits depends on the order of kops' concurrent tasks).
LOST_OPT_IN = pytest.mark.skipif(
    not os.environ.get("KOPSIBLE_LOST_FAULTS"),
    reason="lost answers to kops' creates take about 5 minutes a case; KOPSIBLE_LOST_FAULTS=1 runs them (docs/reliability.md)",
)
# A lost CreateVpc (seed 1) / CreateInternetGateway (seed 2) answer, retried by kops' SDK, makes a second one (EC2 takes
# no ClientToken there, AWS duplicates it too): kops then stops on its own "found multiple ..." (awstasks: vpc.go,
# internetgateway.go). Which request a seed hits depends on the order of kops' concurrent tasks, so such a case may
# also converge; when it fails, it must fail for that reason (asserted), and only then is it an expected failure.
DUPLICATED_ON_AWS_TOO = (
    (("lost on creates", 1), ("lost on creates", 2)),
    ("found multiple VPCs matching tags", "found multiple InternetGateways matching tags"),
)
DUPLICATED_REASON = "a lost CreateVpc / CreateInternetGateway answer, retried by kops' SDK, made a second one, as on AWS (no ClientToken)"


def mix_marks(mix, seed):
    return [LOST_OPT_IN] if mix in LOST_MIXES else []


# One lost-answer case runs in every `make test` (issue 29 item 2): the retry-safe creates, with a seed chosen per run
# (printed; KOPSIBLE_FAULT_SEED=N replays it), so each run tries another order of lost answers. Chosen in the test, not
# in its id: every xdist worker must collect the same ids.
PER_RUN = "per-run"


def per_run_seed():
    """The seed of the per-run case (int): ``KOPSIBLE_FAULT_SEED`` when set, else a fresh random one."""
    import random

    return int(os.environ.get("KOPSIBLE_FAULT_SEED") or random.SystemRandom().randrange(1, 1000000))


@pytest.mark.parametrize(
    "mix, seed",
    [pytest.param(m, seed, marks=mix_marks(m, seed), id="%s-%d" % (m, seed)) for m in sorted(MIXES) for seed in SEEDS]
    + [pytest.param("lost on retry-safe creates", PER_RUN, id="lost on retry-safe creates-" + PER_RUN)],
)
def test_kops_cluster_apply_under_faults(kops_world, reference, mix, seed):
    """The first run, under faults, either converges or fails cleanly (the default mix: converges); the re-run (faults
    off) converges to the reference and a run after a converged one changes nothing."""
    import json

    if seed == PER_RUN:
        seed = per_run_seed()
        print("%s: seed %d (replay: KOPSIBLE_FAULT_SEED=%d pytest -k %r %s)" % (mix, seed, seed, PER_RUN, __file__))

    task = {"name": "c", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True), "ignore_errors": True}
    # every run goes through the same proxy: kops writes the endpoint it was given into the nodes' configuration,
    # so a run through another URL would plan changes of its own
    with faulty(kops_world.emulator, seed=seed, **MIXES[mix]) as proxied:
        first = run_playbook([task], emulator=proxied, kops=kops_world.kops).result("c")
        stats = proxied.proxy.stats()
        proxied.proxy.configure(rate=0.0)
        rerun = run_playbook([task], emulator=proxied, kops=kops_world.kops).result("c")
    print(
        "%s seed %d: %d requests, %d faults %s; first run %s"
        % (
            mix,
            seed,
            stats["requests"],
            stats["faults"],
            stats["faults_by_kind"],
            "failed: " + first.get("msg", "")[:300] if first.get("failed") else "converged",
        )
    )
    assert stats["faults"] > 0, "seed %d" % seed
    if mix == "default":  # docs/reliability.md: kops' retries absorb this mix; every seed's first run converges
        assert not first.get("failed"), first.get("msg")
    if first.get("failed"):
        assert first.get("msg") and "Traceback" not in json.dumps(first), first.get("msg")
    else:
        assert cloud_summary(kops_world) == reference
    cases, messages = DUPLICATED_ON_AWS_TOO
    if rerun.get("failed") and (mix, seed) in cases:
        assert any(m in rerun.get("msg", "") for m in messages), rerun.get("msg")
        pytest.xfail(DUPLICATED_REASON)
    assert not rerun.get("failed"), rerun.get("msg")
    assert cloud_summary(kops_world) == reference
    if not first.get("failed"):
        assert rerun["changed"] is False, rerun.get("plan_summary")
