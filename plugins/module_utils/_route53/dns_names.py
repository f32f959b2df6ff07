# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DNS name rules shared by every module (pure logic, no I/O).

The rules are RFC 1035 section 2.3.4 (labels 1..63 octets, names up to 253 characters in
presentation form without the trailing dot) and RFC 1123 section 2.1 (a label may start with a
digit). kOps applies the same limits to cluster names (pkg/apis/kops/validation/validation.go,
``validateClusterName`` via ``k8s.io/apimachinery`` IsDNS1123Subdomain).
"""

import re

MAX_NAME_LENGTH = 253
MAX_LABEL_LENGTH = 63
_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


class DNSNameError(ValueError):
    """Raised by :func:`normalize_dns_name` with a message naming the field and the broken rule."""


def normalize_dns_name(value, field="name"):
    """Return ``value`` as a canonical DNS name: lowercase, no trailing dot.

    :param value: the name as given (str); uppercase is folded, one trailing dot is dropped.
    :param field: the option name to put in error messages.
    :returns: str, e.g. ``kopsclustertest.example.org``.
    :raises DNSNameError: empty name, empty label, a label over 63 characters, a name over 253
        characters, or a label with characters other than a-z, 0-9 and inner hyphens.
    """
    if not isinstance(value, str) or not value.strip():
        raise DNSNameError("%s: a DNS name is required, got %r" % (field, value))
    name = value.strip().lower()
    if name.endswith("."):
        name = name[:-1]
    if len(name) > MAX_NAME_LENGTH:
        raise DNSNameError("%s: DNS name %r is %d characters long; the limit is %d" % (field, name, len(name), MAX_NAME_LENGTH))
    for label in name.split("."):
        if not label:
            raise DNSNameError("%s: DNS name %r has an empty label (two dots in a row, or a leading dot)" % (field, value))
        if len(label) > MAX_LABEL_LENGTH:
            raise DNSNameError("%s: label %r of %r is %d characters long; the limit is %d" % (field, label, name, len(label), MAX_LABEL_LENGTH))
        if not _LABEL_RE.match(label):
            raise DNSNameError("%s: label %r of %r may hold only a-z, 0-9 and '-' (not at either end)" % (field, label, name))
    return name


def is_subdomain(name, parent):
    """True when ``name`` lies strictly below ``parent`` (both normalised str); a name is not its own subdomain."""
    return name != parent and name.endswith("." + parent)


def parent_name(name):
    """The name one label up (str): ``a.b.example.org`` -> ``b.example.org``; '' for a single label."""
    return name.split(".", 1)[1] if "." in name else ""
