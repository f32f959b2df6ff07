"""A warm Python for Ansible's module processes in the test harness: one process per test worker (and per Python
set-up) that has imported what kopsible's modules import from outside their AnsiballZ payload (boto3 and
botocore, PyYAML, dnspython) once, and forks a child per module process, which runs the payload the module process
was given (issue 28: the import is about 0.2 of the 0.45 CPU-s a kopsible module's process costs, and the suite
starts a few thousand of them).

How a module process gets here: Ansible pipes each task's AnsiballZ payload into ``python`` (ansible.cfg:
pipelining). With ``KOPSIBLE_MODULE_SERVER`` naming a server's socket, tools/harness/bytecode_cache/sitecustomize.py
(on the PYTHONPATH the harness gives its playbook runs) hands that process's standard streams, environment,
working directory and umask to the server and waits; the server's child reads the payload from the same standard
input, runs it as ``__main__`` as ``python`` would, and reports its exit status, which the waiting process exits
with. Signals the waiting process gets (SIGTERM, SIGINT, SIGHUP) are passed on to the child's process group (a
fresh module process would share its group with what it starts, e.g. kops); if the waiting process dies (SIGKILL:
the harness's timeout), the server kills the child and everything below it.

What is the same as a fresh ``python``: the interpreter, ``sys.path``, the payload's code (read from the same
standard input, compiled as ``<stdin>``), the environment (replaced whole), working directory, umask, standard
streams, exit status and ``atexit`` handling. What cannot be the same is decided by the server, which refuses
(and the process then runs the payload itself): a different interpreter, ``sys.path``, Python or locale
environment (read at start-up), user, resource limit on open files, or namespace. One namespace is joined instead:
tools/with-local-dns runs playbooks in a mount namespace of their own, where /etc/resolv.conf differs; the module
process sends that namespace along and the child enters it (setns(2)) before anything else, so it sees the files
the module process sees (refused when the kernel does not let it). What a server's child has that a
fresh process has not: the modules imported here (their import side effects: urllib3's warning filters, botocore's
NullHandler), which an AWS module's own imports would have made too. A server whose imports wrote anything refuses
to start, and module processes run as processes.

Protocol (AF_UNIX stream socket, one connection per module process): the client sends one JSON line (:func:`request`)
with its descriptors 0, 1 and 2 and an open ``/proc/self/ns/mnt`` attached (SCM_RIGHTS); the server answers
``{"refused": reason}`` or forks, and the child answers ``{"pid": N}`` (or ``{"refused": reason}`` when it cannot
join the mount namespace) then, when the payload ends, ``{"rc": N}``.
"""

import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import threading

# Read when Python starts (PYTHON*, the locale) or when the harness's sitecustomize is imported (the bytecode cache).
START_ENV = ("PYTHON", "LC_", "LANG", "KOPSIBLE_BYTECODE_CACHE")
PRELOAD = (
    "boto3",
    "botocore.session",
    "botocore.client",
    "botocore.endpoint",
    "botocore.parsers",
    "botocore.serialize",
    "botocore.credentials",
    "botocore.waiter",
    "botocore.paginate",
    "yaml",
    "dns.resolver",
    "dns.query",
    "dns.message",
)


def identity(env, path):
    """What a module process and a server must share (a JSON-able dict): the interpreter, ``path`` (its
    ``sys.path`` when sitecustomize runs), the variables of ``env`` read at start-up, user and groups, the limit on
    open files and the namespaces."""
    import resource

    namespaces = {}
    for name in ("mnt", "net", "pid", "user", "uts", "ipc"):
        try:
            namespaces[name] = os.stat("/proc/self/ns/" + name).st_ino
        except OSError:
            namespaces[name] = None
    return {
        "executable": sys.executable,
        "path": list(path),
        "env": sorted([k, v] for k, v in env.items() if k.startswith(START_ENV)),
        "user": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "namespaces": namespaces,
    }


# --- the server side (this file run as a script: sys.path[0] is tools/harness) ------------------------------------


def _serve(socket_path):
    """Import :data:`PRELOAD`, say ``ready`` (or exit 1 with what the imports wrote), then fork a child per accepted
    module process until terminated or its parent (the test process) is gone."""
    import forkserver  # tools/harness is sys.path[0]

    failed, written = forkserver.import_quietly(PRELOAD)
    if written or failed:
        sys.stdout.write("refused: the imports failed (%s) or wrote output: %s\n" % (failed, written))
        sys.stdout.flush()
        sys.exit(1)
    own = identity(os.environ, sys.path[1:])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # a child's end wakes the loop (its connection is closed at once: the module process may be waiting for it)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    parent = os.getppid()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    children = {}  # connection -> pid of the child serving it

    def forget(conn):
        selector.unregister(conn)
        conn.close()
        del children[conn]

    while os.getppid() == parent:  # a server whose test process died ends too
        for key, _ in selector.select(1.0):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                pid = _accept(conn, own, [listener, selector, wake_r, wake_w] + list(children))
                if pid is None:
                    conn.close()
                else:
                    children[conn] = pid
                    selector.register(conn, selectors.EVENT_READ)
            elif key.fileobj is wake_r:
                os.read(wake_r, 4096)
            elif key.fileobj in children:
                conn = key.fileobj
                if not conn.recv(1):  # the module process is gone (it sends nothing after its request)
                    forkserver._kill_tree(children[conn])  # not reaped yet, so the pid is still this child's
                forget(conn)
        for pid in forkserver.reap():
            for conn in [c for c, p in children.items() if p == pid]:
                forget(conn)


def _accept(conn, own, inherited):
    """Read one request from ``conn``; refuse it, or fork the child that serves it (its pid; None if refused).
    ``inherited``: what the child closes (sockets, the selector, descriptors)."""
    import forkserver

    conn.settimeout(10)
    fds = []
    try:
        data, fds = forkserver.receive_line(conn, 4)
        request = json.loads(data) if data.endswith(b"\n") and len(fds) in (3, 4) else None
        theirs = dict(request["identity"]) if request is not None else {}
        if len(fds) == 4 and isinstance(theirs.get("namespaces"), dict) and theirs["namespaces"].get("mnt") != own["namespaces"]["mnt"]:
            # a mount namespace of its own (tools/with-local-dns): the child joins it (_join_mount_namespace)
            theirs["namespaces"] = dict(theirs["namespaces"], mnt=own["namespaces"]["mnt"])
            request["join_mnt"] = True
        differs = None if request is None else sorted(k for k in own if theirs.get(k) != own[k])
        if request is None or differs:
            conn.sendall(json.dumps({"refused": "differs: %s" % differs if differs else "bad request"}).encode() + b"\n")
            request = None
    except (OSError, ValueError, KeyError):
        request = None
    finally:
        conn.settimeout(None)
    if request is None:  # the process's own streams stay open in it alone (its readers wait for their end)
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for each in inherited:  # the server's sockets, selector and wake-up pipe
                os.close(each) if isinstance(each, int) else each.close()
            _child(conn, request, fds)
        finally:
            os._exit(70)
    for fd in fds:
        os.close(fd)
    return pid


# linux/sched.h: the flag of setns(2) for a mount namespace
CLONE_NEWNS = 0x00020000


def _join_mount_namespace(fd):
    """Make this process's mount namespace the one ``fd`` (an open ``/proc/PID/ns/mnt``) refers to, as setns(2)
    does (which also moves the root and working directory to that namespace's root: the caller changes directory
    after). Raises OSError when the kernel refuses (no CAP_SYS_ADMIN over it, e.g. a namespace of a user namespace of
    its own, or a process with threads)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNS) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _child(conn, request, fds):
    """Run the payload on standard input as ``__main__``, as ``python`` reading a script from standard input does;
    never returns. With a fourth descriptor (the module process's mount namespace, which differs from the server's:
    tools/with-local-dns) the child first joins that namespace, so that it sees the files the module process sees
    (/etc/resolv.conf); if the kernel refuses, the module process is told so and runs its payload itself."""
    import atexit
    import builtins
    import importlib.machinery
    import types

    if len(fds) == 4:
        mnt = fds.pop()
        try:
            if request.get("join_mnt"):
                _join_mount_namespace(mnt)
        except OSError as error:
            conn.sendall(json.dumps({"refused": "cannot join the mount namespace: %s" % error}).encode() + b"\n")
            os._exit(0)
        finally:
            os.close(mnt)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setpgid(0, 0)  # a group of its own, which gets what the module process's group gets (sitecustomize passes it on)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    tempfile.tempdir = None
    sys.argv = [""]
    sys.orig_argv = list(request["orig_argv"])
    sys.path[:] = [""] + request["identity"]["path"]
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__="<stdin>", __cached__=None, __loader__=importlib.machinery.BuiltinImporter, __builtins__=builtins, __annotations__={})
    sys.modules["__main__"] = main
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    rc = 0
    try:
        chunks = []
        while True:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        exec(compile(b"".join(chunks), "<stdin>", "exec"), main.__dict__)
    except SystemExit as exit_:
        rc = _exit_status(exit_.code)
    except BaseException:
        kind, error, trace = sys.exc_info()
        error.__traceback__ = trace.tb_next  # from the payload's frame on, as python prints it
        sys.excepthook(kind, error, trace.tb_next)
        rc = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        conn.sendall(json.dumps({"rc": rc}).encode() + b"\n")
        os._exit(rc)


def _exit_status(code):
    """The exit status Python gives ``sys.exit(code)`` (a code that is neither None nor an int is printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write("%s\n" % code)
    return 1


def request(path):
    """The request line (bytes) of this module process, whose ``sys.path`` is ``path`` when sitecustomize runs."""
    umask = os.umask(0)
    os.umask(umask)
    return (
        json.dumps({"identity": identity(os.environ, path), "env": dict(os.environ), "cwd": os.getcwd(), "umask": umask, "orig_argv": sys.orig_argv}).encode()
        + b"\n"
    )


if __name__ == "__main__":
    _serve(sys.argv[1])
