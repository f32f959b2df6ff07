# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading kubeconfig files kops writes, and whether an exported admin credential still serves.

``kops export kubecfg NAME --admin=DURATION`` writes three entries named after the cluster (context, cluster and
user, pkg/kubeconfig/kubecfg_builder.go:111-112 and 148-221 of create_kubecfg.go BuildKubecfg) and mints a new
client certificate every time (create_kubecfg.go:169-199). :func:`renewal_reason` compares the kubeconfig a user
has with the one kops would write now, so that a re-run with a credential that still serves changes nothing.
"""

import base64
import datetime

try:
    import yaml
except ImportError:  # reported by every kops module through missing_required_lib (kops_common.state_store_of)
    yaml = None

# A kept credential must still be valid for at least this share of the requested ``admin`` lifetime; below it the
# credential is renewed, so that a run always leaves one valid for at least half of ``admin``.
RENEW_BELOW = 0.5
# A credential valid for longer than ``admin`` plus this slack (seconds) was minted for a longer lifetime than the
# one asked for now, and is renewed so that the shorter lifetime holds.
LIFETIME_SLACK = 300


def read_kubeconfig(path):
    """The kubeconfig at ``path`` as a dict ({} when the file is missing, empty or not YAML)."""
    try:
        with open(path) as handle:
            config = yaml.safe_load(handle)
    except (IOError, OSError, yaml.YAMLError):
        return {}
    return config if isinstance(config, dict) else {}


def _named(items, name, key):
    return next(((i or {}).get(key) or {} for i in items or [] if (i or {}).get("name") == name), None)


def _certificate(data):
    """A cryptography x509 certificate from base64 PEM ``data``, or None (no data, not PEM, no cryptography)."""
    if not data:
        return None
    try:
        from cryptography import x509

        return x509.load_pem_x509_certificate(base64.b64decode(data))
    except Exception:  # no cryptography, or not a PEM certificate
        return None


def _ca_certificates(data):
    """Every certificate of a base64 PEM bundle (list; a CA keyset may hold several, create_kubecfg.go:160)."""
    if not data:
        return []
    try:
        from cryptography import x509

        return x509.load_pem_x509_certificates(base64.b64decode(data))
    except Exception:
        return []


def _not_after(cert):
    expires = getattr(cert, "not_valid_after_utc", None)
    if expires is None:
        expires = cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)
    return expires


def cluster_entry(config, cluster):
    """What ``config`` (a kubeconfig dict) holds for ``cluster``'s context, in the shape kops writes it:
    ``{'context': bool, 'server', 'ca' (base64 str), 'tls_server_name', 'user', 'client_certificate' (base64 str),
    'client_key': bool, 'expires' (aware datetime or None)}``; ``context`` False when there is no such context."""
    context = _named(config.get("contexts"), cluster, "context")
    found = {
        "context": context is not None,
        "server": None,
        "ca": None,
        "tls_server_name": None,
        "user": None,
        "client_certificate": None,
        "client_key": False,
        "expires": None,
    }
    if context is None:
        return found
    entry = _named(config.get("clusters"), context.get("cluster"), "cluster") or {}
    user = _named(config.get("users"), context.get("user"), "user") or {}
    cert = _certificate(user.get("client-certificate-data"))
    found.update(
        server=entry.get("server"),
        ca=entry.get("certificate-authority-data"),
        tls_server_name=entry.get("tls-server-name"),
        user=context.get("user"),
        client_certificate=user.get("client-certificate-data"),
        client_key=bool(user.get("client-key-data")),
        expires=_not_after(cert) if cert is not None else None,
    )
    return found


def kubeconfig_credential(path, cluster):
    """The user kops wrote for ``cluster`` in the kubeconfig at ``path`` and when its client certificate expires:
    ``{'user': str or None, 'admin_expires': ISO 8601 UTC str or None}`` (kops names the context and the admin user
    after the cluster, pkg/kubeconfig/kubecfg_builder.go:111-112; the certificate's NotAfter is now + ``--admin``,
    pkg/kubeconfig/create_kubecfg.go:169-186)."""
    entry = cluster_entry(read_kubeconfig(path), cluster)
    return {"user": entry["user"], "admin_expires": iso(entry["expires"])}


def iso(moment):
    """``moment`` (aware datetime or None) as ``2026-12-01T17:32:05Z`` (None stays None)."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def _issued_by(client_certificate, ca_bundle):
    cert = _certificate(client_certificate)
    if cert is None:
        return False
    for ca in _ca_certificates(ca_bundle):
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except Exception:  # another CA of the bundle, or a signature that does not verify
            continue
    return False


def renewal_reason(have, fresh, admin_seconds, now=None):
    """Why the admin credential of a kubeconfig must be exported again (str), or None when it still serves.

    :param have: :func:`cluster_entry` of the user's kubeconfig.
    :param fresh: :func:`cluster_entry` of what ``kops export kubecfg`` writes now (same cluster and ``--admin``).
    :param admin_seconds: the requested lifetime ``admin`` in seconds (float).
    :param now: aware datetime (default: the current time, UTC).
    It serves when server, CA, TLS server name and user equal kops' own, the user has a client certificate and key,
    the certificate was issued by the cluster's CA, and it is valid for at least :data:`RENEW_BELOW` of ``admin``
    and for no longer than ``admin`` (plus :data:`LIFETIME_SLACK`).
    """
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if not have["context"]:
        return "the kubeconfig has no context for the cluster"
    for key, label in (("server", "server"), ("tls_server_name", "TLS server name"), ("user", "user")):
        if have[key] != fresh[key]:
            return "its %s is %s, kops now writes %s" % (label, have[key], fresh[key])
    if have["ca"] != fresh["ca"]:
        return "its certificate authority differs from the cluster's CA in the state store"
    if not (have["client_certificate"] and have["client_key"]):
        return "user %s has no client certificate and key" % have["user"]
    if not _issued_by(have["client_certificate"], fresh["ca"]):
        return "the client certificate of user %s was not issued by the cluster's CA" % have["user"]
    if have["expires"] is None:
        return "the client certificate of user %s cannot be read" % have["user"]
    left = (have["expires"] - now).total_seconds()
    if left <= 0:
        return "the credential expired at %s" % iso(have["expires"])
    if left < admin_seconds * RENEW_BELOW:
        return "the credential expires at %s, in less than half of admin (%s)" % (iso(have["expires"]), _span(admin_seconds))
    if left > admin_seconds + LIFETIME_SLACK:
        return "the credential is valid until %s, longer than admin (%s) allows" % (iso(have["expires"]), _span(admin_seconds))
    return None


def _span(seconds):
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join("%d%s" % (v, u) for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v) or "0s"
