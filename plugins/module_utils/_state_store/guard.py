# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every kops module does around a run that may write the state store: the account guard, the versioning
warning, the cluster's lock taken right before the first write, and planning again under the lock."""

import contextlib

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import check_account
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import Interrupted, interrupted_by, interruptible
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import lock as store_lock
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.s3 import error_code, s3_client
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import s3_location


class StoreGuard(object):
    """What every kops module does around a run that may write the state store or the cloud.

    On entry: the account check (``allowed_account_ids``), the versioning warning of an ``s3://`` store
    (added to the module's warnings and to :meth:`facts`), and a fingerprint of the cluster's spec objects.
    :meth:`take_lock` (given to ClusterOps as ``before_write``) takes the cluster's lock right before the first
    write, so a run with nothing to write writes nothing, not even a lock. While it holds the lock, SIGINT, SIGTERM and
    SIGHUP do not kill the run (kops_runner.interruptible): kops is stopped, an interruption note says what the run
    left (:meth:`record_interruption`, lock.InterruptionNote), the lock is released and the run fails saying so; every
    later run reports the note until the interrupted module succeeds again. Once it holds the lock it compares
    the fingerprint: if another run wrote the spec since this run read it, its plan was computed from a spec that
    is gone, so it raises SpecChanged before writing and the module plans again on the new spec, as Terraform plans
    after taking its lock (_kops.run.KopsRun). On exit the lock is released, also after a failure.

    :param module: the AnsibleAWSModule (options of :func:`kops_argument_spec`).
    :param state_store: store URL; ``cluster``: the cluster name the lock is for.
    """

    def __init__(self, module, state_store, cluster):
        self.module, self.state_store, self.cluster = module, state_store, cluster
        self.s3 = s3_client(module) if s3_location(state_store)[0] else None
        self.lock = None
        self.warning = None
        self.account = None
        self.fingerprint = None
        self.replanned = False
        self.notes = store_lock.InterruptionNote(self.s3, state_store, cluster) if self.s3 is not None else None
        self.earlier_note = None  # an earlier run's interruption note (dict), read on entry
        self.note_written = None  # this run's (dict)
        self._signals = contextlib.ExitStack()

    def __enter__(self):
        module = self.module
        self.account = check_account(module, module.params.get("allowed_account_ids"))
        if module.params.get("lock_timeout", 0) < 0:
            module.fail_json(msg="lock_timeout: must be 0 seconds or more")
        if self.s3 is None:
            return self
        try:
            self.warning = store_lock.versioning_warning(self.s3, self.state_store)
            if not module.check_mode:
                self.fingerprint = store_lock.spec_fingerprint(self.s3, self.state_store, self.cluster)
            self.earlier_note = self.notes.read()
        except store_lock.ClientError as exc:
            bucket = s3_location(self.state_store)[0]
            if error_code(exc) in ("NoSuchBucket", "404"):
                if self._deletes_the_cluster():
                    self._nothing_to_delete(bucket)
                module.fail_json(
                    msg="state_store: bucket %s of %s does not exist (create it first, e.g. with role kopsible.kops.state_store)" % (bucket, self.state_store),
                    kops_invocations=[],
                )
            module.fail_json_aws(exc, msg="state_store: cannot read bucket %s of %s" % (bucket, self.state_store))
        if self.warning:
            module.warn(self.warning)
        if self.earlier_note:
            module.warn(store_lock.note_warning(self.earlier_note, self.notes.url))
        return self

    def _deletes_the_cluster(self):
        """True when this run deletes the cluster itself (kops_cluster ``state: absent``: its ``name`` is the cluster;
        a module of a cluster's parts names the cluster in ``cluster`` and needs it to exist)."""
        params = self.module.params
        return params.get("state") == "absent" and params.get("name") == self.cluster

    def _nothing_to_delete(self, bucket):
        """Exit the run of a cluster's deletion whose store's bucket does not exist: kops keeps a cluster's spec under
        ``NAME/config`` in the store (pkg/client/simple/vfsclientset/cluster.go), so no bucket, no cluster to delete:
        ``changed=false``, as for a cluster missing from an existing bucket (a second teardown, issue 33 item 6). kops
        itself would fail reading the store; its ``delete cluster --external`` (by the KubernetesCluster tag, no spec)
        is the way to the cloud resources of a cluster whose bucket was deleted under it."""
        self.module.exit_json(
            changed=False,
            name=self.cluster,
            changes=[],
            cluster={},
            state_store=self.state_store,
            msg="cluster %s does not exist in %s (bucket %s does not exist); nothing to delete" % (self.cluster, self.state_store, bucket),
            kops_invocations=[],
            previous_versions={},
            state_store_safety=self.facts(),
        )

    def take_lock(self):
        """Take the cluster's lock now (no-op in check mode, for non-s3 stores, or when already held).
        Fails the module naming the holder after ``lock_timeout`` seconds. Raises
        lock.SpecChanged, still holding the lock, when another run wrote the spec while this run
        waited (the module plans again on the new spec: _kops.run.KopsRun)."""
        module = self.module
        if self.lock is not None or module.check_mode or self.s3 is None:
            return
        owner = "%s (cluster %s)" % (module._name, self.cluster)
        self.lock = store_lock.ClusterLock(self.s3, self.state_store, self.cluster, owner)
        if module.params.get("break_lock"):
            self.lock.break_lock()
        self._signals.enter_context(interruptible())  # before the lock exists: a signal now leaves no lock behind
        try:
            self.lock.acquire(module.params.get("lock_timeout", 600))
            if hasattr(module, "wrote"):
                module.wrote("lock %s (deleted again when the run ends)" % self.lock.url)
                module.on_exit(self._release)
        except store_lock.LockError as exc:
            module.fail_json(msg=exc.message, lock_holder=exc.holder, state_store_safety=self.facts())
        now = store_lock.spec_fingerprint(self.s3, self.state_store, self.cluster) if self.fingerprint is not None else None
        if now is not None and now != self.fingerprint:
            # another run wrote the spec while this one waited: plan again on it, under the lock (_kops.run.KopsRun)
            self.fingerprint = now
            self.replanned = True
            raise store_lock.SpecChanged()

    def record_interruption(self, msg, left=()):
        """Store this run's interruption note while it still holds the lock (once; lock.InterruptionNote): ``msg`` what
        the run was doing when the signal came (str), ``left`` what it left for the next run (list of str, e.g. a
        detached instance). Returns the note's URL (str), or None when there is no lock (nothing was written)."""
        if self.lock is None or not self.lock.held or self.note_written is not None:
            return self.notes.url if self.note_written else None
        self.note_written = self.notes.write(self.module._name, interrupted_by() or "a signal", msg, left, self.module.writes())
        self.module.wrote("interruption note %s (read by the next run)" % self.notes.url)
        return self.notes.url

    def _release(self):
        """Delete the lock (KopsModule.on_exit); before that, an interrupted run's note (a plain one when the module
        recorded none), and after a successful run of the module an earlier run's note left (it re-ran what that run
        left). Returns None, or what went wrong and how to recover (str)."""
        if self.lock is None:
            return None
        try:
            if interrupted_by() and self.lock.held:
                self.record_interruption("%s was interrupted by %s while it held the lock" % (self.module._name, interrupted_by()))
            elif getattr(self.module, "succeeded", False) and (self.earlier_note or {}).get("module") == self.module._name:
                self.notes.delete()
            self.lock.release()
        except store_lock.ClientError as exc:
            return (
                "the run could not delete its lock %s (%s); the next run on cluster %s waits lock_timeout for it: "
                "delete the object, or re-run with break_lock: true" % (self.lock.url, exc, self.cluster)
            )
        finally:
            self._signals.close()
        return None

    def __exit__(self, exc_type, exc, tb):
        # Normally the lock is deleted by the module's exit_json/fail_json (on_exit, registered by take_lock), so
        # that a failed deletion is reported in the result; here only when an exception is on its way out.
        if exc_type is not None and issubclass(exc_type, Interrupted):
            # a signal outside a kops run (between AWS calls): the same clean failure as one during kops
            note = self.record_interruption("%s was interrupted by %s between its steps" % (self.module._name, exc.name))
            self.module.fail_json(
                msg="%s: interrupted by %s%s" % (self.cluster, exc.name, "; the lock was released, note %s" % note if note else "; nothing was written"),
                state_store_safety=self.facts(),
            )
        if exc_type is not None and self.lock is not None and self.lock.held:
            self._release()
        self._signals.close()
        return False

    def versions_reader(self):
        """For ClusterOps(versions=...): a callable ``(keys) -> {url: version id}`` reading with this guard's
        S3 client (one client per run: making one costs ~0.3 s), or None for a ``file://`` store."""
        if self.s3 is None:
            return None
        return lambda keys: store_lock.object_versions(self.s3, self.state_store, keys)

    def facts(self):
        """``{'versioning_warning': str or None, 'lock': {'url', 'waited_seconds', 'broken', 'replanned'} or None,
        'account': str or None}``; ``replanned``: another run wrote the spec while this one waited, so it planned
        again on the new spec."""
        lock = dict(self.lock.facts(), replanned=self.replanned) if self.lock else None
        return {
            "versioning_warning": self.warning,
            "lock": lock,
            "account": self.account,
            "interrupted_run": self.earlier_note,
            "interruption_note": self.note_written,
        }
