"""Issue 16 item 9 (the warning part): options that only shape a new cluster are compared with the stored
cluster and its instance groups (kops 1.36.2 output of the kOps guide's HA cluster), and only those that differ are
reported."""

import os

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._kops.create_options import create_only_differences, stored_create_options
from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import parse_get_json

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "kops-1.36.2")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1c2VyLWtleS1mb3ItdGVzdHMtb25seS0wMDAwMDAw"
HA = dict(
    zones=["us-east-1a", "us-east-1b", "us-east-1c"],
    control_plane_zones=["us-east-1c", "us-east-1b", "us-east-1a"],
    node_count=2,
    node_size="t3.medium",
    control_plane_size="t3.medium",
    dns_zone="KopsClusterTest.example.org.",
    image="ami-0a1b2c3d4e5f60001",
    networking="cilium",
    topology="public",
    dns="public",
    network_cidr="172.20.0.0/16",
    ssh_public_key=KEY + " me@laptop",
)


@pytest.fixture
def stored():
    with open(os.path.join(FIXTURES, "get_cluster.json")) as handle:
        cluster = parse_get_json(handle.read())[0]
    with open(os.path.join(FIXTURES, "get_ig.yaml")) as handle:
        groups = dict((d["metadata"]["name"], d) for d in yaml.safe_load_all(handle) if d)
    return stored_create_options(cluster, groups, [{"id": "x", "publicKey": KEY + "\n"}])


def test_same_values_as_created_are_not_reported(stored):
    """The HA example re-run as written: nothing differs, so no warning."""
    assert create_only_differences(HA, stored) == []


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"node_size": "t3.large"}, "node_size (given t3.large; the cluster has ['t3.medium'])"),
        ({"node_count": 5}, "node_count (given 5; the cluster has 2)"),
        ({"zones": ["us-east-1a"]}, "zones (given ['us-east-1a']; the cluster has ['us-east-1a', 'us-east-1b', 'us-east-1c'])"),
        ({"networking": "calico"}, "networking (given calico; the cluster has ['cilium'])"),
        ({"topology": "private"}, "topology (given private; the cluster has public)"),
        ({"dns_zone": "example.org"}, "dns_zone (given example.org; the cluster has kopsclustertest.example.org)"),
        ({"image": "ami-0fffffffffffffff0"}, "image (given ami-0fffffffffffffff0; the cluster has ['ami-0a1b2c3d4e5f60001'])"),
        ({"ssh_public_key": "ssh-rsa AAAAB3NzaC1yc2E other"}, "ssh_public_key (given a key; the cluster has 1 other key(s))"),
        ({"network_cidr": "10.0.0.0/16"}, "network_cidr (given 10.0.0.0/16; the cluster has 172.20.0.0/16)"),
    ],
)
def test_a_differing_value_is_reported(stored, change, expected):
    assert create_only_differences(dict(HA, **change), stored) == [expected]


def test_image_is_compared_only_where_it_applies(stored):
    """--image applies to the groups without --control-plane-image / --node-image of their own."""
    params = dict(HA, image="ami-0fffffffffffffff0", node_image="ami-0a1b2c3d4e5f60001", control_plane_image="ami-0a1b2c3d4e5f60001")
    assert create_only_differences(params, stored) == []


def test_networking_aliases(stored):
    assert create_only_differences(dict(HA, networking="cilium-eni"), stored) == []
