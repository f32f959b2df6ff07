# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kops' Kubernetes version rules: the version format, the one-minor-version change rule, the versions kops v1.36.2
supports. Each raises kops_rules.RuleError naming the field and citing the kops source it mirrors."""

import re

from ansible_collections.kopsible.kops.plugins.module_utils._kops.rules import RuleError

# ASCII digits only (re.ASCII): Go's parsers take 0-9, never other Unicode digits Python's \d matches
_VERSION_RE = re.compile(r"^v?(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)(?P<pre>[-+][0-9A-Za-z.+-]+)?$", re.ASCII)


def kubernetes_version(value, field="kubernetes_version"):
    """A Kubernetes version ``X.Y.Z`` or ``vX.Y.Z`` (pkg/apis/kops/util/versions.go:30 ParseKubernetesVersion).
    Returns ``(major, minor, patch)`` ints."""
    match = _VERSION_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise RuleError("%s: %r is not a version such as 1.34.1 or v1.34.1" % (field, value))
    return int(match.group("major")), int(match.group("minor")), int(match.group("patch"))


def normalize_version(version):
    """Kubernetes versions are stored without a leading ``v`` (``v1.34.1`` -> ``1.34.1``)."""
    return version[1:] if version and version.startswith("v") else version


def check_version_change(current, desired):
    """The kOps upgrade rule: Kubernetes moves forward at most one minor version at a time and never back.

    kOps asks for "one minor release at a time (1.17 --> 1.18 --> 1.19)" (docs/operations/updates_and_upgrades.md:87,
    the Kubernetes version skew policy), and ``kops upgrade cluster`` itself proposes at most the next minor
    version of the channel's recommended one (cmd/kops/upgrade_cluster.go:175-193, "Try a minor version upgrade").
    kops has no check of its own for a version written with ``kops replace``; this is the guard of kops_cluster
    (``allow_version_skip`` turns it off).

    :param current: the stored version (``1.34.1``, ``v1.35.0``), or None for a new cluster (always allowed).
    :param desired: the version asked for (str).
    :returns: None when allowed, else a message (str) naming ``kubernetes_version``.
    :raises RuleError: either is not a version (:func:`kubernetes_version`).
    """
    if not current:
        return None
    old = kubernetes_version(current, "current version")
    new = kubernetes_version(desired)
    if new < old:
        return "kubernetes_version: %s is older than the running %s; downgrades are refused (allow_version_skip: true to force)" % (
            normalize_version(desired),
            normalize_version(current),
        )
    if new[:2] == old[:2]:
        return None
    if new[0] != old[0] or new[1] - old[1] > 1:
        return "kubernetes_version: %s skips a minor version from %s; upgrade one minor version at a time (%d.%d.x first) or set allow_version_skip: true" % (
            normalize_version(desired),
            normalize_version(current),
            old[0],
            old[1] + 1,
        )
    return None


# upup/pkg/fi/cloudup/apply_cluster.go:79 OldestSupportedKubernetesVersion (kops v1.36.2): an older version is
# written by `kops create cluster` but refused by every `kops update cluster` ("kubernetes upgrade is required").
OLDEST_SUPPORTED_KUBERNETES = (1, 31, 0)


# upup/pkg/fi/cloudup/apply_cluster.go:981-1005 (kops v1.36.2): a Kubernetes version at or above the next kops minor
# (1.37.0) is refused by every `kops update cluster` ("kops upgrade is required") unless KOPS_RUN_TOO_NEW_VERSION is
# set in kops' environment.
TOO_NEW_KUBERNETES = (1, 37, 0)


def supported_kubernetes_version(value, field="kubernetes_version", too_new_allowed=False):
    """:func:`kubernetes_version`, within the range kops v1.36.2 applies: at least its oldest supported version
    (1.31.0, upup/pkg/fi/cloudup/apply_cluster.go:79 and 1010-1017) and below the next kops minor (1.37.0,
    apply_cluster.go:981-1005), so that a version kops would never apply fails before the spec is written.
    ``too_new_allowed``: kops' environment has ``KOPS_RUN_TOO_NEW_VERSION``, kops' own bypass of the upper bound.
    Returns ``(major, minor, patch)``."""
    version = kubernetes_version(value, field)
    if version < OLDEST_SUPPORTED_KUBERNETES:
        raise RuleError(
            "%s: %s is older than %s, the oldest Kubernetes version kops v1.36.2 supports "
            "(kops would write the spec and refuse every update: 'kubernetes upgrade is required')" % (field, value, "%d.%d.%d" % OLDEST_SUPPORTED_KUBERNETES)
        )
    if version >= TOO_NEW_KUBERNETES and not too_new_allowed:
        raise RuleError(
            "%s: %s is not yet supported by kops v1.36.2, which applies Kubernetes below %s (kops would write the spec and "
            "refuse every update: 'kops upgrade is required'; KOPS_RUN_TOO_NEW_VERSION in kops_env is kops' own bypass)"
            % (field, value, "%d.%d.%d" % TOO_NEW_KUBERNETES)
        )
    return version
