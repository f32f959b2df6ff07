# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kops binary's version against the version that last applied a cluster.

kops writes its own version to ``<configBase>/kops-version.txt`` when it applies a cluster
(pkg/apis/kops/registry/registry.go ``PathKopsVersionUpdated``, pkg/model/config.go) and its apply refuses to run when
that version is newer than its own, unless ``--allow-kops-downgrade`` (upup/pkg/fi/cloudup/apply_cluster.go:277-297:
``semver.Parse`` of the file, ``version.GT(kopsbase.Version)``, "kops version older than last used to update the
cluster"). kops checks at apply time, after a module may already have written the spec; the modules check the same
rule before their first write (_kops.run.KopsRun). Pure functions: unit tests need no kops.
"""

import re

# pkg/apis/kops/registry/registry.go: PathKopsVersionUpdated
VERSION_FILE = "kops-version.txt"

# Semantic Versioning 2.0.0 as github.com/blang/semver/v4 Parse reads it (a leading "v" is not accepted there; kops
# writes the bare version, e.g. "1.36.2"; tolerating one here refuses nothing kops accepts).
_SEMVER = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def parse(text):
    """The precedence key of a semantic version (tuple), or None when ``text`` (str) is not one. Build metadata is
    ignored and a pre-release sorts before its release, its dot-separated parts numerically when numeric (semver 2.0.0
    section 11, as blang/semver's ``Compare``)."""
    match = _SEMVER.match(str(text or "").strip())
    if not match:
        return None
    major, minor, patch, pre = match.groups()
    if pre is None:
        pre_key = (1,)
    else:
        pre_key = (0,) + tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in pre.split("."))
    return (int(major), int(minor), int(patch), pre_key)


def is_downgrade(binary_version, applied_version):
    """True when kops ``binary_version`` is older than ``applied_version`` (both str), kops' refusal at apply
    (upup/pkg/fi/cloudup/apply_cluster.go ``version.GT(kopsbase.Version)``); False when either cannot be read as a
    semantic version (kops then reports its own error)."""
    binary, applied = parse(binary_version), parse(applied_version)
    return binary is not None and applied is not None and applied > binary


def bump_problem(binary_version, target_version, applied_versions, allow_downgrade=False):
    """The refusal (str) of a fleet's kops binary bump to ``target_version`` before anything is written, or None:
    the binary that will apply (``binary_version``, from ``kops version --short``) is another version than the
    plan's, or (unless ``allow_downgrade``) a cluster of ``applied_versions`` (dict: cluster name -> the version in
    its kops-version.txt, None when unknown) was last applied with a newer kops, which kops would refuse at each
    cluster's apply (:func:`is_downgrade`)."""
    if parse(binary_version) != parse(target_version):
        return "plan.change.kops_version: the play runs kops %s, not %s (kops_binary); nothing was written" % (binary_version, target_version)
    newer = ["%s (%s)" % (name, applied) for name, applied in sorted(applied_versions.items()) if is_downgrade(target_version, applied)]
    if not newer or allow_downgrade:
        return None
    return (
        "plan.change.kops_version: kops %s is older than the kops that last applied %s (kops refuses to update a cluster "
        "with an older version than last used: upup/pkg/fi/cloudup/apply_cluster.go); nothing was written. Set "
        "allow_kops_downgrade: true for kops --allow-kops-downgrade" % (target_version, ", ".join(newer))
    )


def downgrade_problem(binary_version, applied_version, cluster, url):
    """The refusal (str) when kops ``binary_version`` is older than ``applied_version``, the version in the cluster's
    ``kops-version.txt`` at ``url``; None when it is not older, or when either version cannot be read as one (kops
    itself then reports its own error at apply)."""
    if not is_downgrade(binary_version, applied_version):
        return None
    return (
        "kops_binary: kops %s is older than kops %s, which last applied cluster %s (%s). kops refuses to update a cluster with "
        "an older version than last used (upup/pkg/fi/cloudup/apply_cluster.go); nothing was written. Use kops %s or newer, "
        "or set allow_kops_downgrade: true (kops --allow-kops-downgrade)" % (binary_version, applied_version, cluster, url, applied_version)
    )
