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


def split_store(state_store):
    """``s3://bucket/path`` -> ``('s3', 'bucket', 'path')``; ``file:///dir`` -> ``('file', '', '/dir')``."""
    scheme, dummy, rest = state_store.partition("://")
    if scheme == "s3":
        bucket, dummy, prefix = rest.partition("/")
        return "s3", bucket, prefix.strip("/")
    return scheme, "", rest


def _copy_specs(s3_client, state_store, cluster, target):
    scheme, bucket, prefix = split_store(state_store)
    base = "%s/%s/" % (prefix, cluster) if prefix else "%s/" % cluster

    def wanted(rel):
        return rel == "config" or rel.startswith("instancegroup/")

    if scheme == "file":
        source = os.path.join(prefix, cluster)
        for root, dummy, files in os.walk(source):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), source)
                if wanted(rel):
                    os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
                    shutil.copy(os.path.join(root, name), os.path.join(target, rel))
        return
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=base):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(base) :]
            if wanted(rel):
                path = os.path.join(target, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(s3_client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())


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
        _copy_specs(s3_client, state_store, cluster, target)
        for manifest in manifests:
            if manifest.get("kind") == "Cluster":
                path = os.path.join(target, "config")
            else:
                path = os.path.join(target, "instancegroup", manifest["metadata"]["name"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                yaml.safe_dump(manifest, handle, default_flow_style=False)
        for name in removed_groups:
            path = os.path.join(target, "instancegroup", name)
            if os.path.exists(path):
                os.unlink(path)
        preview = runner.derived(KOPS_STATE_STORE="file://" + workdir)
        return kops_output.parse_update_plan(preview.run(["update", "cluster", "--name", cluster]).stdout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
