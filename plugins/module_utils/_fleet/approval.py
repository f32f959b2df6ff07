# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet update run's approved plan against the clusters as they are now (issue 31, "plans before action").

The check-mode run of playbooks/fleet_update_run.yml publishes, per cluster, its state store and
``spec_fingerprint`` (_state_store.summary: a hash per stored object and the kops version of the last apply) with
the plan a person approves. The approved run gives them back (fleet_run ``approved``); a cluster the run has not
started yet whose stored state changed since the plan was made is named, and the run does not start. A cluster the
run already started (a resumed run) changed because of the run itself and is not compared.
"""

from ansible_collections.kopsible.kops.plugins.module_utils._fleet.record import Refused
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.reader import read_cluster
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.summary import spec_fingerprint


def fingerprint_changes(before, now):
    """What differs between two :func:`spec_fingerprint` readings (list of str, sorted): ``'<object> changed'``,
    ``'<object> added'``, ``'<object> removed'``, ``'kops-version.txt <a> -> <b>'``; ``now`` None: the cluster is
    gone."""
    if now is None:
        return ["the cluster is no longer in its state store"]
    found = []
    for key in sorted(set(before) | set(now)):
        if key == "kops-version.txt":
            if before.get(key) != now.get(key):
                found.append("kops-version.txt %s -> %s" % (before.get(key), now.get(key)))
        elif key not in now:
            found.append("%s removed" % key)
        elif key not in before:
            found.append("%s added" % key)
        elif before[key] != now[key]:
            found.append("%s changed" % key)
    return found


def check_approved(record, approved, s3):
    """Raise :class:`~._fleet.record.Refused` when the approved plan no longer holds for ``record`` (the run's record,
    dict): a cluster of the plan missing from ``approved`` (dict: cluster -> ``{'state_store', 'spec_fingerprint'}``,
    the check-mode run's ``fleet_run_approved_plan``), or a pending cluster whose stored state changed (each named with
    what changed). One read per pending cluster with ``s3`` (boto3 S3: read_cluster). :raises StoreError: a store
    cannot be read."""
    problems = []
    for cluster, entry in sorted(record["clusters"].items()):
        if entry["state"] != "pending":
            continue
        seen = approved.get(cluster)
        if not isinstance(seen, dict) or not seen.get("state_store") or not isinstance(seen.get("spec_fingerprint"), dict):
            problems.append("%s: not in the approved plan" % cluster)
            continue
        now = read_cluster(s3, seen["state_store"], cluster)
        changes = fingerprint_changes(seen["spec_fingerprint"], spec_fingerprint(now) if now else None)
        if changes:
            problems.append("%s: %s" % (cluster, ", ".join(changes)))
    if problems:
        raise Refused(
            "the approved plan no longer holds, so no cluster starts: %s. Nothing was written; run the check mode again "
            "and approve the new plan" % "; ".join(problems)
        )
