"""The PodDisruptionBudget check: its rules on API objects (a hand-written cluster in the API's JSON
shape, fixtures/k8s/shop-cluster.json), and a skipped check when no API answers. The kubernetes client
path against a real API server is tested in tests/integration/test_kube_world.py and test_rolling_update.py."""

import json
import os

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import pdb as kops_pdb

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "k8s", "shop-cluster.json")


@pytest.fixture(scope="module")
def objects():
    with open(FIXTURE) as handle:
        return json.load(handle)


def test_nodes_to_roll_match_on_label_or_provider_id(objects):
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["nodes-us-east-1a"], []) == ["i-0aaa.ec2.internal"]
    assert kops_pdb.nodes_to_roll(objects["nodes"], [], ["i-0ddd"]) == ["i-0ddd.ec2.internal"]
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["control-plane-us-east-1a", "nodes-us-east-1b"], ["i-0ddd"]) == [
        "i-0bbb.ec2.internal",
        "i-0ccc.ec2.internal",
        "i-0ddd.ec2.internal",
    ]
    assert kops_pdb.nodes_to_roll(objects["nodes"], ["bastions"], ["i-0zzz"]) == []


@pytest.mark.parametrize(
    "selector,labels,expected",
    [
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
        ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, {"app": "web", "tier": "back"}, False),
    ],
)
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


def test_check_is_skipped_without_an_api(tmp_path):
    skipped = kops_pdb.check(None, None, ["nodes"], [])
    assert skipped["checked"] is False and "no kubeconfig" in skipped["skipped_reason"]
    import socket

    import yaml

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = str(tmp_path / "config")
    with open(kubeconfig, "w") as handle:
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:%d" % port}}],
                "users": [{"name": "c", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}],
            },
            handle,
        )
    down = kops_pdb.check(kubeconfig, None, ["nodes"], [])
    assert down["checked"] is False and down["skipped_reason"].startswith("the Kubernetes API did not answer")
    assert kops_pdb.check(str(tmp_path / "missing"), None, ["nodes"], [])["checked"] is False
