"""kops_argv: one table turns options into kops argv; each format as kops' pflag types read it."""

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import argv as kops_argv
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import layout, s3


@pytest.mark.parametrize(
    "option, value, words",
    [
        ("name", "c.example.org", ["--name", "c.example.org"]),
        ("node_count", 0, ["--node-count", "0"]),  # 0 is a value, not an absent one
        ("node_size", "", []),
        ("zones", ["us-east-1a", "us-east-1b"], ["--zones", "us-east-1a,us-east-1b"]),
        ("zones", "us-east-1a", ["--zones", "us-east-1a"]),
        ("zones", [], []),
        ("yes", True, ["--yes"]),
        ("yes", False, []),
        ("encrypt_etcd_storage", False, ["--encrypt-etcd-storage=false"]),
        ("create_kube_config", False, ["--create-kube-config=false"]),
        ("drain_timeout", "5m", ["--drain-timeout", "5m"]),
        ("drain_timeout", "", []),
        ("admin", "18h0m0s", ["--admin=18h0m0s"]),
        ("set", ["a=1", "b=2"], ["--set", "a=1", "--set", "b=2"]),
        ("output", None, []),
    ],
)
def test_each_format(option, value, words):
    assert kops_argv.flag_args(option, value) == words


def test_command_keeps_the_order_given():
    assert kops_argv.command(["update", "cluster"], name="c", yes=True, create_kube_config=False) == [
        "update",
        "cluster",
        "--name",
        "c",
        "--yes",
        "--create-kube-config=false",
    ]
    assert kops_argv.command(["export", "kubecfg", "c"], [("admin", "1h")], kubeconfig=None) == ["export", "kubecfg", "c", "--admin=1h"]


def test_unknown_option_is_a_programming_error():
    with pytest.raises(KeyError):
        kops_argv.flag_args("no_such_option", "x")


def test_state_store_layout_keys():
    ig = {"kind": "InstanceGroup", "metadata": {"name": "nodes", "labels": {"kops.k8s.io/cluster": "c.example.org"}}}
    cluster = {"kind": "Cluster", "metadata": {"name": "c.example.org"}}
    assert layout.manifest_key("s3://bucket/team/prod/", ig) == "team/prod/c.example.org/instancegroup/nodes"
    assert layout.manifest_key("s3://bucket", cluster) == "c.example.org/config"
    assert [layout.is_spec_object(p) for p in ("config", "instancegroup/nodes", "pki/private/ca", "cluster-completed.spec")] == [True, True, False, False]


def test_state_store_client_retries():
    config = s3.retry_config(max_pool_connections=8)
    assert config.retries == {"mode": "standard", "max_attempts": 5}
    assert config.max_pool_connections == 8


def test_update_and_reconcile_argv_for_kops_order():
    """kops' 1.31+ order (docs/tutorial/upgrading-kubernetes.md): update --instance-group-roles=control-plane,apiserver,
    update --prune, reconcile cluster --yes (cmd/kops/update_cluster.go:180,193; cmd/kops/reconcile_cluster.go)."""

    assert kops_argv.update_cluster_args("c.example.org", yes=True, instance_group_roles=["control-plane", "apiserver"]) == [
        "update",
        "cluster",
        "--name",
        "c.example.org",
        "--instance-group-roles",
        "control-plane,apiserver",
        "--yes",
        "--create-kube-config=false",
    ]
    assert kops_argv.update_cluster_args("c.example.org", prune=True) == ["update", "cluster", "--name", "c.example.org", "--prune"]
    assert kops_argv.reconcile_cluster_args("c.example.org") == ["reconcile", "cluster", "--name", "c.example.org", "--yes"]
