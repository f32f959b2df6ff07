"""Run ``ansible-test sanity`` on what the collection ships, offline apart from PyPI.

ansible-test wants the collection at ``<root>/ansible_collections/kopsible/kops`` (a real directory).
This script builds the tarball with ``ansible-galaxy collection build`` (so galaxy.yml's build_ignore
decides what is tested: plugins/, roles/, playbooks/, meta/, docs/, examples/; not the development tree
of tests, emulator tools and benchmarks), unpacks it into a temporary ``ansible_collections`` tree, adds
the ignore files ``tests/sanity/ignore-*.txt`` when there are any and links the collections it depends on (amazon.aws,
kubernetes.core) from the venv's ``ansible`` package, then runs ``ansible-test sanity --local``.

ansible-test creates one virtual environment per sanity test and bootstraps pip into each with a
get-pip.py it downloads from a host this project cannot reach; ``tests/sanity/get_pip.py`` stands in
for it. Those environments and the bootstrap live under ``$XDG_CACHE_HOME/kopsible/ansible-test-home``
(``~/.cache/...`` by default; HOME for ansible-test), so the user's ``~/.ansible`` is left alone and later runs reuse
them, from any checkout on the machine, as pip's and Go's caches are reused (ansible-test names each environment
by its Python version and requirements and makes a missing one again).

Usage: ``python tests/sanity/run_sanity.py [ansible-test sanity options...]``, e.g. ``--test pep8``. Exit status: ansible-test's.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kopsible", "ansible-test-home")
DEPENDENCIES = (("amazon", "aws"), ("kubernetes", "core"))


def venv_bin(name):
    """Path of ``name`` next to the running Python (the project's venv)."""
    return os.path.join(os.path.dirname(sys.executable), name)


def bundled_collections():
    """The ``ansible_collections`` directory of the ``ansible`` package (amazon.aws and friends)."""
    for path in sys.path:
        candidate = os.path.join(path, "ansible_collections")
        if os.path.isdir(os.path.join(candidate, "amazon", "aws")):
            return candidate
    raise RuntimeError("amazon.aws is not installed in this Python (the ansible package of requirements.txt)")


def seed_pip_bootstrap():
    """Put get_pip.py where ansible-test looks for its cached bootstrap (file name from its pinned pip)."""
    import ansible_test  # pylint: disable=import-outside-toplevel

    source = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(source, encoding="utf-8") as handle:
        pip_version = re.search(r"pip='([0-9.]+)'", handle.read()).group(1)
    cache = os.path.join(HOME, ".ansible", "test", "cache")
    os.makedirs(cache, exist_ok=True)
    shutil.copyfile(os.path.join(ROOT, "tests", "sanity", "get_pip.py"), os.path.join(cache, "get_pip_%s.py" % pip_version.replace(".", "_")))


def build_tree(workdir):
    """Build the tarball and unpack it as ``workdir/ansible_collections/kopsible/kops``; returns that path."""
    dist = os.path.join(workdir, "dist")
    subprocess.run([venv_bin("ansible-galaxy"), "collection", "build", "--output-path", dist, ROOT], check=True, stdout=subprocess.DEVNULL)
    tree = os.path.join(workdir, "ansible_collections", "kopsible", "kops")
    os.makedirs(tree)
    with tarfile.open(glob.glob(os.path.join(dist, "*.tar.gz"))[0]) as tar:
        tar.extractall(tree, filter="data")
    os.makedirs(os.path.join(tree, "tests", "sanity"))
    for ignore_file in glob.glob(os.path.join(ROOT, "tests", "sanity", "ignore-*.txt")):
        shutil.copy(ignore_file, os.path.join(tree, "tests", "sanity"))
    for namespace, name in DEPENDENCIES:
        os.makedirs(os.path.join(workdir, "ansible_collections", namespace), exist_ok=True)
        os.symlink(os.path.join(bundled_collections(), namespace, name), os.path.join(workdir, "ansible_collections", namespace, name))
    return tree


def main(argv):
    """Build, unpack, run ``ansible-test sanity --local --python X.Y`` plus ``argv``; return its exit status."""
    seed_pip_bootstrap()
    workdir = tempfile.mkdtemp(prefix="kopsible-sanity-")
    try:
        tree = build_tree(workdir)
        env = dict(os.environ, HOME=HOME, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
        python = "%d.%d" % sys.version_info[:2]
        cmd = [venv_bin("ansible-test"), "sanity", "--local", "--python", python, "--color", "no"] + list(argv)
        return subprocess.run(cmd, cwd=tree, env=env, check=False).returncode
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
