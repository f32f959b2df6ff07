"""The PodDisruptionBudget check: its rules on API objects, and the kubernetes client path against a
read-only API serving the same objects."""
import json
import os

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils import kops_pdb
from harness.kube_api import KubeAPI

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "k8s", "shop-cluster.json")


@pytest.fixture(scope="module")
def objects():
    with open(FIXTURE) as handle:
        return json.load(handle)


def test_nodes_to_roll_match_on_label_or_provider_id(objects):
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["nodes-us-east-1a"], []) == ["i-0aaa.ec2.internal"]
    assert kops_pdb.nodes_to_roll(objects["nodes"], [], ["i-0ddd"]) == ["i-0ddd.ec2.internal"]
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["control-plane-us-east-1a", "nodes-us-east-1b"], ["i-0ddd"]) == [
        "i-0bbb.ec2.internal", "i-0ccc.ec2.internal", "i-0ddd.ec2.internal"]
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["bastions"], ["i-0zzz"]) == []


@pytest.mark.parametrize("selector,labels,expected", [
    (None, {"app": "web"}, False),
    ({}, {"app": "web"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}, {"app": "web"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, {"app": "2"}, False),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]},
     {"app": "web", "tier": "back"}, False),
])
def test_selector_rules(selector, labels, expected):
    assert kops_pdb.selector_matches(selector, labels) is expected


def test_blocking_budgets_on_the_nodes_about_to_roll(objects):
    nodes = kops_pdb.nodes_to_roll(objects["nodes"], ["nodes-us-east-1a", "nodes-us-east-1b"], ["i-0ddd"])
    blocking = kops_pdb.blocking_pdbs(objects["pdbs"], objects["pods"], nodes)
    # shop/web: 0 allowed, covers web-1 and web-2; shop/db allows 1; shop/batch covers only a Succeeded pod;
    # kube-system/kube-dns allows 1; kube-system/etcd covers coredns (Exists on k8s-app) on i-0aaa;
    # ops/everything (empty selector) covers agent-1 on i-0ddd; other/web has no pods in its namespace.
    assert [(b["namespace"], b["name"]) for b in blocking] == [("kube-system", "etcd"), ("ops", "everything"), ("shop", "web")]
    web = blocking[-1]
    assert web["disruptions_allowed"] == 0
    assert web["pods"] == ["shop/web-1 on i-0aaa.ec2.internal", "shop/web-2 on i-0bbb.ec2.internal"]
    assert blocking[0]["pods"] == ["kube-system/coredns-1 on i-0aaa.ec2.internal"]


def test_budgets_elsewhere_do_not_block(objects):
    assert kops_pdb.blocking_pdbs(objects["pdbs"], objects["pods"], ["i-0zzz.ec2.internal"]) == []
    only_b = kops_pdb.blocking_pdbs(objects["pdbs"], objects["pods"], ["i-0bbb.ec2.internal"])
    assert [(b["namespace"], b["name"], b["pods"]) for b in only_b] == [("shop", "web", ["shop/web-2 on i-0bbb.ec2.internal"])]


def test_check_through_the_kubernetes_client(objects, tmp_path):
    with KubeAPI(objects) as api:
        kubeconfig = api.kubeconfig(str(tmp_path / "config"), "mycluster01.kopsclustertest.example.org")
        context = kops_pdb.default_context(kubeconfig, "mycluster01.kopsclustertest.example.org")
        assert context == "mycluster01.kopsclustertest.example.org"
        assert kops_pdb.default_context(kubeconfig, "other.example.org") is None
        result = kops_pdb.check(kubeconfig, context, ["nodes-us-east-1b"], [])
        paths = sorted(p.split("?")[0] for p in api.requests)
    assert result["checked"] is True and result["skipped_reason"] is None
    assert result["nodes"] == ["i-0bbb.ec2.internal"]
    assert [(b["namespace"], b["name"]) for b in result["blocking"]] == [("shop", "web")]
    assert paths == ["/api/v1/nodes", "/api/v1/pods", "/apis/policy/v1/poddisruptionbudgets"]


def test_check_is_skipped_without_an_api(tmp_path):
    skipped = kops_pdb.check(None, None, ["nodes"], [])
    assert skipped["checked"] is False and "no kubeconfig" in skipped["skipped_reason"]
    api = KubeAPI({}).start()
    kubeconfig = api.kubeconfig(str(tmp_path / "config"), "c")
    api.stop()  # nothing listens any more
    down = kops_pdb.check(kubeconfig, None, ["nodes"], [])
    assert down["checked"] is False and down["skipped_reason"].startswith("the Kubernetes API did not answer")
    assert kops_pdb.check(str(tmp_path / "missing"), None, ["nodes"], [])["checked"] is False
