# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one door to the kops binary: argv, environment, timeouts, and errors as :class:`KopsError`.

Modules never start kops themselves; they build a :class:`KopsRunner` with :func:`runner_from_params`
(AWS options of the module -> kops environment, see :func:`kops_environment`) and call
:meth:`KopsRunner.run`. Credentials travel only in the child's environment, never in argv, results
or error messages.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time

from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import error_message, kops_warnings

DEFAULT_TIMEOUT = 1800
SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY")


# kops commands that write the state store even without --yes (k8s.io/kops v1.36.2 cmd/kops/root.go's
# subcommands: create, replace, delete (kept though a cluster's deletion also needs --yes), edit, promote,
# trust, distrust); the others write only with --yes (update, rolling-update, upgrade, reconcile).
WRITING_COMMANDS = ("create", "replace", "delete", "edit", "promote", "trust", "distrust")

# kops' warning for every command on a file:// state store (cmd/kops/util/factory.go:152). Against check mode's scratch
# store (kops_preview.ScratchStore) it speaks of the collection's own temporary copy, not of the user's store: not shown.
SCRATCH_STORE_WARNING = "The local filesystem state store is not functional for running clusters"


# kops' warning for each attempt it retries, e.g. `kops validate cluster --wait` while the cluster is not yet healthy
# (cmd/kops/validate_cluster.go:193 "(will retry): unexpected error during validation: ...", :241 "(will retry): cluster
# not yet healthy"): noise once the command succeeded, the story of why when it did not.
RETRIED = "(will retry)"


class KopsError(Exception):
    """kops failed. ``message`` is kops' own ``Error: ...`` text; ``command`` the argv (list of str,
    no secrets); ``rc`` the exit code (int, -1 on timeout); ``stderr`` the last 4000 characters."""

    def __init__(self, message, command=None, rc=None, stderr="", stdout=""):
        super(KopsError, self).__init__(message)
        self.message = message
        self.command = command or []
        self.rc = rc
        self.stderr = stderr[-4000:]
        self.stdout = stdout[-4000:]
        self.output = stdout  # all of it (redacted), for parsers of a run that stopped part-way

    @property
    def not_found(self):
        """True when kops said the cluster or instance group does not exist (and nothing else went wrong)."""
        text = self.message.lower()
        return "cluster not found" in text or ('" not found' in text and "kops.k8s.io" in text) or text.startswith("instancegroup") and "not found" in text

    def to_result(self):
        """Fields for ``fail_json`` (dict)."""
        return {"kops_command": self.command, "rc": self.rc, "stderr": self.stderr}


class Interrupted(BaseException):
    """The module process got SIGINT, SIGTERM or SIGHUP while :func:`interruptible` was in force. ``signum`` (int) and
    ``name`` (str, e.g. ``'SIGINT'``). A BaseException, like KeyboardInterrupt, so that no ``except Exception`` takes it
    for an ordinary failure."""

    def __init__(self, signum):
        self.signum, self.name = signum, signal.Signals(signum).name
        BaseException.__init__(self, "interrupted by %s" % self.name)


class KopsInterrupted(KopsError):
    """A kops run stopped because the module was interrupted (:class:`Interrupted`): kops was sent SIGTERM (SIGKILL
    after :data:`STOP_GRACE` seconds). ``signal_name`` is the signal the module got; ``output`` what kops printed."""

    def __init__(self, message, signal_name, command, rc, stderr, stdout):
        KopsError.__init__(self, message, command, rc, stderr, stdout)
        self.signal_name = signal_name


# The signals that stop a run: Ctrl-C (ansible-core's controller turns it into SIGINT to the worker's process group,
# executor/process/worker.py _term), a cancelled AWX job or a stopped CI job (SIGTERM), a closed terminal (SIGHUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE = 10  # seconds kops gets after SIGTERM before SIGKILL (kops v1.36.2 handles no signal: it exits at once)
_interrupted = []  # the signal this process got (int), once: from then on the stop signals stay ignored


def _on_stop_signal(signum, frame):
    for sig in STOP_SIGNALS:  # the clean-up that follows (stop kops, note, lock) must not be cut by a second signal
        signal.signal(sig, signal.SIG_IGN)
    _interrupted.append(signum)
    raise Interrupted(signum)


@contextlib.contextmanager
def interruptible():
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread instead of killing the
    process (SIGTERM, SIGHUP) or raising KeyboardInterrupt (SIGINT), so that a run can stop kops, say what it left and
    release its lock. Nested blocks are fine; after the first signal the stop signals stay ignored. Outside the main
    thread (a test harness running a module in a thread) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = dict((sig, signal.getsignal(sig)) for sig in STOP_SIGNALS)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN if _interrupted else _on_stop_signal)
    try:
        yield
    finally:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN if _interrupted else previous[sig])


def interrupted_by():
    """The name of the stop signal this process got (str, e.g. ``'SIGINT'``), or None."""
    return signal.Signals(_interrupted[0]).name if _interrupted else None


class _LineReader(object):
    """Reads a kops child's merged output pipe in a thread, handing each line to ``on_line`` as it comes;
    :meth:`communicate` stands in for ``Popen.communicate`` (same arguments, same ``TimeoutExpired``; ``stderr`` None)."""

    def __init__(self, proc, on_line):
        self.proc, self.lines = proc, []

        def read():
            for line in proc.stdout:
                self.lines.append(line)
                try:
                    on_line(line.rstrip("\n"))
                except Exception:  # a display problem must not stop the run
                    pass

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def communicate(self, stdin=None, timeout=None):
        if self.proc.stdin and not self.proc.stdin.closed:
            if stdin:
                self.proc.stdin.write(stdin)
            self.proc.stdin.close()
        self.proc.wait(timeout)
        self.thread.join()
        self.proc.stdout.close()
        return "".join(self.lines), None


class KopsResult(object):
    """One finished kops run: ``argv`` (list), ``rc`` (int), ``stdout``/``stderr`` (str), ``seconds`` (float)."""

    def __init__(self, argv, rc, stdout, stderr, seconds):
        self.argv, self.rc, self.stdout, self.stderr, self.seconds = argv, rc, stdout, stderr, seconds


def kops_environment(
    state_store=None, region=None, endpoint_url=None, access_key=None, secret_key=None, session_token=None, profile=None, kubeconfig=None, extra=None, base=None
):
    """The environment for a kops child process (dict of str).

    Starts from ``base`` (default ``os.environ``) and sets, only where a value is given:
    ``KOPS_STATE_STORE``; ``AWS_REGION``; ``AWS_PROFILE`` or ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
    ``AWS_SESSION_TOKEN``; ``KUBECONFIG``. With an ``endpoint_url`` (or ``AWS_ENDPOINT_URL`` in ``base``),
    also ``AWS_ENDPOINT_URL``, ``AWS_EC2_METADATA_DISABLED=true`` and the S3 variables kops' state store
    needs for a custom endpoint (util/pkg/vfs/s3context.go: ``S3_ENDPOINT``, ``S3_ACCESS_KEY_ID``,
    ``S3_SECRET_ACCESS_KEY``, ``S3_REGION``): ``AWS_ENDPOINT_URL_S3`` alone fails in kops. ``S3_ACCESS_KEY_ID`` and
    ``S3_SECRET_ACCESS_KEY`` already both in ``base`` are kept (kops signs its state-store requests with them and no
    session token); otherwise they are the AWS access key and secret.
    ``extra`` (dict) is applied last (e.g. ``KOPS_BASE_URL``, ``KOPS_FEATURE_FLAGS``).
    """
    env = dict(os.environ if base is None else base)
    if state_store:
        env["KOPS_STATE_STORE"] = state_store
    if region:
        env["AWS_REGION"] = region
        env.setdefault("AWS_DEFAULT_REGION", region)
    if profile:
        env["AWS_PROFILE"] = profile
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            env.pop(key, None)
    if access_key:
        env["AWS_ACCESS_KEY_ID"] = access_key
    if secret_key:
        env["AWS_SECRET_ACCESS_KEY"] = secret_key
    if session_token:
        env["AWS_SESSION_TOKEN"] = session_token
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    endpoint = endpoint_url or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
        env.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        env["S3_ENDPOINT"] = endpoint
        env["S3_REGION"] = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        # kops' own state-store credentials, when the caller set both (an AWX custom credential, an S3-compatible
        # store's key): kops signs its S3 requests with them and an empty token, so temporary AWS credentials (an STS
        # token) cannot sign them; otherwise the AWS credentials, which then must be long-term ones.
        if not (env.get("S3_ACCESS_KEY_ID") and env.get("S3_SECRET_ACCESS_KEY")):
            if env.get("AWS_ACCESS_KEY_ID"):
                env["S3_ACCESS_KEY_ID"] = env["AWS_ACCESS_KEY_ID"]
            if env.get("AWS_SECRET_ACCESS_KEY"):
                env["S3_SECRET_ACCESS_KEY"] = env["AWS_SECRET_ACCESS_KEY"]
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    return env


def find_binary(binary):
    """Absolute path of ``binary`` (a path or a name on PATH). Raises KopsError when there is none."""
    path = binary if os.sep in binary else shutil.which(binary)
    if not path or not os.access(path, os.X_OK):
        raise KopsError(
            "kops_binary: %r is not an executable file or a command on PATH; install kops (role kopsible.kops.kops_binary) or give its path" % binary
        )
    return path


class KopsRunner(object):
    """Runs kops with one environment and records every invocation.

    :param binary: path or command name of kops.
    :param env: environment dict from :func:`kops_environment`.
    :param timeout: default seconds per command (int).
    :param on_warning: callable given each of kops' own warnings (str, ``"kops <command>: <message>"``) once per
        runner, as soon as the run that printed it ends (failed runs too); runner_from_module gives ``module.warn``.
    ``calls`` lists ``{'argv', 'rc', 'seconds'}`` per run (and ``'store': 'scratch'`` for a run against a check-mode
    scratch store), for results and benchmarks; ``warnings`` kops' warnings (kops_output.kops_warnings: klog ``W``
    lines, banners, plain stderr lines), each once.
    """

    def __init__(self, binary="kops", env=None, timeout=DEFAULT_TIMEOUT, on_warning=None):
        self.scratch = False  # runs against a check-mode scratch store (kops_preview.ScratchStore): never a write
        self.binary = binary
        self.env = env if env is not None else kops_environment()
        self.timeout = timeout
        self.on_warning = on_warning
        self.calls = []
        self.warnings = []
        self._warned = set()
        self._version = None

    def _route_warnings(self, argv, stdout, stderr, merged, rc=None):
        """Record kops' warnings of one run and hand each new one to ``on_warning`` (the one place every module's
        kops calls pass). A run that exited 0 drops the attempts it retried (:data:`RETRIED`): they ended well."""
        command = " ".join(a for a in argv[1:3] if not a.startswith("-"))
        for message in kops_warnings(self.redact(stdout or ""), self.redact(stderr or ""), merged):
            if message in self._warned or (self.scratch and message == SCRATCH_STORE_WARNING) or (rc == 0 and message.startswith(RETRIED)):
                continue
            self._warned.add(message)
            text = "kops %s: %s" % (command, message)
            self.warnings.append(text)
            if self.on_warning:
                self.on_warning(text)

    def run(self, args, stdin=None, timeout=None, check=True, merged=False, on_line=None):
        """Run ``kops ARGS``; returns :class:`KopsResult`.

        :param args: list of str after the binary.
        :param stdin: str fed to standard input (e.g. a manifest for ``replace -f -``).
        :param merged: one pipe for standard output and error, so that their lines keep kops' order (a
            rolling update writes its evictions to stdout and its steps to stderr); the result's
            ``stdout`` and ``stderr`` are then both that text.
        :param on_line: with ``merged``, called with each line of kops' output (str, credentials redacted, no newline)
            as kops prints it, e.g. to show a rolling update's steps while it runs; an exception it raises is ignored.
        :raises KopsError: non-zero exit (when ``check``), timeout, or a binary that cannot start.
        """
        argv = [find_binary(self.binary)] + [str(a) for a in args]
        shown = ["kops"] + argv[1:]
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                env=self.env,
                universal_newlines=True,
                start_new_session=True,
            )
        except OSError as exc:
            # e.g. an executable file that is not a program: the option that chose it is what to fix
            raise KopsError("kops_binary: could not start %s: %s" % (argv[0], exc), shown) from exc
        comm = _LineReader(proc, lambda line: on_line(self.redact(line))).communicate if on_line and merged else proc.communicate
        try:
            with interruptible():
                stdout, stderr = comm(stdin, timeout=timeout or self.timeout)
        except Interrupted as exc:
            raise self._stop(proc, comm, shown, start, merged, exc) from None
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = comm()
            stderr = stdout if merged else stderr
            self._record({"argv": shown, "rc": -1, "seconds": round(time.monotonic() - start, 3)})
            self._route_warnings(shown, stdout, stderr, merged)
            raise KopsError("kops did not finish within %ss" % (timeout or self.timeout), shown, -1, self.redact(stderr), self.redact(stdout)) from None
        seconds = round(time.monotonic() - start, 3)
        stderr = stdout if merged else stderr
        self._record({"argv": shown, "rc": proc.returncode, "seconds": seconds})
        self._route_warnings(shown, stdout, stderr, merged, proc.returncode)
        if check and proc.returncode != 0:
            stderr, stdout = self.redact(stderr), self.redact(stdout)
            message = error_message(stderr) or "kops exited with %d" % proc.returncode
            raise KopsError(message, shown, proc.returncode, stderr, stdout)
        return KopsResult(shown, proc.returncode, stdout, stderr, seconds)

    def version(self):
        """The kops binary's version (str, e.g. ``'1.36.2'``, without a leading ``v``), from ``kops version --short``
        (one kops call, made once per runner). :raises KopsError: kops failed."""
        if self._version is None:
            self._version = self.run(["version", "--short"]).stdout.strip().splitlines()[-1].strip().lstrip("v")
        return self._version

    def _stop(self, proc, comm, shown, start, merged, interrupted):
        """Stop kops after the module got a stop signal: SIGTERM to kops' session (it runs in its own, so Ctrl-C does not
        reach it), SIGKILL after STOP_GRACE seconds; returns the :class:`KopsInterrupted` to raise."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            stdout, stderr = comm(timeout=STOP_GRACE)  # the output read so far is kept (subprocess docs)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = comm()
        stderr = stdout if merged else stderr
        seconds = round(time.monotonic() - start, 3)
        self._record({"argv": shown, "rc": proc.returncode, "seconds": seconds, "interrupted": interrupted.name})
        self._route_warnings(shown, stdout, stderr, merged)
        words = " ".join([a for a in shown[1:] if not a.startswith("-")][:2])
        message = "interrupted by %s: kops %s%s was stopped after %ds" % (interrupted.name, words, " --yes" if "--yes" in shown else "", seconds)
        return KopsInterrupted(message, interrupted.name, shown, proc.returncode, self.redact(stderr or ""), self.redact(stdout or ""))

    def _record(self, call):
        if self.scratch:
            call["store"] = "scratch"
        self.calls.append(call)

    def writes(self):
        """The kops commands run so far that may have written the state store or the cloud (list of str, e.g.
        ``'kops update cluster --yes (exit 0)'``): the :data:`WRITING_COMMANDS` without ``--dry-run``, and
        every command given ``--yes`` (``update cluster``, ``rolling-update cluster``, ``upgrade cluster``,
        ``reconcile cluster``: kops only previews without it). Calls against a check-mode scratch store (``"store":
        "scratch"``) write nothing real and are left out."""
        found = []
        for call in self.calls:
            argv = call["argv"][1:]
            if not argv or "--dry-run" in argv or call.get("store") == "scratch":
                continue
            if argv[0] in WRITING_COMMANDS or "--yes" in argv or "-y" in argv:
                words = [a for a in argv if not a.startswith("-")][:2]
                found.append("kops %s%s (exit %s)" % (" ".join(words), " --yes" if "--yes" in argv else "", call["rc"]))
        return found

    def derived(self, scratch=False, **env):
        """A runner with ``env`` added to this one's environment, recording into the same ``calls``; with ``scratch``
        its calls run against a check-mode scratch store and are recorded with ``"store": "scratch"``."""
        runner = KopsRunner(self.binary, dict(self.env, **env), self.timeout, self.on_warning)
        runner.calls, runner.warnings, runner._warned = self.calls, self.warnings, self._warned
        runner.scratch = scratch or self.scratch
        return runner

    def redact(self, text):
        """``text`` with the value of every credential variable of :data:`SECRET_ENV` replaced by ``********``."""
        for key in SECRET_ENV:
            value = self.env.get(key)
            if value and len(value) >= 4:
                text = text.replace(value, "********")
        return text


def runner_from_module(module, state_store, kubeconfig=None):
    """A :class:`KopsRunner` for an ``AnsibleAWSModule`` whose params include the kops doc fragment options.

    AWS settings come from the module's standard AWS options (``region``, ``endpoint_url``,
    ``access_key``, ``secret_key``, ``session_token``, ``profile``) and their environment fallbacks. kops' own
    warnings go to ``module.warn`` (the module's ``warnings``).
    """
    from ansible_collections.amazon.aws.plugins.module_utils.botocore import get_aws_connection_info

    region, endpoint_url, boto = get_aws_connection_info(module)
    env = kops_environment(
        state_store=state_store,
        region=region,
        endpoint_url=endpoint_url,
        access_key=boto.get("aws_access_key_id"),
        secret_key=boto.get("aws_secret_access_key"),
        session_token=boto.get("aws_session_token"),
        profile=boto.get("profile_name"),
        kubeconfig=kubeconfig,
        extra=module.params.get("kops_env"),
    )
    runner = KopsRunner(module.params.get("kops_binary") or "kops", env, module.params.get("kops_timeout") or DEFAULT_TIMEOUT, on_warning=module.warn)
    if hasattr(module, "runner"):
        module.runner = runner  # KopsModule: its failures report the kops commands that wrote
    return runner
