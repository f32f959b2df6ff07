"""The kops version rule of an apply (_kops.binary_version): kops refuses to apply a cluster whose kops-version.txt
names a newer kops than its own (upup/pkg/fi/cloudup/apply_cluster.go: ``semver.Parse``, ``version.GT``), compared as
github.com/blang/semver/v4 compares (Semantic Versioning 2.0.0)."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import argv as kops_argv
from ansible_collections.kopsible.kops.plugins.module_utils._kops import binary_version
from ansible_collections.kopsible.kops.plugins.module_utils._kops.argv import reconcile_cluster_args, update_cluster_args

# Semantic Versioning 2.0.0, section 11: the precedence example, lowest first
SEMVER_ORDER = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]


def test_precedence_is_semvers():
    keys = [binary_version.parse(v) for v in SEMVER_ORDER]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert binary_version.parse("1.36.2+build.5") == binary_version.parse("1.36.2")  # build metadata has no precedence
    assert binary_version.parse("1.36.10") > binary_version.parse("1.36.9")  # numbers, not text


@pytest.mark.parametrize("text", ["", "1.36", "1.36.x", "01.36.2", "latest", None])
def test_not_a_version(text):
    assert binary_version.parse(text) is None


@pytest.mark.parametrize(
    "binary, applied, refused",
    [
        ("1.36.2", "1.37.0", True),
        ("1.36.2", "1.37.0-beta.1", True),  # a pre-release of the next minor is newer than 1.36.2
        ("1.36.2", "1.36.2", False),
        ("1.36.2", "1.35.1", False),  # the bump: a newer kops may apply what an older one applied
        ("1.37.0-alpha.1", "1.36.2", False),
        ("1.36.2", "not a version", False),  # kops' own parse error at apply says what is wrong
    ],
)
def test_downgrade_problem(binary, applied, refused):
    problem = binary_version.downgrade_problem(binary, applied, "c.example.org", "s3://b/c.example.org/kops-version.txt")
    assert bool(problem) is refused
    if refused:
        assert problem.startswith("kops_binary: kops %s is older than kops %s, which last applied cluster c.example.org" % (binary, applied))
        assert "allow_kops_downgrade" in problem and "nothing was written" in problem


def test_allow_kops_downgrade_flag():
    assert update_cluster_args("c", yes=True, allow_kops_downgrade=True)[-3:] == ["--allow-kops-downgrade", "--yes", "--create-kube-config=false"]
    assert "--allow-kops-downgrade" not in update_cluster_args("c", yes=True)
    assert reconcile_cluster_args("c", allow_kops_downgrade=True) == ["reconcile", "cluster", "--name", "c", "--allow-kops-downgrade", "--yes"]
    assert kops_argv.flag_args("allow_kops_downgrade", False) == []


@pytest.mark.parametrize(
    "binary, target, applied, allow, refusal",
    [
        ("1.36.2", "1.36.2", {"a.k8s.local": "1.35.1", "b.k8s.local": None}, False, None),  # the bump itself
        ("v1.36.2", "1.36.2", {}, False, None),  # kops version --short may print a leading v
        ("1.36.2", "1.36.9", {}, False, "the play runs kops 1.36.2, not 1.36.9 (kops_binary)"),
        (
            "1.36.2",
            "1.36.2",
            {"b.k8s.local": "1.37.0", "a.k8s.local": "1.37.0-beta.1", "c.k8s.local": "1.36.2"},
            False,
            "kops 1.36.2 is older than the kops that last applied a.k8s.local (1.37.0-beta.1), b.k8s.local (1.37.0)",
        ),
        ("1.36.2", "1.36.2", {"b.k8s.local": "1.37.0"}, True, None),  # allow_kops_downgrade: kops --allow-kops-downgrade
        ("1.36.2", "1.36.2", {"b.k8s.local": "garbage"}, False, None),  # kops' own parse error at apply says what is wrong
    ],
)
def test_fleet_bump_problem(binary, target, applied, allow, refusal):
    """A fleet's kops bump (fleet_run, plan.change.kops_version) is refused before anything is written on the rule
    kops applies per cluster (is_downgrade), naming every cluster it would refuse."""
    problem = binary_version.bump_problem(binary, target, applied, allow)
    if refusal is None:
        assert problem is None
    else:
        assert problem.startswith("plan.change.kops_version: ") and refusal in problem and "nothing was written" in problem
