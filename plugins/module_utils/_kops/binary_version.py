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


def downgrade_problem(binary_version, applied_version, cluster, url):
    """The refusal (str) when kops ``binary_version`` is older than ``applied_version``, the version in the cluster's
    ``kops-version.txt`` at ``url``; None when it is not older, or when either version cannot be read as one (kops
    itself then reports its own error at apply)."""
    binary, applied = parse(binary_version), parse(applied_version)
    if binary is None or applied is None or applied <= binary:
        return None
    return (
        "kops_binary: kops %s is older than kops %s, which last applied cluster %s (%s). kops refuses to update a cluster with "
        "an older version than last used (upup/pkg/fi/cloudup/apply_cluster.go); nothing was written. Use kops %s or newer, "
        "or set allow_kops_downgrade: true (kops --allow-kops-downgrade)" % (binary_version, applied_version, cluster, url, applied_version)
    )
