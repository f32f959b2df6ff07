"""Bugs kops' golden create_cluster cases found (issue 21 item 4): the --cloud-labels text and the leading-v
Kubernetes version. Pure logic; the same inputs go through the real kops in
tests/integration/test_golden_create_cluster.py."""
import csv
import io

from ansible_collections.kopsible.kops.plugins.module_utils import kops_spec

# kops v1.36.2 tests/integration/create_cluster/private/options.yaml:
#   cloudLabels: "Owner=John Doe,dn=\"cn=John Doe: dc=example dc=com\", foo/bar=fib+baz"
PRIVATE_LABELS = {"Owner": "John Doe", "dn": "cn=John Doe: dc=example dc=com", "foo/bar": "fib+baz"}


def parse_like_kops(text):
    """cmd/kops/create_cluster.go parseCloudLabels, restated with Python's csv (the same dialect: every ',' a
    record break, '=' the separator, '"' quoting with doubling, leading white space trimmed)."""
    records = text.replace(",", "\n")
    rows = list(csv.reader(io.StringIO(records), delimiter="=", quotechar='"', doublequote=True,
                           skipinitialspace=True, strict=True))
    assert all(len(row) == 2 for row in rows), rows
    return dict(rows)


def flag_of(labels):
    args = kops_spec.create_cluster_args("c.example.org", {"cloud_labels": labels})
    return args[args.index("--cloud-labels") + 1]


def test_cloud_labels_with_equals_are_quoted_as_kops_reads_them():
    text = flag_of(PRIVATE_LABELS)
    assert text == 'Owner=John Doe,dn="cn=John Doe: dc=example dc=com",foo/bar=fib+baz'
    assert parse_like_kops(text) == PRIVATE_LABELS


def test_cloud_labels_quotes_and_leading_space_survive():
    labels = {"a=b": 'say "hi"', "lead": "  two spaces", "empty": "", "plain": "x"}
    assert parse_like_kops(flag_of(labels)) == labels


def test_cloud_labels_with_commas_or_line_breaks_are_left_for_the_spec():
    flag, rest = kops_spec.cloud_labels_flag({"team": "a,b", "note": "x\ny", "ok": "1", "gone": None})
    assert flag == "ok=1"
    assert rest == {"team": "a,b", "note": "x\ny"}
    assert "--cloud-labels" not in kops_spec.create_cluster_args("c.example.org", {"cloud_labels": {"team": "a,b"}})


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
