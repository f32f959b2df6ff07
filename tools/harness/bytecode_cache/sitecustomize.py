"""Harness tuning of the module processes, not of what is tested (issue 28): a bytecode cache for code imported from
zip archives, which Python has for files (``__pycache__``) but not for ``zipimport``.

An Ansible module runs as an AnsiballZ payload: its module and every module_utils it imports are in a zip archive
written to a new temporary path per task, and Python compiles each of them from source on every task (about 0.3
CPU-s of the 0.6 a kopsible module's process costs). With ``KOPSIBLE_BYTECODE_CACHE`` set to a directory, this
file (imported by Python at start-up as ``sitecustomize``, from the PYTHONPATH the test harness gives its playbook
runs) keeps each compiled source in that directory under the hash of its source, as a hash-based ``.pyc`` is, and
gives the code object the path it would have had (tracebacks name the task's own payload). Without the variable it
does nothing."""

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
