"""Run real ``ansible-playbook`` against the emulator and return per-task results as data."""

import json
import os
import shutil
import subprocess
import tempfile
import time

import yaml

from .emulator import ROOT
from .return_doc import result_problems


class PlaybookRun:
    """Outcome of one ``ansible-playbook`` run.

    ``rc`` (int), ``stdout``/``stderr`` (str), ``results``: list of ``(task name, result dict)`` for
    localhost in run order (from the ansible.posix.json callback, with each task's action: callback_plugins/
    kopsible_json.py; ``actions``: the module of each result, in the same order), ``stats`` (dict). A successful
    result of a kopsible module that returns a key its RETURN does not document raises AssertionError
    (harness.return_doc).
    """

    def __init__(self, rc, stdout, stderr):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.results, self.stats, self.actions, self.task_seconds, self.custom_stats = [], {}, [], [], {}
        try:
            # the JSON document starts on a line of its own; lines before it are what plugins displayed while the
            # play ran (e.g. rolling_update's steps), which may hold braces themselves
            start = 0 if stdout.startswith("{") else stdout.index("\n{") + 1
            data = json.loads(stdout[start:])
        except ValueError:
            return
        self.stats = data.get("stats", {})
        # what set_stats published for the run (ansible.posix.json prints it with ANSIBLE_SHOW_CUSTOM_STATS=1)
        self.custom_stats = data.get("global_custom_stats", {})
        problems = []
        for play in data.get("plays", []):
            for task in play.get("tasks", []):
                duration = task["task"].get("duration") or {}
                if duration.get("start") and duration.get("end"):
                    self.task_seconds.append((task["task"]["name"], task["task"].get("action"), _seconds(duration["start"], duration["end"])))
                for _host, result in task.get("hosts", {}).items():
                    self.results.append((task["task"]["name"], result))
                    self.actions.append(task["task"].get("action"))
                    problems += ["task %r: %s" % (task["task"]["name"], p) for p in result_problems(task["task"].get("action"), result)]
        assert not problems, "results that break their module's RETURN documentation:\n" + "\n".join(problems)

    def result(self, name=None):
        """The result dict of the task called ``name`` (the last task when None). KeyError if absent."""
        if name is None:
            return self.results[-1][1]
        for task_name, result in self.results:
            if task_name == name:
                return result
        raise KeyError("no task named %r; tasks: %s" % (name, [n for n, _ in self.results]))

    @property
    def failed(self):
        return self.rc != 0


def _seconds(start, end):
    """Seconds between two of the json callback's ISO 8601 UTC times (float)."""
    import datetime

    return round((datetime.datetime.fromisoformat(end) - datetime.datetime.fromisoformat(start)).total_seconds(), 3)


def log_run(run, seconds, path=None):
    """With ``KOPSIBLE_PLAYBOOK_LOG`` set (a file path), append one JSON line for this run: the test that made it
    (``PYTEST_CURRENT_TEST``), its wall ``seconds`` and each task's ``[name, action, seconds]``, so that a test run can
    be measured playbook by playbook (``make bench`` reads none of it; it is for finding where time goes)."""
    path = path or os.environ.get("KOPSIBLE_PLAYBOOK_LOG")
    if not path:
        return
    line = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0], "seconds": round(seconds, 3), "rc": run.rc, "tasks": run.task_seconds}
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def ansible_env(emulator=None, extra=None):
    """Environment for ansible-playbook: the collection path, config, and the emulator's AWS env; with
    ``KOPSIBLE_BYTECODE_CACHE`` set (the tests set it: tests/conftest.py), the PYTHONPATH of
    tools/harness/bytecode_cache/sitecustomize.py and the module server (:func:`with_bytecode_cache`)."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"),
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
    )
    env["PATH"] = os.pathsep.join([os.path.join(ROOT, ".cache", "bin"), os.path.dirname(_python()), env.get("PATH", "")])
    with_bytecode_cache(env)
    if emulator is not None:
        env.update(emulator.aws_env())
    if extra:
        env.update(extra)
    return env


def with_bytecode_cache(env):
    """``env`` (dict, changed in place and returned) with the PYTHONPATH of
    tools/harness/bytecode_cache/sitecustomize.py when it sets ``KOPSIBLE_BYTECODE_CACHE``: the Python processes
    started with it (Ansible's module processes) keep what they compile from their AnsiballZ payloads. With
    ``KOPSIBLE_MODULE_FORKSERVER=1`` in this process's environment (the tests set it) it also names, in
    ``KOPSIBLE_MODULE_SERVER``, this process's module server for that Python set-up (tools/harness/module_server.py),
    to which each module process hands its payload."""
    hook = os.path.join(ROOT, "tools", "harness", "bytecode_cache")
    if env.get("KOPSIBLE_BYTECODE_CACHE") and hook not in env.get("PYTHONPATH", "").split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (hook, env.get("PYTHONPATH")) if p)
    env.pop("KOPSIBLE_MODULE_SERVER", None)
    if env.get("KOPSIBLE_BYTECODE_CACHE") and os.environ.get("KOPSIBLE_MODULE_FORKSERVER") == "1":
        server = _servers("module").get(dict(env, KOPSIBLE_MODULE_PYTHON=_python()))
        if server is not None:
            env["KOPSIBLE_MODULE_SERVER"] = server.socket_path
    return env


def _python():
    import sys

    return sys.executable


KOPS_MODULES = ("kops_cluster", "kops_instancegroup", "rolling_update", "kops_cluster_info", "kops_instancegroup_info", "kops_toolbox_dump")


def run_playbook(
    tasks=None,
    playbook=None,
    emulator=None,
    check=False,
    diff=False,
    extra_vars=None,
    env=None,
    verbosity=0,
    timeout=1800,
    module_defaults=True,
    kops=None,
    resolv_conf=None,
    on_start=None,
    stdout_callback="kopsible_json",
    progress=None,
    inventory=None,
    fork=None,
):
    """Run ``ansible-playbook`` on localhost and return a :class:`PlaybookRun`.

    :param tasks: list of task dicts; wrapped in a play on localhost with ``module_defaults`` that
        point ``group/aws`` and ``group/kopsible.kops.kops`` at the emulator (the way a user would).
    :param playbook: path of an existing playbook instead of ``tasks``.
    :param check / diff: add ``--check`` / ``--diff``.
    :param extra_vars: dict passed as ``-e @file``.
    :param kops: dict of options (e.g. ``kops_binary``, ``kops_env``, ``state_store``) added to the
        module_defaults of every kops module.
    :param resolv_conf: run the whole playbook with this resolv.conf (tools/with-local-dns), so that its
        modules resolve the emulated clusters' API names through the emulator's DNS face, as a user's
        machine resolves them through DNS.
    :param stdout_callback: the play's stdout callback; another than the default ``kopsible_json`` (e.g. ``default``,
        what users see) leaves the run's ``results`` empty.
    :param progress: a file (e.g. ``sys.stdout``) that gets one line per task result as the play runs (status,
        seconds, task name: the kopsible_json callback writes them to a duplicate of its descriptor), while the
        results still arrive as JSON at the end.
    :param inventory: an inventory source (e.g. a kopsible.kops.kops inventory file) instead of localhost with the
        local connection, as a user runs a playbook over their inventory.
    :param fork: run in a child of this process's warm ``ansible-playbook`` (tools/harness/forkserver.py) rather than
        as a process of its own: by default when ``KOPSIBLE_FORKSERVER=1`` (the tests set it) and neither ``on_start``
        nor ``progress`` is given; False for a test that finds the run's processes by their command line: the run is
        then a process tree as a user's, its module processes (and the kops they start) under it, not in the warm
        module server (tools/harness/module_server.py).
    :param on_start: called with the ``subprocess.Popen`` of ``ansible-playbook`` once it started (its pid is the
        controller's), e.g. to send it the SIGINT a terminal sends on Ctrl-C.
    """
    workdir = tempfile.mkdtemp(prefix="kopsible-play-")
    if tasks is not None:
        play = {"hosts": "localhost", "gather_facts": False, "tasks": tasks}
        if module_defaults and emulator is not None:
            aws = {
                "endpoint_url": emulator.url,
                "region": "us-east-1",
                "access_key": emulator.aws_env()["AWS_ACCESS_KEY_ID"],
                "secret_key": emulator.aws_env()["AWS_SECRET_ACCESS_KEY"],
            }
            play["module_defaults"] = {"group/aws": aws, "group/kopsible.kops.kops": aws}
            for name in [m for m in KOPS_MODULES if os.path.exists(os.path.join(ROOT, "plugins", "modules", m + ".py"))] if kops else ():
                play["module_defaults"]["kopsible.kops." + name] = dict(kops)
        playbook = os.path.join(workdir, "play.yml")
        with open(playbook, "w") as handle:
            yaml.safe_dump([play], handle)
    playbook_cli = os.path.join(os.path.dirname(_python()), "ansible-playbook")
    cmd = [playbook_cli]
    cmd += ["-i", str(inventory)] if inventory else ["-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + _python()]
    cmd.append(playbook)
    if extra_vars:
        vars_file = os.path.join(workdir, "vars.json")
        with open(vars_file, "w") as handle:
            json.dump(extra_vars, handle)
        cmd += ["-e", "@" + vars_file]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    if verbosity:
        cmd.append("-" + "v" * verbosity)
    run_env = ansible_env(emulator, env)
    run_env["ANSIBLE_STDOUT_CALLBACK"] = stdout_callback
    run_env["ANSIBLE_CALLBACK_PLUGINS"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "tools", "harness", "callback_plugins"), run_env.get("ANSIBLE_CALLBACK_PLUGINS")) if p
    )
    if resolv_conf:
        cmd = [os.path.join(ROOT, "tools", "with-local-dns")] + cmd
        run_env["KOPSIBLE_RESOLV_CONF"] = resolv_conf
    progress_fd = None
    run_env.pop("KOPSIBLE_PROGRESS_FD", None)
    if progress is not None:
        progress.flush()
        progress_fd = os.dup(progress.fileno())
        run_env["KOPSIBLE_PROGRESS_FD"] = str(progress_fd)
    started = time.monotonic()
    if fork is False:  # the whole tree under the run (see ``fork``)
        run_env.pop("KOPSIBLE_MODULE_SERVER", None)
    if fork is None:
        fork = os.environ.get("KOPSIBLE_FORKSERVER") == "1"
    wrapper = cmd[: cmd.index(playbook_cli)]  # tools/with-local-dns, or nothing
    server = _servers("playbook").get(run_env, wrapper) if fork and on_start is None and progress_fd is None else None
    try:
        if server is not None:
            proc = subprocess.CompletedProcess(cmd, *server.run(cmd[len(wrapper) :], run_env, ROOT, timeout))
        else:
            proc = _run_process(cmd, run_env, progress_fd, on_start, timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if progress_fd is not None:
            os.close(progress_fd)
    run = PlaybookRun(proc.returncode, proc.stdout, proc.stderr)
    log_run(run, time.monotonic() - started)
    return run


def _run_process(cmd, run_env, progress_fd, on_start, timeout):
    """``cmd`` as a process of its own (subprocess.CompletedProcess); kills it and raises TimeoutExpired past
    ``timeout`` seconds."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env, cwd=ROOT, pass_fds=(progress_fd,) if progress_fd is not None else ()
    ) as child:
        if on_start is not None:
            on_start(child)
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
    return subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)


_SERVERS = {}


def _servers(kind):
    """This process's warm ``ansible-playbook`` servers (``kind`` "playbook": :class:`harness.forkserver.ForkServers`)
    or module servers ("module": :class:`harness.forkserver.ModuleServers`), made on first use, stopped at exit."""
    if kind not in _SERVERS:
        import atexit

        from .forkserver import ForkServers, ModuleServers

        servers = {"playbook": ForkServers, "module": ModuleServers}[kind](tempfile.mkdtemp(prefix="kopsible-%s-servers-" % kind))
        atexit.register(servers.stop)
        _SERVERS[kind] = servers
    return _SERVERS[kind]
