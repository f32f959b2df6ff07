"""Issue 16 item 8: an exported admin credential that still serves is kept (kops mints a new one on every export,
pkg/kubeconfig/create_kubecfg.go:169-199); the reasons to renew, each from a kubeconfig shaped as kops writes it."""

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.kopsible.kops.plugins.module_utils._kops.kubeconfig import cluster_entry, renewal_reason

NOW = datetime.datetime(2026, 12, 1, 8, 0, 0, tzinfo=datetime.timezone.utc)
NAME = "mycluster01.kopsclustertest.example.org"


def _pem(cert):
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def _ca(common_name="kubernetes-ca"):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _client(ca, hours_left):
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubecfg-me")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(hours=1))
        .not_valid_after(NOW + datetime.timedelta(hours=hours_left))
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert)


def _config(ca, client, server="https://api." + NAME, user=NAME):
    """A kubeconfig as kops' KubeconfigBuilder writes it (pkg/kubeconfig/kubecfg_builder.go), plus another cluster."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": NAME,
        "clusters": [
            {"name": NAME, "cluster": {"server": server, "certificate-authority-data": _pem(ca[1]), "tls-server-name": "api.internal." + NAME}},
            {"name": "other", "cluster": {"server": "https://other"}},
        ],
        "contexts": [{"name": "other", "context": {"cluster": "other", "user": "other"}}, {"name": NAME, "context": {"cluster": NAME, "user": user}}],
        "users": [{"name": "other", "user": {"token": "t"}}, {"name": user, "user": {"client-certificate-data": client, "client-key-data": "S0VZ"}}],
    }


@pytest.fixture(scope="module")
def ca():
    return _ca()


def test_a_fresh_credential_is_kept(ca):
    """Issue input: a re-run right after an export with admin: 18h keeps the credential (17h left)."""
    have = cluster_entry(_config(ca, _client(ca, 17)), NAME)
    fresh = cluster_entry(_config(ca, _client(ca, 18)), NAME)
    assert have["expires"] == NOW + datetime.timedelta(hours=17)
    assert renewal_reason(have, fresh, 18 * 3600, now=NOW) is None


@pytest.mark.parametrize(
    "hours_left, admin, reason",
    [
        (8.5, 18 * 3600, "the credential expires at 2026-12-01T16:30:00Z, in less than half of admin (18h)"),
        (-1, 18 * 3600, "the credential expired at 2026-12-01T07:00:00Z"),
        # variant: admin shortened to 1h30m while 17 h are left: the longer lifetime is not kept
        (17, 5400, "the credential is valid until 2026-12-02T01:00:00Z, longer than admin (1h30m) allows"),
    ],
)
def test_expiry_decides(ca, hours_left, admin, reason):
    have = cluster_entry(_config(ca, _client(ca, hours_left)), NAME)
    fresh = cluster_entry(_config(ca, _client(ca, 18)), NAME)
    assert renewal_reason(have, fresh, admin, now=NOW) == reason


def test_server_ca_user_and_issuer_decide(ca):
    fresh = cluster_entry(_config(ca, _client(ca, 18)), NAME)
    moved = cluster_entry(_config(ca, _client(ca, 17), server="https://api-lb.elb.amazonaws.com"), NAME)
    assert renewal_reason(moved, fresh, 18 * 3600, now=NOW) == ("its server is https://api-lb.elb.amazonaws.com, kops now writes https://api." + NAME)
    renamed = cluster_entry(_config(ca, _client(ca, 17), user="me"), NAME)
    assert renewal_reason(renamed, fresh, 18 * 3600, now=NOW) == "its user is me, kops now writes " + NAME
    other_ca = _ca()
    recreated = cluster_entry(_config(other_ca, _client(other_ca, 17)), NAME)  # a cluster of the same name, new CA
    assert renewal_reason(recreated, fresh, 18 * 3600, now=NOW) == ("its certificate authority differs from the cluster's CA in the state store")
    # the CA entry is the cluster's, but the client certificate came from another CA
    foreign = cluster_entry(_config(ca, _client(other_ca, 17)), NAME)
    assert renewal_reason(foreign, fresh, 18 * 3600, now=NOW) == ("the client certificate of user %s was not issued by the cluster's CA" % NAME)
    missing = cluster_entry({"contexts": []}, NAME)
    assert missing["context"] is False
    assert renewal_reason(missing, fresh, 18 * 3600, now=NOW) == "the kubeconfig has no context for the cluster"
    no_key = _config(ca, _client(ca, 17))
    del no_key["users"][1]["user"]["client-key-data"]
    assert renewal_reason(cluster_entry(no_key, NAME), fresh, 18 * 3600, now=NOW) == ("user %s has no client certificate and key" % NAME)
