# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cloud plan of a spec change that is not written: check mode's exact preview.

kops plans from the state store, so a change that check mode must not write cannot be planned in
place. Instead the cluster's specs (``<cluster>/config`` and ``<cluster>/instancegroup/*``) are
copied to a temporary ``file://`` state store, the changed manifests written there, and
``kops update cluster`` (dry run) runs against it. Keys, secrets and the cloud are still read from
their real places (the spec's ``configBase`` points at the real store), and nothing is written:
the dry run only reads.
"""

import os
import shutil
import tempfile

try:
    import yaml
except ImportError:  # reported by every kops module through missing_required_lib (kops_common.state_store_of)
    yaml = None

from ansible_collections.kopsible.kops.plugins.module_utils import kops_output
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import spec_path
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.reader import copy_cluster_specs
from ansible_collections.kopsible.kops.plugins.module_utils.kops_cluster_ops import update_cluster_args


def preview_plan(runner, s3_client, state_store, cluster, manifests, removed_groups=()):
    """The plan kops would make if ``manifests`` were stored.

    :param runner: the module's KopsRunner (its calls are recorded as usual).
    :param s3_client: a boto3 S3 client (unused for a ``file://`` store).
    :param manifests: list of Cluster / InstanceGroup dicts (v1alpha2) that replace or add to the stored ones.
    :param removed_groups: InstanceGroup names to leave out (a deletion being previewed).
    :returns: the parsed plan (see kops_output.parse_update_plan).
    :raises KopsError: kops failed.
    """
    workdir = tempfile.mkdtemp(prefix="kopsible-preview-")
    try:
        target = os.path.join(workdir, cluster)
        copy_cluster_specs(s3_client, state_store, cluster, target)
        for manifest in manifests:
            path = os.path.join(target, *spec_path(manifest))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                yaml.safe_dump(manifest, handle, default_flow_style=False)
        for name in removed_groups:
            path = os.path.join(target, *spec_path({"kind": "InstanceGroup", "metadata": {"name": name}}))
            if os.path.exists(path):
                os.unlink(path)
        preview = runner.derived(KOPS_STATE_STORE="file://" + workdir)
        return kops_output.parse_update_plan(preview.run(update_cluster_args(cluster)).stdout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
