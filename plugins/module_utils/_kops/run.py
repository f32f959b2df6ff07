# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One owner for a kops module's run: :class:`KopsRun` holds the state store, the kops runner, the state-store guard
and the :class:`~kops_cluster_ops.ClusterOps` of one cluster, runs the module's read-plan-write step under the guard,
plans again under the lock when another run wrote the spec meanwhile, and turns every failure of that step into the one
failure shape of the kops modules (``msg``, ``written``, ``kops_invocations``, ``previous_versions``,
``state_store_safety``). The modules' ``main()`` is then: module, run, step, exit (as kubernetes.core's
``k8s/runner.py`` ``run_module`` and amazon.aws' ``AnsibleAWSModule`` own theirs)."""

from ansible_collections.kopsible.kops.plugins.module_utils._kops import binary_version
from ansible_collections.kopsible.kops.plugins.module_utils._kops import rules as kops_rules
from ansible_collections.kopsible.kops.plugins.module_utils._kops import spec as kops_spec
from ansible_collections.kopsible.kops.plugins.module_utils._kops.cluster_ops import ClusterOps
from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import check_account, state_store_of
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError, KopsInterrupted, runner_from_module
from ansible_collections.kopsible.kops.plugins.module_utils._state_store import lock as store_lock
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.guard import StoreGuard
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.layout import store_key
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.reader import read_text
from ansible_collections.kopsible.kops.plugins.module_utils._state_store.url import StoreError


class PlanConflict(Exception):
    """The second attempt of a run (after another run wrote the spec while this one waited for the lock) would write a
    field the other run changed in between. ``fields``: kops_spec.changed_meanwhile's list of str."""

    def __init__(self, fields):
        super(PlanConflict, self).__init__("; ".join(fields))
        self.fields = fields


def checked(module, rule, *args, **kwargs):
    """``rule(*args, **kwargs)``'s value; a kops_rules.RuleError it raises fails the module with the rule's message
    (which names the field and the rule) before anything is read or written."""
    try:
        return rule(*args, **kwargs)
    except kops_rules.RuleError as exc:
        module.fail_json(msg=str(exc))


class KopsRun(object):
    """The run of one kops module on one cluster.

    :param module: the KopsModule (options of the ``kopsible.kops.kops`` doc fragment); the state store comes from
        ``state_store`` or ``KOPS_STATE_STORE`` (kops_common.state_store_of, which fails the module on a bad one).
    :param cluster: the cluster's name (str, checked): the lock and the account guard are for it.
    :param aws_failure: what an AWS error during the step failed, e.g. ``'cluster NAME'``: the failure's ``msg`` is
        ``'AWS call failed for <aws_failure>: <botocore's message>'``.
    :param kops_failure: the start of a kops failure's ``msg``, e.g. ``'kops failed for cluster NAME'``; kops' own
        ``Error:`` text follows after ``': '``.
    :param kubeconfig: the kubeconfig path kops gets as KUBECONFIG (validation, rolling updates), or None.
    :param ops_options: more keyword arguments of :class:`ClusterOps` (``route53``, ``update_options``).

    A module with the option ``allow_kops_downgrade`` (one that applies the cluster) is refused before its first
    write when its kops binary is older than the one that last applied the cluster (:meth:`_check_kops_version`).

    ``result`` is the dict a step may fill as it goes; a failure of the step reports what it holds (a roll stopped
    part-way says what it replaced). Attributes ``state_store``, ``runner``, ``guard`` and ``ops`` are the run's parts.
    """

    def __init__(self, module, cluster, aws_failure, kops_failure, kubeconfig=None, **ops_options):
        self.module, self.cluster = module, cluster
        self.aws_failure, self.kops_failure = aws_failure, kops_failure
        self.state_store = state_store_of(module)
        self.runner = runner_from_module(module, self.state_store, kubeconfig=kubeconfig)
        self.guard = StoreGuard(module, self.state_store, cluster)
        ops_options.setdefault("autoscaling", lambda: module.client("autoscaling"))
        self.ops = ClusterOps(
            self.runner,
            self.state_store,
            versions=self.guard.versions_reader(),
            before_write=self._before_write,
            on_intend=self._intend,
            version_check=self._check_kops_version,
            **ops_options,
        )
        self.result = {}
        self._first_plan = None  # the spec changes of the first attempt, once another run made this one plan again
        self._kops_version_checked = False

    def _before_write(self):
        """ClusterOps' ``before_write``: the kops version check (once), then the cluster's lock (StoreGuard.take_lock)."""
        self._check_kops_version()
        self.guard.take_lock()

    def _check_kops_version(self):
        """Fail the module, before its first write, when ``allow_kops_downgrade`` is false and the cluster's
        ``kops-version.txt`` names a newer kops than this run's binary (_kops.binary_version, kops' own rule in
        upup/pkg/fi/cloudup/apply_cluster.go, which kops checks only at apply, after a spec write). One S3 GetObject,
        and ``kops version --short`` only when the file exists; nothing for a module without the option, with it
        true, or for a store that is not on S3."""
        if self._kops_version_checked or self.module.params.get("allow_kops_downgrade", True) or self.guard.s3 is None:
            return
        self._kops_version_checked = True
        try:
            applied = read_text(self.guard.s3, self.state_store, store_key(self.state_store, self.cluster, binary_version.VERSION_FILE))
        except StoreError as exc:
            self.fail("cannot read the kops version that last applied cluster %s: %s" % (self.cluster, exc))
        if applied is None:
            return
        mine = self.runner.version()
        problem = binary_version.downgrade_problem(mine, applied, self.cluster, "%s/%s/%s" % (self.state_store, self.cluster, binary_version.VERSION_FILE))
        if problem:
            self.fail(problem, kops_version=mine, kops_version_applied=applied)

    def facts(self):
        """The fields every kops module's result and failure carries: ``kops_invocations``, ``previous_versions``
        (object URL -> the version this run overwrote) and ``state_store_safety`` (StoreGuard.facts)."""
        return dict(kops_invocations=self.runner.calls, previous_versions=self.ops.previous_versions, state_store_safety=self.guard.facts())

    def fail(self, msg, **fields):
        """Fail the module with ``msg``, the step's ``result`` so far, ``fields`` and :meth:`facts` (``written`` is
        added by KopsModule.fail_json)."""
        self.module.fail_json(msg=msg, **dict(self.result, **dict(fields, **self.facts())))

    def __call__(self, step, on_interrupt=None):
        """Run ``step()`` (the module's read-plan-write step; returns its result dict, or None to return
        :attr:`result`) under the guard: the account check on entry, the cluster's lock before the first write and
        released at the end. When another run wrote the cluster's spec while this one waited for the lock (SpecChanged,
        raised before any write), the step runs once more, now holding the lock, and fails before writing when a
        field it sets was changed by the other run in between (:meth:`_intend`). Returns the result with
        :meth:`facts`. A KopsError fails the module as ``'<kops_failure>: <kops' message>'``; a KopsInterrupted goes
        to ``on_interrupt(exc)`` when given (it must fail the module), else fails like any kops error."""
        with self.module.aws_failures("AWS call failed for %s" % self.aws_failure), self.guard:
            try:
                try:
                    result = step()
                except store_lock.SpecChanged:
                    self._first_plan, self.ops.planned = self.ops.planned or [], None
                    result = step()
            except PlanConflict as exc:
                self.fail(
                    "another run changed fields this run sets while it waited %ss for the lock of cluster %s: %s. This run wrote "
                    "nothing; re-run to set them over the other run's values" % (self.guard.lock.waited if self.guard.lock else 0, self.cluster, exc),
                    conflicting_fields=exc.fields,
                )
            except KopsInterrupted as exc:
                if on_interrupt is None:
                    raise
                on_interrupt(exc)
            except KopsError as exc:
                self.fail("%s: %s" % (self.kops_failure, exc.message), **exc.to_result())
        return dict(self.result if result is None else result, **self.facts())

    def _intend(self, changes):
        """ClusterOps.intend's check, before the step writes ``changes`` (kops_spec.diff_paths list): in the attempt
        after a re-plan, raise PlanConflict naming each field the other run changed since the first attempt read the
        spec (kops_spec.changed_meanwhile); fields only the other run changed are kept."""
        if self._first_plan is not None:
            conflicts = kops_spec.changed_meanwhile(self._first_plan, changes)
            if conflicts:
                raise PlanConflict(conflicts)

    def exit(self, result):
        """Exit the module with ``result`` (the value of the run's call)."""
        self.module.exit_json(**result)


def read_only_store(module, module_name):
    """The state store URL of a read-only module (kops_common.state_store_of), after the account guard
    (``allowed_account_ids``, one STS call) that the kops modules' StoreGuard makes on entry; an STS failure fails the
    module as ``'<module_name>: STS GetCallerIdentity failed (allowed_account_ids); nothing was read: ...'``."""
    state_store = state_store_of(module)
    with module.aws_failures("%s: STS GetCallerIdentity failed (allowed_account_ids); nothing was read" % module_name):
        check_account(module, module.params.get("allowed_account_ids"))
    return state_store
