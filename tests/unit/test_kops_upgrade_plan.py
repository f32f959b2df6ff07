"""Issue 26 item 3: the plan of an upgrade over several minors in kOps' 1.31+ order (kops_upgrade.plan_upgrade):
control-plane hops one minor at a time, the workers rolled once at the end while the version-skew policy allows it
(kubelet at most three minors older than kube-apiserver), a run stopped part-way resumed at its hop, and every hop
inside the range kops v1.36.2 applies."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import upgrade as kops_upgrade
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError


def test_three_minors_three_control_plane_hops_one_worker_roll():
    plan = kops_upgrade.plan_upgrade("1.32.4", "1.35.0", ["v1.32.4"] * 3, ["v1.32.4"] * 2, hop_versions=["1.33.12"])
    assert [h["version"] for h in plan["hops"]] == ["1.33.12", "1.34.0", "1.35.0"]
    assert [(h["api_before"], h["api_after"], h["kubelets"]) for h in plan["hops"]] == [
        ("1.32.4", "1.33.12", "1.32.4"),
        ("1.33.12", "1.34.0", "1.32.4"),
        ("1.34.0", "1.35.0", "1.32.4"),
    ]
    assert all(h["roles"] == ["control-plane", "apiserver"] and h["workers_after"] is None for h in plan["hops"])
    assert (plan["control_plane_rolls"], plan["worker_rolls"]) == (3, 1)
    assert plan["steps"][-1].startswith("update and roll the workers (and bastions) to 1.35.0")


def test_the_widest_range_kops_accepts_rolls_the_workers_where_the_skew_would_break():
    """1.31 -> 1.36 (kops v1.36.2: 1.31.0 up to below 1.37.0): after the hop to 1.34 the next hop (1.35) would leave
    1.31 kubelets four minors behind, so the workers roll to 1.34 first; then once more at the end."""
    plan = kops_upgrade.plan_upgrade("1.31.0", "1.36.1")
    assert [h["version"] for h in plan["hops"]] == ["1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.1"]
    assert [h["workers_after"] for h in plan["hops"]] == [None, None, "1.34.0", None, None]
    assert [h["kubelets"] for h in plan["hops"]] == ["1.31.0", "1.31.0", "1.31.0", "1.34.0", "1.34.0"]
    assert (plan["control_plane_rolls"], plan["worker_rolls"]) == (5, 2)
    assert "more than 3 minor versions behind" in plan["steps"][3]


def test_a_run_stopped_part_way_resumes_at_its_hop():
    """The spec was set to 1.34.0 (hop 2 of 1.32 -> 1.35) but one control-plane node still runs 1.33: that hop is
    finished first, then the rest."""
    plan = kops_upgrade.plan_upgrade("1.34.0", "1.35.0", ["v1.34.0", "v1.33.0", "v1.34.0"], ["v1.32.4", "v1.32.4"])
    assert [(h["version"], h["resume"], h["api_before"]) for h in plan["hops"]] == [("1.34.0", True, "1.33.0"), ("1.35.0", False, "1.34.0")]
    assert plan["current"] == {"spec": "1.34.0", "control_plane": "1.33.0", "workers": "1.32.4"}
    # the control plane done, the workers not: no hop, one worker roll
    done = kops_upgrade.plan_upgrade("1.35.0", "1.35.0", ["v1.35.0"] * 3, ["v1.32.4"])
    assert (done["hops"], done["worker_rolls"]) == ([], 1)
    # all done: nothing
    assert kops_upgrade.plan_upgrade("1.35.0", "1.35.0", ["v1.35.0"] * 3, ["v1.35.0"])["worker_rolls"] == 0


def test_a_patch_upgrade_and_a_skip_are_one_hop():
    assert [h["version"] for h in kops_upgrade.plan_upgrade("1.34.1", "1.34.3")["hops"]] == ["1.34.3"]
    assert [h["version"] for h in kops_upgrade.plan_upgrade("1.32.0", "1.35.0", allow_version_skip=True)["hops"]] == ["1.35.0"]


@pytest.mark.parametrize(
    "spec, target, message",
    [
        ("1.35.0", "1.34.1", "upgrade_to: 1.34.1 is older than the cluster's 1.35.0; downgrades are refused"),
        ("1.35.0", "1.37.0", "upgrade_to: 1.37.0 is not yet supported by kops v1.36.2"),
        ("1.34.1", "1.35", "upgrade_to: '1.35' is not a version"),
    ],
)
def test_refused_before_anything_is_written(spec, target, message):
    with pytest.raises(RuleError) as err:
        kops_upgrade.plan_upgrade(spec, target)
    assert str(err.value).startswith(message), str(err.value)


def test_a_spec_at_the_target_without_readable_nodes_is_applied_and_rolled_again_where_the_cloud_differs():
    """Without the Nodes (cloud-only, or no kubeconfig) a spec already at the target may be a run that wrote it and was
    killed before its rolls (test_fleet_runner: a controller killed during a wave left the control plane half rolled
    and the workers' launch template unapplied, and the resumed upgrade planned nothing). The plan is one resumed hop
    at the spec's version and the workers after it: kops applies what differs and rolls what is outdated, nothing
    where nothing is. With the Nodes read, a cluster at the target everywhere still plans nothing."""
    plan = kops_upgrade.plan_upgrade("1.35.0", "1.35.0")
    assert [(h["version"], h["resume"]) for h in plan["hops"]] == [("1.35.0", True)]
    assert (plan["control_plane_rolls"], plan["worker_rolls"]) == (1, 1)
    assert "the Nodes cannot be read" in plan["hops"][0]["why"] and plan["steps"][0].endswith("[resumed]")
    assert kops_upgrade.plan_upgrade("1.35.0", "1.35.0", ["v1.35.0"], ["v1.35.0"])["hops"] == []
