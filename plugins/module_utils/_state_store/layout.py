# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where kops keeps a cluster's objects in its state store (k8s.io/kops v1.36.2,
pkg/client/simple/vfsclientset): under a store ``s3://BUCKET[/PREFIX]`` (or ``file://PATH``) each cluster
``NAME`` keeps

- ``PREFIX/NAME/config``: the Cluster object (YAML, ``apiVersion: kops.k8s.io/v1alpha2``; cluster.go);
- ``PREFIX/NAME/instancegroup/IG``: one InstanceGroup object (YAML) per group (instancegroup.go).

kops lists clusters by the keys that end in ``/config`` (cluster.go ``listNames``). Everything else under
``NAME/`` (keys, secrets, addons, ``cluster-completed.spec``) is kops' own and never read here.
"""

from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import s3_location

CLUSTER_CONFIG = "config"
INSTANCE_GROUP_DIR = "instancegroup/"
LOCK_FOLDER = ".kopsible-locks"  # the collection's own: outside every cluster's folder (lock.py)


def store_key(state_store, *parts):
    """The S3 key of ``parts`` under the store's path, e.g. ``store_key('s3://b/p', 'c', 'config') == 'p/c/config'``
    (empty parts dropped, as kops' ``path.Join``)."""
    dummy, path = s3_location(state_store)
    return "/".join([p for p in [path] + list(parts) if p])


def spec_path(manifest):
    """Where ``manifest`` (a Cluster or InstanceGroup dict, v1alpha2) lives inside its cluster's folder, as a
    tuple of path parts: ``('config',)`` or ``('instancegroup', '<ig name>')``."""
    if manifest.get("kind") == "Cluster":
        return (CLUSTER_CONFIG,)
    return (INSTANCE_GROUP_DIR.rstrip("/"), (manifest.get("metadata") or {}).get("name"))


def cluster_of(manifest):
    """The cluster a manifest belongs to (str): its own name for a Cluster, the ``kops.k8s.io/cluster`` label
    of an InstanceGroup."""
    metadata = manifest.get("metadata") or {}
    if manifest.get("kind") == "Cluster":
        return metadata.get("name")
    return (metadata.get("labels") or {}).get("kops.k8s.io/cluster")


def manifest_key(state_store, manifest):
    """The S3 key kops keeps ``manifest`` under (str), e.g. ``p/c/instancegroup/nodes``."""
    return store_key(state_store, cluster_of(manifest), *spec_path(manifest))


def is_spec_object(relative):
    """True for a path relative to a cluster's folder (str, ``/``-separated) that is one of its spec objects:
    ``config`` or ``instancegroup/<ig>``."""
    return relative == CLUSTER_CONFIG or relative.startswith(INSTANCE_GROUP_DIR)
