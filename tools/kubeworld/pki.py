"""Keys and certificates of one cluster's control plane.

The cluster's CA is the one kops keeps in the state store, so that what kops hands out works unchanged:
``kops export kubeconfig --admin`` and ``kops validate cluster`` sign client certificates with
``<cluster>/pki/private/kubernetes-ca/keyset.yaml`` and trust that CA for the server
(pkg/kubeconfig/create_kubecfg.go, pkg/commands/... in kops v1.36.2). The service-account keyset
(``pki/private/service-account/keyset.yaml``) signs and verifies service-account tokens, as
kube-apiserver does in a kops cluster.

A keyset is a ``kops.k8s.io/v1alpha2`` ``Keyset``: ``spec.primaryId`` (lower-case ``d`` in the YAML) and
``spec.keys[]`` with ``id``, ``publicMaterial`` and ``privateMaterial`` = base64 of the PEM certificate
and key (pkg/apis/kops/v1alpha2/keyset.go; written by ``kops update cluster``, not by ``create``).
"""

import base64
import datetime
import ipaddress
import os

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Keypair(object):
    """A PEM certificate and private key (bytes each), as kops keeps a keyset's primary key."""

    def __init__(self, cert_pem, key_pem):
        self.cert_pem, self.key_pem = cert_pem, key_pem
        self.cert = x509.load_pem_x509_certificate(cert_pem)
        self.key = serialization.load_pem_private_key(key_pem, password=None)

    def public_key_pem(self):
        """The certificate's public key as a PEM ``PUBLIC KEY`` block (bytes)."""
        return self.cert.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def parse_keyset(text):
    """The primary :class:`Keypair` of a kops ``Keyset`` YAML document (str or bytes).

    Raises ValueError when the document is not a Keypair keyset with private material.
    """
    doc = yaml.safe_load(text) or {}
    spec = doc.get("spec") or {}
    keys = spec.get("keys") or []
    primary = spec.get("primaryId") or spec.get("primaryID")
    chosen = next((k for k in keys if str(k.get("id")) == str(primary)), keys[-1] if keys else None)
    if not chosen or not chosen.get("privateMaterial"):
        raise ValueError("keyset %s has no primary key with private material" % doc.get("metadata", {}).get("name"))
    return Keypair(base64.b64decode(chosen["publicMaterial"]), base64.b64decode(chosen["privateMaterial"]))


def _new_key():
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def issue(ca, common_name, organizations=(), dns_names=(), ip_addresses=(), server=False, days=365):
    """A new key and certificate signed by ``ca`` (a :class:`Keypair`); returns a :class:`Keypair`.

    ``server`` makes a serving certificate (extended key usage serverAuth, with the given DNS and IP
    subject alternative names); otherwise a client certificate (clientAuth) whose subject is
    ``CN=common_name, O=organizations`` (Kubernetes reads the user and groups from them).
    """
    key = _new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    name = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    name.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    sans = [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return Keypair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def self_signed_ca(common_name, days=365):
    """A new self-signed CA :class:`Keypair` (the front-proxy CA: kops makes its own, not in the store)."""
    key = _new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Keypair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def write(directory, name, pair):
    """Write ``name.crt`` and ``name.key`` (mode 0600) under ``directory``; returns ``(crt, key)`` paths."""
    crt, key = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
    with open(crt, "wb") as handle:
        handle.write(pair.cert_pem)
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pair.key_pem)
    return crt, key


def kubeconfig(path, server, ca_pem, client, tls_server_name=None, name="kopsible"):
    """Write a kubeconfig for ``server`` trusting ``ca_pem`` with the client :class:`Keypair` ``client``
    (embedded data, mode 0600); returns ``path``."""
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [
            {
                "name": name,
                "user": {"client-certificate-data": base64.b64encode(client.cert_pem).decode(), "client-key-data": base64.b64encode(client.key_pem).decode()},
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config, handle)
    return path
