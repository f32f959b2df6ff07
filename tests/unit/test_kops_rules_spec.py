"""Input rules (kops_rules), manifest building and diffing (kops_spec), and the version/facts helpers of
kops_cluster_ops. Pure logic, no kops binary."""

import copy
import os

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import create_args, dns_zones, kube_versions
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.facts import cluster_facts
from ansible_collections.kopsible.kops.plugins.module_utils._kops.kube_versions import check_version_change
from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import parse_get_json
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "kops-1.36.2")
CLUSTER = "mycluster01.kopsclustertest.example.org"


def fixture_cluster():
    with open(os.path.join(FIXTURES, "get_cluster.json")) as handle:
        return parse_get_json(handle.read())[0]


def raises(fn, *args, **kwargs):
    with pytest.raises(RuleError) as err:
        fn(*args, **kwargs)
    return str(err.value)


# --------------------------------------------------------------------------------------------
# kops_rules
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [CLUSTER, "mycluster.k8s.local", "a.b", "k1.team-a.example.org", "0.1"])
def test_cluster_name_accepts(raw):
    assert kops_rules.cluster_name(raw) == raw


def test_cluster_name_gossip():
    assert kops_rules.is_gossip(kops_rules.cluster_name("mycluster.k8s.local"))
    assert not kops_rules.is_gossip(kops_rules.cluster_name(CLUSTER))
    assert not kops_rules.is_gossip("k8s.local.example.org")


def test_cluster_name_single_label_refused():
    message = raises(kops_rules.cluster_name, "mycluster")
    assert message.startswith("name: ")
    assert "fully qualified" in message and "'mycluster'" in message
    assert isinstance(RuleError("x"), ValueError)


@pytest.mark.parametrize(
    "raw, lower",
    [
        ("K1.Team-A.Example.org", "k1.team-a.example.org"),  # issue 33 item 7: it used to address k1.team-a.example.org
        ("MyCluster01.KopsClusterTest.Example.org.", CLUSTER),
        ("MyCluster.K8s.Local", "mycluster.k8s.local"),
        (CLUSTER + ".", CLUSTER),  # IsDNS1123Subdomain ends with a letter or digit: no trailing dot
        (" a.b ", "a.b"),
    ],
)
def test_cluster_name_not_folded_but_refused(raw, lower):
    """kops stores and finds a cluster by its exact name (NAME/config) and refuses to create one that is not a
    lowercase RFC 1123 subdomain (validation.go newValidateCluster, IsDNS1123Subdomain): refused, naming the field,
    the lowercase form and kops' rule, as ``cluster`` too (the option of the group and roll modules)."""
    message = raises(kops_rules.cluster_name, raw)
    assert message.startswith("name: cluster name %r must be written %r: " % (raw, lower)), message
    assert "IsDNS1123Subdomain" in message and "pkg/apis/kops/validation/validation.go" in message
    assert raises(kops_rules.cluster_name, raw, "cluster").startswith("cluster: cluster name %r" % raw)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ("", "required"),
        (None, "required"),
        ("bad_name.example.org", "must be a lowercase RFC 1123 subdomain"),
        ("Bad_Name.Example.org", "must be a lowercase RFC 1123 subdomain"),
        ("a..example.org", "must be a lowercase RFC 1123 subdomain"),
        ("-a.example.org", "must be a lowercase RFC 1123 subdomain"),
        ("a-.example.org", "must be a lowercase RFC 1123 subdomain"),
        ("a" * 250 + ".org", "254 characters long; kops' limit is 253"),
    ],
)
def test_cluster_name_dns_rules(raw, fragment):
    message = raises(kops_rules.cluster_name, raw)
    assert message.startswith("name: ") and fragment in message, message


def test_cluster_name_no_stricter_than_kops():
    """IsDNS1123Subdomain limits the whole name to 253 characters and has no limit per label: a 64-character label
    is a name kops accepts, so it is accepted here too (the 63-octet label limit of DNS is Route53's, met by the
    records kops writes under a name with a DNS zone, not by a gossip name)."""
    name = "a" * 64 + ".k8s.local"
    assert kops_rules.cluster_name(name) == name
    longest = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 57, "org"])
    assert len(longest) == 253 and kops_rules.cluster_name(longest) == longest


@pytest.mark.parametrize(
    "zones, region",
    [
        (["us-east-1a", "us-east-1b", "us-east-1c"], "us-east-1"),
        (["eu-west-3c"], "eu-west-3"),
        (["ap-southeast-2b", "ap-southeast-2a"], "ap-southeast-2"),
        (["us-gov-west-1a"], "us-gov-west-1"),
        (["us-isob-east-1a"], "us-isob-east-1"),
    ],
)
def test_zones_accepts_and_returns_region(zones, region):
    assert kops_rules.zones(zones) == region
    assert kops_rules.zones(zones, region=region) == region


def test_zones_mixed_regions_lists_both():
    message = raises(kops_rules.zones, ["us-west-2a", "us-east-1a", "us-east-1b"])
    assert message == ("zones: all zones must be in one region, got us-east-1: us-east-1a, us-east-1b; us-west-2: us-west-2a")


@pytest.mark.parametrize("bad", ["us-east-1", "useast1a", "us-east-1A", "use1-az1", "", None])
def test_zones_malformed(bad):
    message = raises(kops_rules.zones, ["us-east-1a", bad])
    assert message == "zones: %r is not an availability zone name such as us-east-1a" % (bad,)


def test_zones_empty():
    assert raises(kops_rules.zones, []) == "zones: at least one availability zone is required"
    assert raises(kops_rules.zones, None).startswith("zones: at least one")


def test_zones_duplicates():
    message = raises(kops_rules.zones, ["us-east-1a", "us-east-1b", "us-east-1a"])
    assert message == "zones: zones are listed more than once: us-east-1a, us-east-1b, us-east-1a"


def test_zones_region_mismatch():
    message = raises(kops_rules.zones, ["us-east-1a", "us-east-1b"], region="eu-west-1")
    assert message == "zones: zones are in us-east-1 but the region option is eu-west-1"


def test_zones_field_name_in_message():
    assert raises(kops_rules.zones, ["x"], "control_plane_zones").startswith("control_plane_zones: ")


def test_region_of_zone():
    assert kops_rules.region_of_zone("us-east-1a") == "us-east-1"
    assert kops_rules.region_of_zone("us-east-1") is None
    assert kops_rules.region_of_zone(None) is None


@pytest.mark.parametrize("count", [2, 4])
def test_control_plane_zones_even_refused(count):
    values = ["us-east-1%s" % letter for letter in "abcdef"[:count]]
    message = raises(kops_rules.control_plane_zones, values, ["us-east-1a"])
    assert message.startswith("control_plane_zones: %d zones given" % count)
    assert "odd" in message


@pytest.mark.parametrize("count", [1, 3, 5])
def test_control_plane_zones_odd_ok(count):
    values = ["us-east-1%s" % letter for letter in "abcde"[:count]]
    assert kops_rules.control_plane_zones(values, ["us-east-1a", "us-east-1b"]) is None


def test_control_plane_zones_other_region_refused():
    message = raises(kops_rules.control_plane_zones, ["us-west-2a"], ["us-east-1a", "us-east-1b"])
    assert message == "control_plane_zones: zones are in us-west-2 but zones are in us-east-1"


def test_control_plane_zones_own_rules():
    assert kops_rules.control_plane_zones(None, ["us-east-1a"]) is None
    assert kops_rules.control_plane_zones([], ["us-east-1a"]) is None
    # No node zones: only the control-plane zones themselves are checked.
    assert kops_rules.control_plane_zones(["eu-west-1a"], []) is None
    assert raises(kops_rules.control_plane_zones, ["us-east-1a", "us-west-2a", "us-east-1b"], []).startswith(
        "control_plane_zones: all zones must be in one region"
    )
    assert "listed more than once" in raises(kops_rules.control_plane_zones, ["us-east-1a", "us-east-1a", "us-east-1b"], ["us-east-1a"])


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1.34.1", (1, 34, 1)),
        ("v1.34.1", (1, 34, 1)),
        ("1.35.0-beta.1", (1, 35, 0)),
        ("v2.0.10", (2, 0, 10)),
    ],
)
def test_kubernetes_version_accepts(value, expected):
    assert kube_versions.kubernetes_version(value) == expected


@pytest.mark.parametrize("value", ["1.34", "v1.34", "latest", "stable", "", None, "1.34.x", " 1.34.1"])
def test_kubernetes_version_refused(value):
    message = raises(kube_versions.kubernetes_version, value)
    assert message == "kubernetes_version: %r is not a version such as 1.34.1 or v1.34.1" % (value,)


def test_dns_zone_encloses():
    assert dns_zones.dns_zone_encloses("kopsclustertest.example.org", CLUSTER) == "kopsclustertest.example.org"
    assert dns_zones.dns_zone_encloses("Example.ORG.", CLUSTER) == "example.org"
    assert dns_zones.dns_zone_encloses(CLUSTER, CLUSTER) == CLUSTER


@pytest.mark.parametrize("zone", ["other.example.org", "test.example.org", "a." + CLUSTER, "example.com"])
def test_dns_zone_must_enclose(zone):
    message = raises(dns_zones.dns_zone_encloses, zone, CLUSTER)
    assert message.startswith("dns_zone: %s does not enclose the cluster name %s" % (zone, CLUSTER))


def test_dns_zone_malformed():
    assert raises(dns_zones.dns_zone_encloses, "bad..zone", CLUSTER).startswith("dns_zone: ")
    assert raises(dns_zones.dns_zone_encloses, "", CLUSTER).startswith("dns_zone: a DNS name is required")


@pytest.mark.parametrize("value", ["172.20.0.0/16", "10.0.0.0/8", "0.0.0.0/0", "203.0.113.7/32", "::/0"])
def test_cidr_accepts(value):
    # ::/0 is part of kops' default sshAccess/kubernetesApiAccess, which are checked with this rule too.
    assert kops_rules.cidr(value, "network_cidr") is None


@pytest.mark.parametrize("value", ["172.20.0.1/16", "172.20.0.0/33", "banana", "", "10.0.0.0/8/8"])
def test_cidr_refused(value):
    message = raises(kops_rules.cidr, value, "admin_access")
    assert message.startswith("admin_access: %r is not a network in CIDR form (" % value)


def test_counts():
    assert kops_rules.non_negative(0, "node_count") is None
    assert kops_rules.non_negative(None, "node_count") is None
    assert raises(kops_rules.non_negative, -1, "node_count") == "node_count: must be 0 or more, got -1"
    assert kops_rules.positive(1, "control_plane_count") is None
    assert raises(kops_rules.positive, 0, "control_plane_count") == "control_plane_count: must be 1 or more, got 0"


# --------------------------------------------------------------------------------------------
# kops_spec
# --------------------------------------------------------------------------------------------


def test_deep_merge():
    base = {"a": {"b": 1, "c": [1, 2], "keep": {"k": 1}}, "d": 1, "e": 2, "s": 5}
    patch = {"a": {"c": [3], "x": {"y": 1}}, "d": None, "f": "new", "s": {"now": "dict"}, "missing": None}
    base_before, patch_before = copy.deepcopy(base), copy.deepcopy(patch)
    result = kops_spec.deep_merge(base, patch)
    assert result == {"a": {"b": 1, "c": [3], "keep": {"k": 1}, "x": {"y": 1}}, "e": 2, "f": "new", "s": {"now": "dict"}}
    assert base == base_before and patch == patch_before
    # The result shares nothing with the inputs.
    result["a"]["keep"]["k"] = 99
    result["a"]["x"]["y"] = 99
    result["a"]["c"].append(4)
    assert base == base_before and patch == patch_before


def test_deep_merge_lists_replace_whole():
    assert kops_spec.deep_merge({"l": [1, 2, 3]}, {"l": []}) == {"l": []}
    assert kops_spec.deep_merge({"l": [{"a": 1}]}, {"l": [{"b": 2}]}) == {"l": [{"b": 2}]}


def test_deep_merge_empty_sides():
    assert kops_spec.deep_merge(None, {"a": 1}) == {"a": 1}
    assert kops_spec.deep_merge({"a": 1}, None) == {"a": 1}
    assert kops_spec.deep_merge({"a": {"b": 1}}, {"a": {}}) == {"a": {"b": 1}}
    assert kops_spec.deep_merge({"a": {"b": 1}}, {"a": {"b": None}}) == {"a": {}}


def test_deep_merge_none_inside_new_subtree_is_removed():
    # kops_cluster passes the user's `spec` through deep_merge; {'kubeProxy': {'enabled': None}} on a spec
    # without kubeProxy must not write `kubeProxy: {enabled: null}`.
    assert kops_spec.deep_merge({"a": 1}, {"kubeProxy": {"enabled": None, "x": 1}}) == {"a": 1, "kubeProxy": {"x": 1}}


def test_get_and_set_path():
    obj = {"spec": {"api": {"dns": {}}}}
    assert kops_spec.get_path(obj, ("spec", "api", "dns")) == {}
    assert kops_spec.get_path(obj, ("spec", "nope"), "d") == "d"
    assert kops_spec.get_path(obj, ("spec", "api", "dns", "x")) is None
    kops_spec.set_path(obj, ("spec", "cloudLabels", "team"), "a")
    assert obj["spec"]["cloudLabels"] == {"team": "a"}
    kops_spec.set_path(obj, ("spec", "api"), None)
    assert obj == {"spec": {"cloudLabels": {"team": "a"}}}


def test_diff_paths():
    before = {"spec": {"kubernetesVersion": "1.34.1", "cloudLabels": {"a": "1"}, "sshAccess": ["0.0.0.0/0"], "channel": "stable", "same": {"x": [1]}}}
    after = {"spec": {"kubernetesVersion": "1.35.0", "cloudLabels": {"a": "1", "b": "2"}, "sshAccess": ["10.0.0.0/8"], "same": {"x": [1]}}}
    assert kops_spec.diff_paths(before, after) == [
        {"path": "spec.channel", "before": "stable", "after": None},
        {"path": "spec.cloudLabels.b", "before": None, "after": "2"},
        {"path": "spec.kubernetesVersion", "before": "1.34.1", "after": "1.35.0"},
        {"path": "spec.sshAccess", "before": ["0.0.0.0/0"], "after": ["10.0.0.0/8"]},
    ]


def test_diff_paths_equal_and_type_changes():
    cluster = fixture_cluster()
    assert kops_spec.diff_paths(cluster, copy.deepcopy(cluster)) == []
    assert kops_spec.diff_paths({"a": 1}, {"a": {"b": 1}}) == [{"path": "a", "before": 1, "after": {"b": 1}}]
    assert kops_spec.diff_paths({"l": [1, 2]}, {"l": [2, 1]}) == [{"path": "l", "before": [1, 2], "after": [2, 1]}]
    assert kops_spec.diff_paths(1, 2) == [{"path": "", "before": 1, "after": 2}]


def test_strip_server_fields():
    current = fixture_cluster()
    current["metadata"].update(generation=3, resourceVersion="7", uid="u")
    current["status"] = {"x": 1}
    stripped = kops_spec.strip_server_fields(current)
    assert stripped["metadata"] == {"name": CLUSTER}
    assert "status" not in stripped
    assert current["metadata"]["creationTimestamp"] == "2026-12-01T03:02:44Z" and current["status"] == {"x": 1}


def test_cluster_overrides():
    params = {
        "kubernetes_version": "v1.35.0",
        "cloud_labels": {"team": 7, "env": "dev"},
        "channel": "stable",
        "admin_access": ["10.0.0.0/8"],
        "ssh_access": None,
        "zones": ["us-east-1a"],
        "node_count": 3,
    }
    assert kops_spec.cluster_overrides(params) == {
        ("spec", "kubernetesVersion"): "1.35.0",
        ("spec", "cloudLabels"): {"team": "7", "env": "dev"},
        ("spec", "channel"): "stable",
        ("spec", "kubernetesApiAccess"): ["10.0.0.0/8"],
    }
    assert kops_spec.cluster_overrides({"kubernetes_version": "1.35.0"}) == {("spec", "kubernetesVersion"): "1.35.0"}
    assert kops_spec.cluster_overrides({}) == {}


def test_normalize_version():
    assert kops_spec.normalize_version("v1.34.1") == "1.34.1"
    assert kops_spec.normalize_version("1.34.1") == "1.34.1"
    assert kops_spec.normalize_version(None) is None


def test_desired_object_with_overrides_and_raw_spec():
    current = fixture_cluster()
    current["status"] = {"phase": "x"}
    snapshot = copy.deepcopy(current)
    overrides = kops_spec.cluster_overrides({"kubernetes_version": "v1.35.0", "cloud_labels": {"team": "a"}})
    raw_spec = {
        "kubeProxy": {"enabled": True, "metricsBindAddress": "0.0.0.0"},
        "sshAccess": ["10.0.0.0/8"],
        "channel": None,
        "kubernetesVersion": "1.34.9",
        "kubelet": {"maxPods": 200},
    }
    desired = kops_spec.desired_object(current, overrides, raw_spec)

    assert current == snapshot
    assert desired["metadata"] == {"name": CLUSTER}
    assert "status" not in desired
    spec = desired["spec"]
    assert spec["kubernetesVersion"] == "1.35.0"  # the override wins over the raw spec
    assert spec["cloudLabels"] == {"team": "a"}
    assert spec["kubeProxy"] == {"enabled": True, "metricsBindAddress": "0.0.0.0"}
    assert spec["kubelet"] == {"anonymousAuth": False, "maxPods": 200}
    assert spec["sshAccess"] == ["10.0.0.0/8"]
    assert "channel" not in spec
    assert spec["etcdClusters"] == snapshot["spec"]["etcdClusters"]

    assert kops_spec.diff_paths(kops_spec.strip_server_fields(current), desired) == [
        {"path": "spec.channel", "before": "none", "after": None},
        {"path": "spec.cloudLabels", "before": None, "after": {"team": "a"}},
        {"path": "spec.kubeProxy.enabled", "before": False, "after": True},
        {"path": "spec.kubeProxy.metricsBindAddress", "before": None, "after": "0.0.0.0"},
        {"path": "spec.kubelet.maxPods", "before": None, "after": 200},
        {"path": "spec.kubernetesVersion", "before": "1.34.1", "after": "1.35.0"},
        {"path": "spec.sshAccess", "before": ["0.0.0.0/0", "::/0"], "after": ["10.0.0.0/8"]},
    ]


def test_desired_object_without_changes_is_stripped_copy():
    current = fixture_cluster()
    desired = kops_spec.desired_object(current)
    assert desired == kops_spec.strip_server_fields(current)
    assert desired is not current and desired["spec"] is not current["spec"]
    # Overrides equal to the stored values produce no diff.
    same = kops_spec.desired_object(current, kops_spec.cluster_overrides({"kubernetes_version": "v1.34.1"}))
    assert kops_spec.diff_paths(kops_spec.strip_server_fields(current), same) == []


HA_PARAMS = dict(
    name=CLUSTER,
    state="present",
    cloud="aws",
    zones=["us-east-1a", "us-east-1b", "us-east-1c"],
    control_plane_zones=["us-east-1a", "us-east-1b", "us-east-1c"],
    control_plane_count=None,
    node_count=2,
    node_size="t3.medium",
    control_plane_size="t3.medium",
    kubernetes_version=None,
    allow_version_skip=False,
    networking=None,
    topology=None,
    bastion=True,
    dns=None,
    dns_zone="kopsclustertest.example.org",
    ssh_public_key=None,
    image=None,
    control_plane_image=None,
    node_image=None,
    vpc=None,
    network_cidr=None,
    subnets=None,
    utility_subnets=None,
    admin_access=None,
    ssh_access=None,
    cloud_labels={"b": 2, "a": "1"},
    api_loadbalancer_type=None,
    channel=None,
    spec=None,
)


def test_create_cluster_args_ha_example():
    assert create_args.create_cluster_args(CLUSTER, HA_PARAMS) == [
        "create",
        "cluster",
        "--name",
        CLUSTER,
        "--cloud",
        "aws",
        "--zones",
        "us-east-1a,us-east-1b,us-east-1c",
        "--control-plane-zones",
        "us-east-1a,us-east-1b,us-east-1c",
        "--node-count",
        "2",
        "--node-size",
        "t3.medium",
        "--control-plane-size",
        "t3.medium",
        "--dns-zone",
        "kopsclustertest.example.org",
        "--bastion",
        "--cloud-labels",
        "a=1,b=2",
    ]


def test_create_cluster_args_minimal_and_unset_options():
    params = dict(
        HA_PARAMS,
        control_plane_zones=None,
        node_count=None,
        node_size=None,
        control_plane_size=None,
        dns_zone=None,
        bastion=False,
        cloud_labels=None,
        zones=["us-east-1a"],
        cloud=None,
    )
    assert create_args.create_cluster_args("a.k8s.local", params) == ["create", "cluster", "--name", "a.k8s.local", "--cloud", "aws", "--zones", "us-east-1a"]
    assert create_args.create_cluster_args("a.k8s.local", {"zones": ["us-east-1a"]}) == [
        "create",
        "cluster",
        "--name",
        "a.k8s.local",
        "--cloud",
        "aws",
        "--zones",
        "us-east-1a",
    ]


def test_create_cluster_args_other_flags():
    params = {
        "zones": ["eu-west-1a"],
        "node_count": 0,
        "control_plane_count": 1,
        "kubernetes_version": "v1.34.1",
        "networking": "cilium",
        "topology": "private",
        "network_cidr": "10.10.0.0/16",
        "admin_access": ["10.0.0.0/8", "192.168.0.0/16"],
        "ssh_access": [],
        "image": "",
        "api_loadbalancer_type": "public",
        "channel": "stable",
    }
    assert create_args.create_cluster_args("c.example.org", params, "/tmp/key.pub") == [
        "create",
        "cluster",
        "--name",
        "c.example.org",
        "--cloud",
        "aws",
        "--zones",
        "eu-west-1a",
        "--admin-access",
        "10.0.0.0/8,192.168.0.0/16",
        "--network-cidr",
        "10.10.0.0/16",
        "--control-plane-count",
        "1",
        "--node-count",
        "0",
        "--kubernetes-version",
        "v1.34.1",
        "--networking",
        "cilium",
        "--topology",
        "private",
        "--api-loadbalancer-type",
        "public",
        "--channel",
        "stable",
        "--ssh-public-key",
        "/tmp/key.pub",
    ]


# --------------------------------------------------------------------------------------------
# kube_versions.check_version_change, _kops.facts.cluster_facts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "current, desired",
    [
        ("1.34.1", "1.35.0"),
        ("1.34.1", "v1.35.0"),
        ("v1.34.1", "1.34.3"),
        ("1.34.1", "1.34.1"),
        ("1.34.1", "v1.34.1"),
        (None, "1.36.0"),
        ("", "1.36.0"),
    ],
)
def test_version_change_allowed(current, desired):
    assert check_version_change(current, desired) is None


def test_version_change_skipping_a_minor():
    message = check_version_change("1.34.1", "1.36.0")
    assert message.startswith("kubernetes_version: 1.36.0 skips a minor version from 1.34.1")
    assert "1.35.x first" in message and "allow_version_skip" in message
    assert "skips a minor version" in check_version_change("v1.34.1", "v1.36.2")
    assert "skips a minor version" in check_version_change("1.34.1", "2.0.0")


@pytest.mark.parametrize("current, desired", [("1.35.0", "1.34.1"), ("1.34.2", "1.34.1"), ("1.36.0", "v1.34.0")])
def test_version_change_downgrade_refused(current, desired):
    message = check_version_change(current, desired)
    assert message.startswith("kubernetes_version: %s is older than the running %s" % (kops_spec.normalize_version(desired), current))
    assert "downgrades are refused" in message


def test_version_change_bad_desired_version():
    with pytest.raises(RuleError) as err:
        check_version_change("1.34.1", "latest")
    assert str(err.value).startswith("kubernetes_version: 'latest'")


def test_cluster_facts_from_real_cluster():
    assert cluster_facts(fixture_cluster()) == {
        "kubernetes_version": "1.34.1",
        "dns_zone": "kopsclustertest.example.org",
        "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
        "control_plane_groups": ["control-plane-us-east-1a", "control-plane-us-east-1b", "control-plane-us-east-1c"],
        "cloud_labels": {},
        "topology": "public",
        "subnet_types": ["Public"],
        "network_cidr": "172.20.0.0/16",
        "api_name": "api." + CLUSTER,
    }


def test_cluster_facts_empty():
    assert cluster_facts(None) == {
        "kubernetes_version": None,
        "dns_zone": None,
        "zones": [],
        "control_plane_groups": [],
        "cloud_labels": {},
        "topology": None,
        "subnet_types": [],
        "network_cidr": None,
        "api_name": None,
    }
    subnets = [{"name": "p-a", "zone": "us-east-1a", "type": "Private"}, {"name": "u-a", "zone": "us-east-1a", "type": "Utility"}]
    facts = cluster_facts({"spec": {"cloudLabels": {"team": "a"}, "subnets": subnets}})
    assert facts["zones"] == ["us-east-1a"] and facts["subnet_types"] == ["Private", "Utility"] and facts["topology"] == "private"
    assert facts["cloud_labels"] == {"team": "a"}


# --- ARNs follow the partition (issue 16 item 6): botocore's partition table, kops' FindRegion -----------------


@pytest.mark.parametrize(
    "region, partition",
    [
        ("us-east-1", "aws"),
        ("cn-north-1", "aws-cn"),
        ("cn-northwest-1", "aws-cn"),
        ("us-gov-west-1", "aws-us-gov"),
        ("us-iso-east-1", "aws-iso"),
        ("mars-1", None),
        (None, None),
    ],
)
def test_partition_of_region(region, partition):
    assert kops_rules.partition_of(region) == partition


@pytest.mark.parametrize(
    "value, region",
    [
        ({"externalPolicies": {"node": ["arn:aws-cn:iam::123456789012:policy/x"]}}, "cn-northwest-1"),
        ([{"targetGroupArn": "arn:aws-us-gov:elasticloadbalancing:us-gov-west-1:123456789012:targetgroup/t/1"}], "us-gov-west-1"),
        ({"iam": {"permissionsBoundary": "arn:aws:iam::123456789012:policy/b"}}, "us-east-1"),
        ({"name": "arn-less text", "n": 3}, "cn-north-1"),
        ({"externalPolicies": {"node": ["arn:aws:iam::123456789012:policy/x"]}}, "mars-1"),  # unknown region: no rule
    ],
)
def test_arns_of_the_region_partition_pass(value, region):
    kops_rules.arn_partitions(value, region, "spec")


@pytest.mark.parametrize(
    "value, region, message",
    [
        (
            {"externalPolicies": {"node": ["arn:aws:iam::123456789012:policy/x"]}},
            "cn-northwest-1",
            "spec.externalPolicies.node[0]: 'arn:aws:iam::123456789012:policy/x' is not an ARN of partition aws-cn, the partition of cn-northwest-1",
        ),
        (
            {"iam": {"profile": "arn:aws-cn:iam::123456789012:instance-profile/p"}},
            "us-gov-west-1",
            "spec.iam.profile: 'arn:aws-cn:iam::123456789012:instance-profile/p' is not an ARN of partition aws-us-gov",
        ),
        (
            [{"targetGroupArn": "arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/t/1"}],
            "cn-northwest-1",
            "spec[0].targetGroupArn: 'arn:aws-cn:elasticloadbalancing:cn-north-1:123456789012:targetgroup/t/1'"
            " is in region cn-north-1; the cluster is in cn-northwest-1",
        ),
        ({"x": "arn:aws"}, "us-east-1", "spec.x: 'arn:aws' is not an ARN of partition aws"),
    ],
)
def test_arns_of_another_partition_or_region_are_refused(value, region, message):
    with pytest.raises(RuleError) as err:
        kops_rules.arn_partitions(value, region, "spec")
    assert str(err.value) == message or str(err.value).startswith(message)


@pytest.mark.parametrize("value, ok", [("1.31.0", True), ("v1.31.0", True), ("1.36.2", True), ("1.30.99", False), ("v1.14.8", False)])
def test_oldest_supported_kubernetes_version(value, ok):
    """upup/pkg/fi/cloudup/apply_cluster.go:79 OldestSupportedKubernetesVersion = "1.31.0"; :1010 refuses older."""
    if ok:
        assert kube_versions.supported_kubernetes_version(value) >= (1, 31, 0)
    else:
        with pytest.raises(RuleError, match="older than 1.31.0, the oldest Kubernetes version kops v1.36.2 supports"):
            kube_versions.supported_kubernetes_version(value)


@pytest.mark.parametrize(
    "value, bypass, ok", [("1.36.1", False, True), ("1.36.99", False, True), ("1.37.0", False, False), ("v1.38.2", False, False), ("1.37.0", True, True)]
)
def test_newest_supported_kubernetes_version(value, bypass, ok):
    """upup/pkg/fi/cloudup/apply_cluster.go:981-1005: kops v1.36.2 refuses Kubernetes at or above the next kops minor
    (1.37.0), "kops upgrade is required", unless KOPS_RUN_TOO_NEW_VERSION is set."""
    if ok:
        assert kube_versions.supported_kubernetes_version(value, too_new_allowed=bypass) < (1, 37, 0) or bypass
    else:
        with pytest.raises(RuleError, match="is not yet supported by kops v1.36.2, which applies Kubernetes below 1.37.0"):
            kube_versions.supported_kubernetes_version(value, too_new_allowed=bypass)


def test_a_dns_cluster_name_keeps_route53_label_limit_and_a_gossip_name_does_not():
    """kops' own rule (IsDNS1123Subdomain) has no per-label limit; a name under a DNS zone gets Route53 records whose
    labels are at most 63 characters (RFC 1035), a gossip name none."""
    long_label = "a" * 64
    with pytest.raises(RuleError, match="has a label of 64 characters"):
        kops_rules.cluster_name(long_label + ".example.org")
    assert kops_rules.cluster_name(long_label + ".k8s.local") == long_label + ".k8s.local"
    assert kops_rules.cluster_name("a" * 63 + ".example.org") == "a" * 63 + ".example.org"


def test_requested_fields_kops_dropped_and_the_spec_without_them():
    """Issue 33 item 5 (kops_spec.requested_dropped, without_dropped): a misspelled key is dropped by kops
    (cmd/kops/replace.go decodes leniently); the fragment's leaves are matched to kops_spec.dropped_paths, and the
    spec written is without them and without the empty parents their removal leaves where the stored spec had none."""
    from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec

    fragment = {"kubeAPIServer": {"auditLogMaxAge": 7, "auditLogMaxAges": 7}, "kubeScheduler": {"qpss": 5}}
    dropped = ["spec.kubeAPIServer.auditLogMaxAges", "spec.kubeScheduler"]
    assert kops_spec.requested_dropped(fragment, dropped) == (
        ["spec.kubeAPIServer.auditLogMaxAge", "spec.kubeAPIServer.auditLogMaxAges", "spec.kubeScheduler.qpss"],
        ["spec.kubeAPIServer.auditLogMaxAges", "spec.kubeScheduler.qpss"],
    )
    desired = {"spec": {"a": 1, "kubeAPIServer": {"auditLogMaxAges": 7}, "hooks": [{"nmae": "x", "name": "h"}], "kubelet": {"x": 1}}}
    cleaned = kops_spec.without_dropped(
        desired, ["spec.kubeAPIServer.auditLogMaxAges", "spec.hooks[0].nmae", "spec.kubelet.x"], {"spec": {"a": 1, "kubelet": {}}}
    )
    assert cleaned == {"spec": {"a": 1, "hooks": [{"name": "h"}], "kubelet": {}}}  # kubelet: {} was stored already
    assert desired["spec"]["kubeAPIServer"] == {"auditLogMaxAges": 7}  # not changed in place


@pytest.mark.parametrize("value", ["8\u17e9s", "\u0661h", "1\u0663m"])
def test_a_duration_takes_ascii_digits_only_as_go(value):
    """Go's time.ParseDuration reads 0-9 only; Python's \\d also matches other Unicode digits (found by the bad-input
    matrix: '8\u17e9s' was read as 89 seconds and refused as 'under 24h' instead of as not a duration)."""
    with pytest.raises(RuleError, match="is not a duration such as 24h, 90m or 30s"):
        kops_rules.duration_seconds(value, "max_instance_lifetime")


def test_an_instance_group_name_over_253_characters_says_so():
    """k8s.io/apimachinery IsDNS1123Subdomain: at most 253 characters; the message says that, not the character rule."""
    with pytest.raises(RuleError, match=r"^name: 'a+' has 254 characters; an InstanceGroup name is at most 253 \(a DNS subdomain\)$"):
        kops_rules.instance_group_name("a" * 254)
    assert kops_rules.instance_group_name("a" * 253) == "a" * 253


def test_availability_zones_take_ascii_digits_only():
    with pytest.raises(RuleError, match="is not an availability zone name"):
        kops_rules.zones(["us-east-\u0661a"])
    with pytest.raises(RuleError, match="is not a version such as 1.34.1"):
        kube_versions.kubernetes_version("1.3\u0665.0")
