# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode through kops itself: a scratch state store in which kops' own writing commands run.

kops plans from the state store, so a change that check mode must not write cannot be planned in place. Instead
the cluster's specs (``<cluster>/config`` and ``<cluster>/instancegroup/*``) are copied to a temporary ``file://``
state store, and check mode runs there the same kops commands a real run runs against the real store:
``kops replace -f -`` / ``kops create -f -`` (kops decodes, defaults and validates the manifest as it would for
real: cmd/kops/replace.go, pkg/client/simple/vfsclientset/cluster.go ``Update``), ``kops upgrade cluster --yes``
(the channel's actions, applied by kops), then ``kops get`` (what kops stored, reported as the result's spec) and
``kops update cluster`` (dry run: the cloud plan). Keys, secrets and the cloud are still read from their real places
(the spec's ``configBase`` points at the real store), and nothing is written there: those commands only write under
the scratch store's path (``ClusterVFS`` writes ``basePath/<cluster>/...``), and ``kops update cluster`` without
``--yes`` only reads. An InstanceGroup being deleted is removed from the scratch store by hand (``kops delete
instancegroup`` would delete its cloud resources at once).
"""

import os
import shutil
import tempfile

from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_ops import ClusterOps
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import spec_path
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.reader import copy_cluster_specs


class ScratchStore(object):
    """A temporary ``file://`` state store holding a copy of one cluster's specs; use as a context manager
    (removed on exit).

    :param ops: the module's :class:`ClusterOps` (its runner and state store; the copy is read from that store).
    :param s3_client: a boto3 S3 client (unused for a ``file://`` store).
    :param cluster: the cluster name.

    ``ops`` is a :class:`ClusterOps` on the scratch store: the same methods as the real one (``replace``,
    ``create_manifest``, ``upgrade``, ``get_cluster``, ``get_all``, ``plan``), without the state-store lock and
    version records (nothing real is written); its writes first run the module's kops version check
    (``ops.version_check``). Its kops calls are recorded in the module's ``kops_invocations`` with
    ``"store": "scratch"`` (KopsRunner.derived), so that they never count as writes (KopsRunner.writes).
    :raises OSError, botocore errors: the copy failed (the module reports them as AWS failures).
    """

    def __init__(self, ops, s3_client, cluster):
        self.cluster = cluster
        self.workdir = tempfile.mkdtemp(prefix="kopsible-preview-")
        try:
            copy_cluster_specs(s3_client, ops.state_store, cluster, os.path.join(self.workdir, cluster))
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        url = "file://" + self.workdir
        # a write here runs the kops version check of the real store (kops-version.txt is not in the copy), never the
        # real store's lock: nothing real is written
        self.ops = ClusterOps(
            ops.runner.derived(scratch=True, KOPS_STATE_STORE=url),
            url,
            autoscaling=ops._autoscaling,
            update_options=ops.update_options,
            before_write=ops.version_check,
        )

    def remove_instance_group(self, name):
        """Leave the InstanceGroup ``name`` out of the scratch store (a deletion being previewed)."""
        path = os.path.join(self.workdir, self.cluster, *spec_path({"kind": "InstanceGroup", "metadata": {"name": name}}))
        if os.path.exists(path):
            os.unlink(path)

    def close(self):
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False
