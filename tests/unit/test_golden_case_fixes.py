"""Bugs kops' golden create_cluster cases found (issue 21 item 4): the --cloud-labels text and the leading-v
Kubernetes version. Pure logic; the same inputs go through the real kops in
tests/integration/test_golden_create_cluster.py."""

import csv
import io

from ansible_collections.kopsible.kops.plugins.module_utils._kops import create_args
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec

# kops v1.36.2 tests/integration/create_cluster/private/options.yaml:
#   cloudLabels: "Owner=John Doe,dn=\"cn=John Doe: dc=example dc=com\", foo/bar=fib+baz"
PRIVATE_LABELS = {"Owner": "John Doe", "dn": "cn=John Doe: dc=example dc=com", "foo/bar": "fib+baz"}


def parse_like_kops(text):
    """cmd/kops/create_cluster.go parseCloudLabels, restated with Python's csv (the same dialect: every ',' a
    record break, '=' the separator, '"' quoting with doubling, leading white space trimmed)."""
    records = text.replace(",", "\n")
    rows = list(csv.reader(io.StringIO(records), delimiter="=", quotechar='"', doublequote=True, skipinitialspace=True, strict=True))
    assert all(len(row) == 2 for row in rows), rows
    return dict(rows)


def flag_of(labels):
    args = create_args.create_cluster_args("c.example.org", {"cloud_labels": labels})
    return args[args.index("--cloud-labels") + 1]


def test_cloud_labels_with_equals_are_quoted_as_kops_reads_them():
    text = flag_of(PRIVATE_LABELS)
    assert text == 'Owner=John Doe,dn="cn=John Doe: dc=example dc=com",foo/bar=fib+baz'
    assert parse_like_kops(text) == PRIVATE_LABELS


def test_cloud_labels_quotes_and_leading_space_survive():
    labels = {"a=b": 'say "hi"', "lead": "  two spaces", "empty": "", "plain": "x"}
    assert parse_like_kops(flag_of(labels)) == labels


def test_cloud_labels_with_commas_or_line_breaks_are_left_for_the_spec():
    flag, rest = create_args.cloud_labels_flag({"team": "a,b", "note": "x\ny", "ok": "1", "gone": None})
    assert flag == "ok=1"
    assert rest == {"team": "a,b", "note": "x\ny"}
    assert "--cloud-labels" not in create_args.create_cluster_args("c.example.org", {"cloud_labels": {"team": "a,b"}})


def test_same_version_with_or_without_v_is_no_change():
    stored = {"kind": "Cluster", "spec": {"kubernetesVersion": "v1.32.0"}}
    for given in ("v1.32.0", "1.32.0"):
        desired = kops_spec.desired_object(stored, kops_spec.cluster_overrides({"kubernetes_version": given}, stored))
        assert kops_spec.diff_paths(stored, desired) == []
    stored = {"kind": "Cluster", "spec": {"kubernetesVersion": "1.32.0"}}
    desired = kops_spec.desired_object(stored, kops_spec.cluster_overrides({"kubernetes_version": "v1.32.0"}, stored))
    assert kops_spec.diff_paths(stored, desired) == []
    desired = kops_spec.desired_object(stored, kops_spec.cluster_overrides({"kubernetes_version": "v1.33.0"}, stored))
    assert desired["spec"]["kubernetesVersion"] == "1.33.0"


# ------------------------------------------------------------------------------------------------
# Creation options of the golden cases (issue 21 items 2/3): argv and rules, with kops' own values
# ------------------------------------------------------------------------------------------------
import pytest  # noqa: E402

from ansible_collections.kopsible.kops.plugins.module_utils._kops import create_rules  # noqa: E402
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError  # noqa: E402


def test_creation_options_argv():
    # kops v1.36.2 tests/integration/create_cluster: complex (NetworkCIDRs, Sets), private (security groups),
    # karpenter, minimal_feature-gates, ha_encrypt, ipv6, different-amis
    args = create_args.create_cluster_args(
        "c.example.com",
        {
            "network_cidr": "10.0.0.0/16",
            "additional_network_cidrs": ["10.1.0.0/16", "10.2.0.0/16"],
            "set": ["cluster.spec.nodePortAccess=1.2.3.4/32,10.20.30.0/24", "cluster.spec.karpenter.featureGates=StaticCapacity=true"],
            "node_security_groups": ["sg-0123456789abcdef0", "sg-12345678"],
            "control_plane_security_groups": ["sg-87654321"],
            "kubernetes_feature_gates": ["SELinuxMountReadWriteOncePod", "+ReadWriteOncePod", "-APIResponseCompression"],
            "encrypt_etcd_storage": False,
            "ipv6": True,
            "instance_manager": "karpenter",
            "discovery_store": "s3://oidc",
            "api_server_count": 1,
        },
    )
    text = " ".join(args)
    assert "--network-cidr 10.0.0.0/16,10.1.0.0/16,10.2.0.0/16" in text
    assert args[args.index("--set") + 1] == '"cluster.spec.nodePortAccess=1.2.3.4/32,10.20.30.0/24"'  # one CSV record
    assert "--set cluster.spec.karpenter.featureGates=StaticCapacity=true" in text
    assert "--node-security-groups sg-0123456789abcdef0,sg-12345678" in text and "--control-plane-security-groups sg-87654321" in text
    assert "--kubernetes-feature-gates SELinuxMountReadWriteOncePod,+ReadWriteOncePod,-APIResponseCompression" in text
    assert "--encrypt-etcd-storage=false" in args and "--ipv6" in args
    assert "--instance-manager karpenter" in text and "--discovery-store s3://oidc" in text and "--api-server-count 1" in text
    assert "--encrypt-etcd-storage" not in " ".join(create_args.create_cluster_args("c.example.com", {}))


def test_after_create_sets_egress_on_zone_subnets_only():
    # new_cluster.go:820-858: the zone subnets get Egress, the utility subnets kops adds for private topology do not
    cluster = {
        "kind": "Cluster",
        "metadata": {"name": "p", "creationTimestamp": "x"},
        "spec": {"subnets": [{"name": "us-east-1a", "type": "Private"}, {"name": "utility-us-east-1a", "type": "Utility"}]},
    }
    after = create_args.after_create(cluster, {"egress": "nat-0123456789abcdef0", "cloud_labels": {"team": "a,b", "x": "1"}})
    assert [s.get("egress") for s in after["spec"]["subnets"]] == ["nat-0123456789abcdef0", None]
    assert after["spec"]["cloudLabels"] == {"team": "a,b"} and "creationTimestamp" not in after["metadata"]
    assert create_args.after_create(cluster, {"cloud_labels": {"x": "1"}}) is None


@pytest.mark.parametrize(
    "value, topology, ipv6, message",
    [
        ("igw-123", "private", False, "must be a NAT gateway"),  # validation.go:726-731
        ("nat-09123456", "public", False, "needs topology: private"),  # validation.go:732-734
        # kops' API validation takes these, its network model refuses them at create (network.go:441-494)
        ("nat", "private", False, "must be a NAT gateway"),
        ("tgw-", "private", False, "must be a NAT gateway"),
    ],
)
def test_egress_rules(value, topology, ipv6, message):
    with pytest.raises(RuleError, match="egress: .*" + message):
        create_rules.egress(value, topology, ipv6)


def test_egress_accepted_values():
    for value in ("nat-09123456", "i-09123456", "eipalloc-0123", "tgw-0123"):  # the golden cases' and kops' types
        assert create_rules.egress(value, "private") == value
    assert create_rules.egress("External", "public") == "External"
    assert create_rules.egress("nat-1", "public", ipv6=True) == "nat-1"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: create_rules.security_groups(["sg-exampleid"], "node_security_groups"), "node_security_groups: 'sg-exampleid'"),
        (lambda: create_rules.security_groups(["sg-12345678", "sg-12345678"], "node_security_groups"), "more than once"),
        (lambda: create_rules.feature_gates(["", "+A"]), "kubernetes_feature_gates: ''"),
        (lambda: create_rules.feature_gates(["+-A"]), "kubernetes_feature_gates"),
        (lambda: create_rules.discovery_store("oidc-bucket"), "discovery_store"),
        (lambda: create_rules.discovery_store("ftp://x"), "discovery_store"),
        (lambda: create_rules.spec_set(["cluster.spec.nodePortAccess"]), "set: "),  # set_cluster.go "unhandled field"
        (lambda: create_rules.spec_set(["=x"]), "set: "),
        (lambda: create_rules.instance_manager("karpenter", None), "karpenter requires --discovery-store"),
        (lambda: create_rules.instance_manager("asg", None), "instance_manager"),
        (lambda: create_rules.api_server_count(1, "-ImageDigest"), "APIServerNodes"),
        (lambda: create_rules.api_server_count(-1, "+APIServerNodes"), "api_server_count: must be 0 or more"),
    ],
)
def test_creation_option_rules(call, message):
    with pytest.raises(RuleError, match=message.replace("+", r"\+").replace("[", r"\[")):
        call()


def test_creation_option_rules_accept_kops_cases():
    create_rules.security_groups(["sg-0123456789abcdef0", "sg-12345678"], "node_security_groups")
    create_rules.feature_gates(["SELinuxMountReadWriteOncePod", "+ReadWriteOncePod", "-APIResponseCompression"])
    create_rules.discovery_store("s3://oidc/discovery")
    create_rules.spec_set(
        [
            "cluster.spec.networking.calico.bpfEnabled=true",
            "spec.addons[0].manifest=https://example.com/addon.yaml",
            "cluster.spec.karpenter.featureGates=StaticCapacity=true",
        ]
    )
    create_rules.instance_manager("karpenter", "s3://oidc")
    create_rules.api_server_count(1, "-ImageDigest,+APIServerNodes")
    create_rules.api_server_count(0, None)


def test_creation_options_compared_with_an_existing_cluster():
    from ansible_collections.kopsible.kops.plugins.module_utils._kops.create_options import create_only_differences, stored_create_options

    cluster = {
        "metadata": {"name": "p.example.com"},
        "spec": {
            "additionalNetworkCIDRs": ["10.1.0.0/16"],
            "serviceAccountIssuerDiscovery": {"discoveryStore": "s3://oidc/p.example.com"},
            "subnets": [
                {"name": "us-east-1a", "zone": "us-east-1a", "type": "Private", "egress": "nat-1"},
                {"name": "utility-us-east-1a", "zone": "us-east-1a", "type": "Utility"},
            ],
        },
    }
    groups = {
        "nodes": {"spec": {"role": "Node", "additionalSecurityGroups": ["sg-12345678"]}},
        "cp": {"spec": {"role": "Master", "additionalSecurityGroups": ["sg-87654321"]}},
    }
    stored = stored_create_options(cluster, groups)
    same = {
        "additional_network_cidrs": ["10.1.0.0/16"],
        "discovery_store": "s3://oidc/",
        "egress": "nat-1",
        "node_security_groups": ["sg-12345678"],
        "control_plane_security_groups": ["sg-87654321"],
    }
    assert create_only_differences(same, stored) == []
    other = {"egress": "nat-2", "node_security_groups": ["sg-11111111"], "discovery_store": "s3://other"}
    assert create_only_differences(other, stored) == [
        "egress (given nat-2; the cluster has ['nat-1'])",
        "node_security_groups (given ['sg-11111111']; the cluster has ['sg-12345678'])",
        "discovery_store (given s3://other; the cluster has s3://oidc)",
    ]
