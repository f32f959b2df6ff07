"""Harness tuning of the module processes, not of what is tested (issue 28): a bytecode cache for code imported from
zip archives, which Python has for files (``__pycache__``) but not for ``zipimport``.

An Ansible module runs as an AnsiballZ payload: its module and every module_utils it imports are in a zip archive
written to a new temporary path per task, and Python compiles each of them from source on every task (about 0.3
CPU-s of the 0.6 a kopsible module's process costs). With ``KOPSIBLE_BYTECODE_CACHE`` set to a directory, this
file (imported by Python at start-up as ``sitecustomize``, from the PYTHONPATH the test harness gives its playbook
runs) keeps each compiled source in that directory under the hash of its source, as a hash-based ``.pyc`` is, and
gives the code object the path it would have had (tracebacks name the task's own payload). Without the variable it
does nothing.

With ``KOPSIBLE_MODULE_SERVER`` naming a module server's socket (tools/harness/module_server.py), a process started
as ``python`` with its script on standard input (an Ansible module process under pipelining) hands its standard
streams to that server, which runs the script in a child of a Python that has already imported boto3, and exits with
the child's status; if the server refuses or does not answer, the script runs here as usual."""

import os

_CACHE = os.environ.get("KOPSIBLE_BYTECODE_CACHE")

if _CACHE:
    import hashlib
    import importlib.util
    import marshal
    import zipimport

    _compile = zipimport._compile_source
    _MAGIC = importlib.util.MAGIC_NUMBER.hex()

    def _with_filename(code, filename):
        """``code`` and the code objects it holds with ``co_filename`` set to ``filename``."""
        consts = tuple(_with_filename(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    def _compile_source(pathname, source):
        key = hashlib.sha256(source).hexdigest()
        path = os.path.join(_CACHE, _MAGIC, key[:2], key)
        try:
            with open(path, "rb") as handle:
                return _with_filename(marshal.load(handle), pathname)
        except (OSError, ValueError, EOFError, TypeError):
            pass
        code = _compile(pathname, source)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = "%s.%d.tmp" % (path, os.getpid())
            with open(temporary, "wb") as handle:
                marshal.dump(code, handle)
            os.replace(temporary, path)
        except OSError:
            pass
        return code

    zipimport._compile_source = _compile_source


def _run_in_module_server(socket_path):
    """Hand this module process to the module server at ``socket_path`` (tools/harness/module_server.py) and exit
    with the status of the payload it ran; return if the server refuses or does not answer (the payload then runs
    here, as without the server)."""
    import importlib.util
    import json
    import signal
    import socket
    import sys

    spec = importlib.util.spec_from_file_location(
        "_kopsible_module_server", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_server.py")
    )
    protocol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(protocol)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path)
        try:  # the server's child joins this process's mount namespace when it differs (tools/with-local-dns)
            namespace = [os.open("/proc/self/ns/mnt", os.O_RDONLY)]
        except OSError:
            namespace = []
        try:
            socket.send_fds(conn, [protocol.request(sys.path)], [0, 1, 2] + namespace)
        finally:
            for fd in namespace:
                os.close(fd)
        reader = conn.makefile("rb")
        first = json.loads(reader.readline() or b"{}")
    except (OSError, ValueError):
        conn.close()
        return
    if "pid" not in first:
        conn.close()
        return
    forwarded = []

    def forward(signum, _frame):
        forwarded.append(signum)
        try:
            os.killpg(first["pid"], signum)  # the payload and what it started, as in one process group
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    rc = None
    while rc is None:
        line = reader.readline()
        if not line:
            break
        rc = json.loads(line).get("rc")
    if rc is None:  # the child was killed: die of the signal passed on to it, or as it did
        signum = forwarded[-1] if forwarded else signal.SIGKILL
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(rc)


if os.environ.get("KOPSIBLE_MODULE_SERVER"):
    import sys

    # a script read from standard input (Ansible's pipelining: `python` alone), not `python -c`, `-m` or a file
    if sys.orig_argv[1:] == [] and not os.isatty(0):
        _run_in_module_server(os.environ["KOPSIBLE_MODULE_SERVER"])
