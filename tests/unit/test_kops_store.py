"""The state store's pure helpers (_state_store.url, _state_store.summary) on real kops v1.36.2 objects (the HA cluster of the kOps guide)."""

import copy
import json
import os

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import kubernetes_minor, summarize_cluster
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError, normalize_store_url, parse_store_url

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "kops-1.36.2")


@pytest.fixture
def record():
    with open(os.path.join(FIXTURES, "get_cluster.json")) as handle:
        cluster = json.load(handle)
    with open(os.path.join(FIXTURES, "get_ig.yaml")) as handle:
        groups = [g for g in yaml.safe_load_all(handle) if g]
    return {"store": "s3://kopsible-state", "name": cluster["metadata"]["name"], "cluster": cluster, "instance_groups": groups}


@pytest.mark.parametrize(
    "url,expected",
    [
        ("s3://bucket", ("bucket", "")),
        ("s3://bucket/", ("bucket", "")),
        ("s3://bucket/fleet/eu", ("bucket", "fleet/eu/")),
        ("S3://bucket/p/", ("bucket", "p/")),
    ],
)
def test_parse_store_url(url, expected):
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url", ["", "bucket", "file:///tmp/store", "s3://", "s3:///prefix", "gs://bucket"])
def test_parse_store_url_refuses(url):
    with pytest.raises(StoreError) as err:
        parse_store_url(url)
    assert "s3://BUCKET[/PREFIX]" in str(err.value) and str(url) in str(err.value)


def test_normalize_store_url():
    assert normalize_store_url("s3://b/") == "s3://b"
    assert normalize_store_url(" s3://b/x/y/ ") == "s3://b/x/y"


@pytest.mark.parametrize(
    "version,minor",
    [
        ("1.34.1", "1.34"),
        ("v1.35.0", "1.35"),
        ("1.36", "1.36"),
        ("1.33.0-rc.1", "1.33"),
        ("https://example.org/k8s/v1.34.1/", None),
        ("", None),
        (None, None),
        ("1", None),
    ],
)
def test_kubernetes_minor(version, minor):
    assert kubernetes_minor(version) == minor


def test_summary_of_the_ha_cluster(record):
    facts = summarize_cluster(record)
    assert facts["cluster_name"] == "mycluster01.kopsclustertest.example.org"
    assert facts["state_store"] == "s3://kopsible-state"
    assert facts["kubernetes_version"] == "1.34.1" and facts["kubernetes_minor"] == "1.34"
    assert facts["region"] == "us-east-1"
    assert facts["zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    # kops 1.36 still writes role "Master" for control-plane groups in v1alpha2
    assert facts["control_plane_zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert facts["dns_zone"] == "kopsclustertest.example.org" and facts["dns_type"] == "Public"
    assert facts["topology"] == "public"
    assert facts["networking"] == "cilium"
    roles = sorted((g["name"], g["role"], g["min_size"], g["max_size"], g["machine_type"], tuple(g["zones"])) for g in facts["instance_groups"])
    assert roles == [
        ("control-plane-us-east-1a", "Master", 1, 1, "t3.medium", ("us-east-1a",)),
        ("control-plane-us-east-1b", "Master", 1, 1, "t3.medium", ("us-east-1b",)),
        ("control-plane-us-east-1c", "Master", 1, 1, "t3.medium", ("us-east-1c",)),
        ("nodes-us-east-1a", "Node", 1, 1, "t3.medium", ("us-east-1a",)),
        ("nodes-us-east-1b", "Node", 1, 1, "t3.medium", ("us-east-1b",)),
        ("nodes-us-east-1c", "Node", 0, 0, "t3.medium", ("us-east-1c",)),  # kops gives each zone a group
    ]
    assert facts["node_count_min"] == 2 and facts["node_count_max"] == 2
    json.dumps(facts)  # cacheable as JSON


def test_private_topology_utility_subnets_and_group_zones(record):
    """Private subnets make the topology private; utility subnets share zones; subnet names (not zones) are what an
    IG lists, so zones come through the cluster's subnets, even where the IG also lists ``zones``: on AWS kops places
    a group's machines in its subnets (pkg/model/context.go GatherSubnets; awsmodel never reads spec.zones)."""
    record = copy.deepcopy(record)
    spec = record["cluster"]["spec"]
    spec["subnets"] = [{"name": "priv-a", "zone": "eu-west-1a", "type": "Private"}, {"name": "utility-eu-west-1a", "zone": "eu-west-1a", "type": "Utility"}]
    del spec["topology"]
    spec["cloudLabels"] = {"environment": "prod"}
    record["instance_groups"] = [
        {"metadata": {"name": "cp"}, "spec": {"role": "ControlPlane", "subnets": ["priv-a"], "minSize": 1, "maxSize": 1}},
        {"metadata": {"name": "n"}, "spec": {"role": "Node", "subnets": ["priv-a"], "zones": ["eu-west-1b"], "minSize": 2, "maxSize": 5}},
        {"metadata": {"name": "bastions"}, "spec": {"role": "Bastion", "subnets": ["utility-eu-west-1a"]}},
    ]
    facts = summarize_cluster(record)
    assert facts["topology"] == "private"
    assert facts["dns_type"] == "Public"  # kops' default when spec.topology.dns is unset
    assert facts["region"] == "eu-west-1" and facts["zones"] == ["eu-west-1a"]
    assert facts["control_plane_zones"] == ["eu-west-1a"]
    assert [g["zones"] for g in facts["instance_groups"]] == [["eu-west-1a"], ["eu-west-1a"], ["eu-west-1a"]]
    assert facts["cloud_labels"] == {"environment": "prod"}
    assert (facts["node_count_min"], facts["node_count_max"]) == (2, 5)
