"""Issue 16 items 3 and 4: the admin credential lifetime and state-store URLs, pure rules; and the expiry read
back from an exported kubeconfig."""

import base64
import datetime

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops.kubeconfig import kubeconfig_credential
from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import state_store_problem


@pytest.mark.parametrize("value", ["0", "0s", "0h0m"])
def test_admin_zero_refused(value):
    """kops issues the admin certificate only when --admin is not 0 (pkg/kubeconfig/create_kubecfg.go:169)."""
    with pytest.raises(RuleError) as err:
        kops_rules.admin_lifetime(value)
    assert str(err.value).startswith("admin: %r is no lifetime" % value)
    assert "no credential" in str(err.value)


@pytest.mark.parametrize("value, seconds", [("18h", 64800), ("30m", 1800), ("1h30m", 5400)])
def test_admin_lifetime_accepted(value, seconds):
    assert kops_rules.admin_lifetime(value) == seconds


def test_admin_not_a_duration():
    with pytest.raises(RuleError, match="^admin: '18 hours' is not a duration"):
        kops_rules.admin_lifetime("18 hours")


@pytest.mark.parametrize("url", ["s3://example-state-store/team//prod", "s3://example-state-store//prod", "s3://example-state-store/a/x//y"])
def test_state_store_empty_segment_refused(url):
    """util/pkg/vfs/s3fs.go:263-266 cleans joined keys (path.Join) while listing uses the raw prefix (s3fs.go:431)."""
    problem = state_store_problem(url)
    assert problem.startswith("state_store: %r has an empty path segment" % url)
    assert problem.endswith("write s3://%s" % "/".join(p for p in url[5:].split("/") if p))


@pytest.mark.parametrize(
    "url",
    ["s3://example-state-store", "s3://example-state-store/", "s3://example-state-store/team/prod", "s3://example-state-store/team/prod/", "file:///tmp/store"],
)
def test_state_store_accepted(url):
    assert state_store_problem(url) is None


@pytest.mark.parametrize("url, fragment", [("http://x", "must be an s3://"), ("s3://", "must be an s3://"), ("s3://b@d/x", "does not name an S3 bucket")])
def test_state_store_other_refusals(url, fragment):
    assert fragment in state_store_problem(url)


def _certificate(not_after):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubecfg")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(not_after - datetime.timedelta(hours=18))
        .not_valid_after(not_after)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def test_kubeconfig_credential_reads_the_cluster_users_certificate(tmp_path):
    """kops names context and admin user after the cluster (pkg/kubeconfig/kubecfg_builder.go:111-112)."""
    expires = datetime.datetime(2026, 12, 1, 17, 32, 5, tzinfo=datetime.timezone.utc)
    config = {
        "contexts": [
            {"name": "other", "context": {"user": "other"}},
            {"name": "c.example.org", "context": {"cluster": "c.example.org", "user": "c.example.org"}},
        ],
        "users": [{"name": "other", "user": {"token": "x"}}, {"name": "c.example.org", "user": {"client-certificate-data": _certificate(expires)}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert kubeconfig_credential(str(path), "c.example.org") == {"user": "c.example.org", "admin_expires": "2026-12-01T17:32:05Z"}
    assert kubeconfig_credential(str(path), "other") == {"user": "other", "admin_expires": None}
    assert kubeconfig_credential(str(tmp_path / "missing"), "c.example.org") == {"user": None, "admin_expires": None}
