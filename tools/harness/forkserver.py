"""A warm ``ansible-playbook`` for the test harness: one Python process per test worker (and per Ansible
environment) that has imported ``ansible.cli.playbook`` once and forks a child per playbook run, which sets the
run's environment, working directory, arguments and standard streams and calls the same ``ansible-playbook``
entry point (``ansible.cli.playbook.main``) a fresh process would (issue 28: the import is about 0.35 CPU-s of the
0.7 CPU-s an idle one-task ``ansible-playbook`` costs, and the suite starts several hundred of them).

What is the same as a fresh ``ansible-playbook``: the entry point, the command line, the environment (replaced
whole in the child), the working directory, standard input (``/dev/null``), output and exit status, a fresh
``DEFAULT_LOCAL_TMP`` (so no AnsiballZ payload is shared between runs) removed at exit, a session of its own (on timeout it
and every process below it are killed). What cannot differ: Ansible reads its configuration (``ansible.constants``)
when it is imported, so a server serves only runs whose configuration environment (:func:`config_key`: ``ANSIBLE_*`` and the
few other variables Ansible's config or Python read at start) equals its own; :class:`ForkServers` starts one per
key. A server whose import wrote anything (a warning a user would see) refuses to serve, and the harness runs
``ansible-playbook`` as a process instead, so nothing a user sees is hidden.

This file also starts the module servers (:class:`ModuleServers`; the server itself is tools/harness/module_server.py)
and holds what both kinds of server share: starting one and waiting for ``ready`` (:class:`ServerProcess`), one server
per key (:class:`Servers`), imports whose output is caught (:func:`import_quietly`) and killing a process tree.

Protocol (AF_UNIX stream socket, one connection per run): the client sends one JSON line ``{"argv", "env", "cwd"}``
with the write ends of its stdout and stderr pipes attached (SCM_RIGHTS); the server forks; the child answers
``{"pid": N}`` then, when the run ends, ``{"rc": N}``. A connection closed without an ``rc`` means the child was
killed.
"""

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

# Environment variables read while Ansible is imported (ansible/config/base.yml: every ANSIBLE_* setting, NO_COLOR,
# EDITOR, PAGER) or when Python starts (PYTHON*, locale), those the import's paths depend on, and the resolv.conf
# tools/with-local-dns mounts for the server and its children.
_CONFIG_ENV = re.compile(r"^(ANSIBLE_\w+|PYTHON\w*|LC_\w+|LANG|LANGUAGE|NO_COLOR|EDITOR|PAGER|HOME|TMPDIR|TERM|COLUMNS|KOPSIBLE_RESOLV_CONF)$")


def config_key(env, wrapper=()):
    """The configuration a server is bound to (a hashable tuple): the variables of ``env`` (dict) that Ansible or
    Python read at import, and the ``wrapper`` command (e.g. tools/with-local-dns with its resolv.conf) the server
    runs under."""
    return tuple(sorted((k, v) for k, v in env.items() if _CONFIG_ENV.match(k))) + (tuple(wrapper),)


class ServerUnavailable(Exception):
    """A server could not start, or refused to serve (its imports wrote output): run the work as a process
    instead."""


class ServerProcess:
    """A server process of the harness: ``cmd`` started with ``env``, which says ``ready`` on its standard output
    once it serves on :attr:`socket_path` (a new socket in ``workdir`` named after ``name``); raises
    ServerUnavailable with what it wrote otherwise."""

    def __init__(self, name, cmd, env, workdir):
        self.socket_path = os.path.join(workdir, "%s-%d-%d.sock" % (name, os.getpid(), id(self)))
        self.process = subprocess.Popen(
            list(cmd) + [self.socket_path], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            rest = line + (self.process.stdout.read() if self.process.poll() is not None or line else "")
            self.stop()
            raise ServerUnavailable("the %s did not start: %r" % (name.replace("-", " "), rest[-2000:]))

    def stop(self):
        """End the server (children still running finish on their own)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)


class ForkServer(ServerProcess):
    """One server process (``python -m harness.forkserver SOCKET``) started with ``env`` under ``wrapper`` (a list,
    prepended to the command). :meth:`run` is thread-safe (one connection per run)."""

    def __init__(self, env, wrapper, workdir):
        cmd = list(wrapper) + [sys.executable, "-m", "harness.forkserver"]
        env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), env.get("PYTHONPATH")) if p))
        super().__init__("fork-server", cmd, env, workdir)

    def run(self, argv, env, cwd, timeout):
        """Run ``argv`` (``argv[0]`` is the ``ansible-playbook`` path, as a user would call it) in a child with
        ``env`` (dict, the whole environment) in ``cwd``; returns ``(rc, stdout, stderr)`` (str). On ``timeout``
        (seconds) the child and every process below it are killed and subprocess.TimeoutExpired raised."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.socket_path)
            request = json.dumps({"argv": list(argv), "env": env, "cwd": cwd}).encode() + b"\n"
            socket.send_fds(conn, [request], [out_w, err_w])
        except OSError as error:
            conn.close()
            for fd in (out_r, out_w, err_r, err_w):
                os.close(fd)
            raise ServerUnavailable("the fork server does not answer: %s" % error) from error
        os.close(out_w)
        os.close(err_w)
        chunks = {out_r: [], err_r: []}
        answers = b""
        pid = rc = None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(out_r, selectors.EVENT_READ)
            selector.register(err_r, selectors.EVENT_READ)
            selector.register(conn, selectors.EVENT_READ)
            open_streams = 3
            while open_streams:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if pid:
                        _kill_tree(pid)
                    conn.close()
                    for fd in chunks:
                        os.close(fd)
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in selector.select(min(remaining, 5)):
                    if key.fileobj is conn:
                        data = conn.recv(65536)
                        if not data:
                            selector.unregister(conn)
                            open_streams -= 1
                            continue
                        answers += data
                        for line in answers.split(b"\n")[:-1]:
                            message = json.loads(line)
                            pid = message.get("pid", pid)
                            rc = message.get("rc", rc)
                        answers = answers[answers.rfind(b"\n") + 1 :]
                    else:
                        data = os.read(key.fd, 65536)
                        if not data:
                            selector.unregister(key.fd)
                            open_streams -= 1
                        else:
                            chunks[key.fd].append(data)
        conn.close()
        for fd in chunks:
            os.close(fd)
        stdout = b"".join(chunks[out_r]).decode(errors="replace")
        stderr = b"".join(chunks[err_r]).decode(errors="replace")
        return (-signal.SIGKILL if rc is None else rc), stdout, stderr


def _kill_tree(pid):
    """SIGKILL ``pid`` and every process below it (Ansible's workers start sessions of their own, so a process
    group is not enough), read from /proc before any is killed."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    stat = handle.read()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += children.get(current, [])
    for member in tree:
        try:
            os.kill(member, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Servers:
    """The servers of one test process, one per key (:meth:`key` of the arguments of :meth:`get`), started on first
    use and stopped at exit. A key whose server cannot serve is remembered and :meth:`get` answers None for it (the
    work then runs as a process, as without the servers)."""

    server_class, fallback = None, ""

    def __init__(self, workdir):
        self.workdir, self.servers, self.lock = workdir, {}, threading.Lock()

    def key(self, env, *args):
        raise NotImplementedError

    def get(self, env, *args):
        """The server for ``env`` (dict) and ``args`` (those of the server class between ``env`` and ``workdir``),
        or None when it cannot serve."""
        key = self.key(env, *args)
        with self.lock:
            if key not in self.servers:
                try:
                    self.servers[key] = self.server_class(env, *args, self.workdir)
                except ServerUnavailable as error:
                    sys.stderr.write("harness: %s; %s\n" % (error, self.fallback))
                    self.servers[key] = None
            return self.servers[key]

    def stop(self):
        with self.lock:
            for server in self.servers.values():
                if server is not None:
                    server.stop()
            self.servers.clear()


class ForkServers(Servers):
    """The warm ``ansible-playbook`` servers of one test process, one per :func:`config_key` (``get(env, wrapper)``)."""

    server_class, fallback = ForkServer, "ansible-playbook runs as a process for this environment"

    def key(self, env, wrapper=()):
        return config_key(env, wrapper)


class ModuleServer(ServerProcess):
    """One module server (``python tools/harness/module_server.py SOCKET``) started with ``env`` (whose
    ``KOPSIBLE_MODULE_PYTHON`` names the module processes' interpreter); module processes with
    ``KOPSIBLE_MODULE_SERVER`` set to :attr:`socket_path` hand their payload to it."""

    def __init__(self, env, workdir):
        env = {k: v for k, v in env.items() if k != "KOPSIBLE_MODULE_SERVER"}
        cmd = [env.get("KOPSIBLE_MODULE_PYTHON") or sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_server.py")]
        super().__init__("module-server", cmd, env, workdir)


class ModuleServers(Servers):
    """The module servers of one test process, one per Python set-up (``get(env)``: the variables Python reads at
    start-up, harness.module_server.START_ENV, and ``KOPSIBLE_MODULE_PYTHON``)."""

    server_class, fallback = ModuleServer, "module processes run their payloads themselves"

    def key(self, env):
        from .module_server import START_ENV

        return tuple(sorted((k, v) for k, v in env.items() if k.startswith(START_ENV) or k == "KOPSIBLE_MODULE_PYTHON"))


def import_quietly(names, then=None):
    """Import the modules ``names`` (str), then call ``then()`` when given, with what they write caught at descriptors
    1 and 2 (where Ansible's own wrapping of sys.stdout/sys.stderr writes a warning a user would see); returns
    ``(failed, written)``: the repr of the exception an import or ``then`` raised (None if none did, e.g. the
    SystemExit of an invalid Ansible setting) and the output (str)."""
    import tempfile

    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 1)
        os.dup2(capture.fileno(), 2)
        failed = None
        try:
            for name in names:
                __import__(name)
            if then is not None:
                then()
        except BaseException as error:
            failed = repr(error)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        capture.seek(0)
        return failed, capture.read().decode(errors="replace")


# --- the server side -------------------------------------------------------------------------------------------


def _serve(socket_path):
    """Import ansible-playbook's code, say ``ready`` (or exit 1 with what the import wrote), then fork a child per
    connection until terminated or its parent (the test process) is gone."""
    # ansible.constants: the configuration of this environment
    failed, written = import_quietly(
        ("ansible.cli.playbook", "ansible.executor.playbook_executor", "ansible.executor.task_queue_manager", "ansible.plugins.loader"),
        then=_load_plugin_definitions,
    )
    if written or failed:
        sys.stdout.write("refused: importing Ansible or its plugins failed (%s) or wrote output a user would see: %s\n" % (failed, written))
        sys.stdout.flush()
        sys.exit(1)
    _parse_builtin_routing_once()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    listener.settimeout(1.0)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    parent = os.getppid()
    while os.getppid() == parent:  # a server whose test process died ends too
        reap()
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        request, fds = receive_line(conn, 4)
        if not request.endswith(b"\n") or len(fds) != 2:
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            try:
                _child(conn, json.loads(request), fds)
            finally:
                os._exit(70)
        conn.close()
        for fd in fds:
            os.close(fd)


def _load_plugin_definitions():
    """Load the classes of the plugins every ``ansible-playbook`` run loads, here, once, for the children: all
    connection, shell, become, callback and vars plugins on this configuration's paths (the run lists them:
    ``PluginLoader.all``) and the enabled inventory plugins. Loading a plugin the first time imports it and reads its
    DOCUMENTATION into Ansible's configuration (``PluginLoader._load_config_defs``, a YAML parse per plugin, unless the
    configuration already holds that plugin's definitions): about 0.08 of the 0.26 CPU-s a one-task run costs a child.
    Only classes are loaded (``class_only``): no plugin object is made, so no plugin's ``__init__`` runs here; plugins
    of collections are left to the runs (the collection loader is set up by each run's CLI). Whatever this writes
    makes the server refuse (:func:`_serve`), as its imports do."""
    from ansible import constants
    from ansible.plugins import loader

    for plugins in (loader.connection_loader, loader.shell_loader, loader.become_loader, loader.callback_loader, loader.vars_loader):
        for _plugin in plugins.all(class_only=True):
            pass
    for name in constants.INVENTORY_ENABLED:
        loader.inventory_loader.get(name, class_only=True)


def _parse_builtin_routing_once():
    """Parse ansible-core's routing of ``ansible.builtin`` (ansible/config/ansible_builtin_runtime.yml, 370 KB of
    YAML: about 0.1 CPU-s, which every playbook run spends) here, once, for the children. Ansible's collection loader
    calls ``_meta_yml_to_dict(raw, content_id)``, which it documents as replaceable "to allow other implementations
    to cache the output"; the replacement answers a child's first call with exactly these bytes from the parse made
    here (each child is a process of its own, so what a run does to the dict stays in that run) and parses every
    other call, as Ansible does."""
    import ansible
    from ansible.utils.collection_loader import _collection_finder

    with open(os.path.join(os.path.dirname(ansible.__file__), "config", "ansible_builtin_runtime.yml"), "rb") as handle:
        raw = handle.read()
    parse = _collection_finder._meta_yml_to_dict
    parsed = {raw: parse(raw, ("ansible.builtin", "runtime.yml"))}

    def meta_yml_to_dict(yaml_string_data, content_id):
        ready = parsed.pop(yaml_string_data, None) if isinstance(yaml_string_data, bytes) else None
        return parse(yaml_string_data, content_id) if ready is None else ready

    _collection_finder._meta_yml_to_dict = meta_yml_to_dict


def receive_line(conn, max_fds):
    """One request from ``conn``: ``(bytes up to and including the first newline, or what came before the
    connection closed; the descriptors sent with it, at most max_fds a message)``."""
    line, fds = b"", []
    while not line.endswith(b"\n"):
        data, new_fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, max_fds)
        if not data:
            break
        line += data
        fds += new_fds
    return line, fds


def reap():
    """Reap the children of this process that ended; returns their pids (list)."""
    pids = []
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return pids
        if pid == 0:
            return pids
        pids.append(pid)


def _child(conn, request, fds):
    """One ``ansible-playbook`` run in this forked child; never returns."""
    import atexit
    import random
    import tempfile

    from ansible import constants as C
    from ansible.utils.path import cleanup_tmp_file

    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in [devnull] + fds:
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = list(request["argv"])
    random.seed()
    tempfile.tempdir = None
    # The server's DEFAULT_LOCAL_TMP (made when ansible.constants was imported) stays the server's: this run gets its
    # own, as a fresh process would, removed at exit.
    atexit.unregister(cleanup_tmp_file)
    C.DEFAULT_LOCAL_TMP = tempfile.mkdtemp(prefix="ansible-local-%s" % os.getpid(), dir=os.path.dirname(C.DEFAULT_LOCAL_TMP))
    atexit.register(cleanup_tmp_file, C.DEFAULT_LOCAL_TMP, warn=True)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    rc = 1
    try:
        from ansible.cli.playbook import main

        main()
        rc = 0
    except SystemExit as exit_:
        code = exit_.code
        rc = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(json.dumps({"rc": rc}).encode() + b"\n")
        os._exit(rc)


if __name__ == "__main__":
    _serve(sys.argv[1])
