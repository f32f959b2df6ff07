"""The execution environment's contents without a container runtime (issue 18 item 6).

Containers cannot run on these machines (docs/awx.md), so what the image of execution-environment.yml would
hold is installed into a fresh virtualenv instead, from the same definition:

- ``ansible-builder create`` renders the build context, as an image build starts (the collection tarball from
  ``ansible-galaxy collection build`` included);
- a virtualenv on the EE's Python (``dependencies.python_interpreter``: python3.11) gets exactly the EE's pip
  packages: ``ansible_core`` and ``ansible_runner`` of the definition and the context's ``_build/requirements.txt``;
- the collections of the context's ``_build/requirements.yml`` (amazon.aws, kubernetes.core), offline: the copies
  the ``ansible`` package of requirements.txt ships, each checked to be the version the EE pins; then the
  collection itself from the context's tarball with ``ansible-galaxy collection install --offline`` (the image's
  final step); then, as the image build does, ``ansible-builder introspect`` of that collection path merged with
  the EE's own requirements, all pip-installed, and ``pip check``;
- kops: the image's build step installs the pinned release; here the pinned binary of .cache/bin, its version checked.

:class:`ExecutionEnvironment` builds it and runs a playbook through its ``ansible-runner`` (the EE's entry point, as
AWX runs a job), and returns the job's results read from ansible-runner's job events.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

import yaml

from .emulator import ROOT
from .kops_env import KOPS_VERSION, kops_binary

EE_FILES = ("execution-environment.yml", "meta/execution-environment.yml", "meta/ee-requirements.txt", "meta/ee-galaxy-requirements.yml", "bindep.txt")
RESULT_EVENTS = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_skipped": "skipped", "runner_on_unreachable": "unreachable"}


def _run(argv, **kwargs):
    """``subprocess.run`` that raises AssertionError with the command's output when it fails."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    assert proc.returncode == 0, "%s failed (rc %s):\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def job_events(artifacts):
    """The events of a job (list of dicts, in the order ansible-runner numbered them) from its artifacts directory
    (``<private data dir>/artifacts/<ident>``); an event a killed job had not finished writing
    (``<uuid>-partial.json``) is left out."""
    paths = [p for p in glob.glob(os.path.join(artifacts, "job_events", "*.json")) if os.path.basename(p).split("-")[0].isdigit()]
    events = []
    for path in sorted(paths, key=lambda p: int(os.path.basename(p).split("-")[0])):
        with open(path) as handle:
            events.append(json.load(handle))
    return events


class JobRun:
    """One job's outcome, shaped like :class:`harness.playbook.PlaybookRun`: ``rc`` (int), ``status`` (ansible-runner's
    ``successful``/``failed``...), ``stdout`` (the job's output), ``stderr`` (ansible-runner's own),
    ``results``: ``[(task name, result dict)]`` in run order, a role's task named ``"<role> : <task>"``; ``hosts``: the
    host of each result, in the same order."""

    def __init__(self, rc, status, stdout, stderr, events):
        self.rc, self.status, self.stdout, self.stderr, self.events = rc, status, stdout, stderr, events
        self.results, self.hosts = [], []
        for event in events:
            kind = RESULT_EVENTS.get(event.get("event"))
            if not kind:
                continue
            data = event["event_data"]
            name = "%s : %s" % (data["role"], data["task"]) if data.get("role") else data["task"]
            result = dict(data.get("res") or {})
            if kind == "skipped":  # ansible-runner's skipped event carries no result
                result.setdefault("skipped", True)
            self.results.append((name, result))
            self.hosts.append(data.get("host"))

    @property
    def failed(self):
        return self.rc != 0


class ExecutionEnvironment:
    """The EE's Python packages, collections and kops, installed under ``workdir`` (see the module docstring).

    :param workdir: an empty directory (``pathlib.Path`` or str); ``venv/``, ``collections/``, ``context/`` go there.
    :raises AssertionError: a step failed (its output in the message), or the EE would differ from what it pins.
    """

    def __init__(self, workdir):
        self.workdir = str(workdir)
        self.venv = os.path.join(self.workdir, "venv")
        self.collections = os.path.join(self.workdir, "collections")
        self.context = os.path.join(self.workdir, "context")
        self.installed = {}  # collection name -> version, read back from the installed MANIFEST.json files

    def bin(self, name):
        return os.path.join(self.venv, "bin", name)

    def build(self):
        """Render the context, make the venv, install packages, collections and check kops; returns self."""
        with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
            definition = yaml.safe_load(handle)
        tree = os.path.join(self.workdir, "definition")
        for rel in EE_FILES:
            os.makedirs(os.path.join(tree, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(tree, rel))
        dev_bin = os.path.dirname(sys.executable)
        _run([os.path.join(dev_bin, "ansible-galaxy"), "collection", "build", "--output-path", os.path.join(tree, "dist"), ROOT], timeout=300)
        _run([os.path.join(dev_bin, "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", self.context], cwd=tree, timeout=300)
        build = os.path.join(self.context, "_build")

        deps = definition["dependencies"]
        python = shutil.which(os.path.basename(deps["python_interpreter"]["python_path"]))
        assert python, "the EE's Python %s is not on PATH" % deps["python_interpreter"]["python_path"]
        _run([python, "-m", "venv", self.venv], timeout=300)
        packages = [deps["ansible_core"]["package_pip"], deps["ansible_runner"]["package_pip"]]
        _run([self.bin("pip"), "install", "-q", *packages, "-r", os.path.join(build, "requirements.txt")], timeout=1200)

        with open(os.path.join(build, "requirements.yml")) as handle:
            wanted = {c["name"]: c["version"] for c in yaml.safe_load(handle)["collections"]}
        bundled = os.path.join(os.path.dirname(os.path.dirname(yaml.__file__)), "ansible_collections")
        for name, version in wanted.items():
            namespace, collection = name.split(".")
            source = os.path.join(bundled, namespace, collection)
            with open(os.path.join(source, "MANIFEST.json")) as handle:
                found = json.load(handle)["collection_info"]["version"]
            assert found == version, "%s: the EE pins %s, the ansible package here ships %s" % (name, version, found)
            shutil.copytree(source, os.path.join(self.collections, "ansible_collections", namespace, collection), symlinks=True)
        [tarball] = glob.glob(os.path.join(build, "kopsible", "kopsible-kops-*.tar.gz"))
        _run([self.bin("ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "-p", self.collections, tarball], env=self.env(), timeout=300)
        for manifest in glob.glob(os.path.join(self.collections, "ansible_collections", "*", "*", "MANIFEST.json")):
            with open(manifest) as handle:
                info = json.load(handle)["collection_info"]
            self.installed["%s.%s" % (info["namespace"], info["name"])] = info["version"]

        # as the image build does: ansible-builder introspect merges the EE's own Python requirements with those the
        # installed collections declare (kubernetes.core's jsonpatch, amazon.aws's boto3...), and pip installs them all
        pip_file = os.path.join(self.workdir, "introspect-requirements.txt")
        _run(
            [
                os.path.join(dev_bin, "ansible-builder"),
                "introspect",
                self.collections,
                "--user-pip",
                os.path.join(build, "requirements.txt"),
                "--write-pip",
                pip_file,
            ],
            timeout=300,
        )
        with open(pip_file) as handle:
            self.python_requirements = [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]
        _run([self.bin("pip"), "install", "-q", "-r", pip_file], timeout=1200)
        _run([self.bin("pip"), "check"], timeout=300)

        version = _run([kops_binary(), "version", "--short"]).stdout.strip()
        assert version == KOPS_VERSION, "kops %s, the EE pins %s" % (version, KOPS_VERSION)
        return self

    def build_once(self):
        """:meth:`build` unless another process of this test run built ``workdir`` already (its ``built.json``
        records what the build read back); an exclusive lock on ``workdir``'s ``.lock`` file makes the other
        pytest-xdist workers wait for the first one's build and reuse it. Returns self."""
        import fcntl

        os.makedirs(self.workdir, exist_ok=True)
        with open(os.path.join(self.workdir, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = os.path.join(self.workdir, "built.json")
            if os.path.exists(record):
                with open(record) as handle:
                    built = json.load(handle)
                self.installed, self.python_requirements = built["installed"], built["python_requirements"]
                return self
            self.build()
            with open(record, "w") as handle:
                json.dump({"installed": self.installed, "python_requirements": self.python_requirements}, handle)
        return self

    def env(self, extra=None):
        """The environment of a job in the EE: its venv first on PATH (then kops), its collections only."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON"))}
        env.update(
            PATH=os.pathsep.join([os.path.join(self.venv, "bin"), os.path.dirname(kops_binary()), "/usr/local/bin", "/usr/bin", "/bin"]),
            ANSIBLE_COLLECTIONS_PATH=self.collections,
            ANSIBLE_NOCOLOR="1",
        )
        env.update(extra or {})
        return env

    def run_job(self, private_dir, playbook, extra_vars, env=None, resolv_conf=None, timeout=3600, inventory=None, limit=None, ident="job"):
        """Run ``playbook`` (a path relative to the project, this checkout) through the EE's ``ansible-runner run``,
        as AWX runs a job: ``extra_vars`` (dict) in the private data directory's ``env/extravars``, ``env`` (dict,
        e.g. the AWS credential as AWX's credential types inject it) added to the job's environment (no
        ``env/envvars`` file), ``inventory`` (a path: an inventory file or source such as a ``*.kops.yml``; default
        localhost on the EE's Python), ``limit`` (a host pattern: a job slice) and ``ident`` (the job's artifacts
        directory name); with ``resolv_conf``, under tools/with-local-dns. Returns a :class:`JobRun`."""
        private_dir = str(private_dir)
        os.makedirs(os.path.join(private_dir, "env"), exist_ok=True)
        if inventory is None:
            os.makedirs(os.path.join(private_dir, "inventory"), exist_ok=True)
            inventory = os.path.join(private_dir, "inventory", "hosts.yml")
            with open(inventory, "w") as handle:
                yaml.safe_dump({"all": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": self.bin("python")}}}}, handle)
        with open(os.path.join(private_dir, "env", "extravars"), "w") as handle:
            json.dump(extra_vars, handle)
        argv = [self.bin("ansible-runner"), "run", private_dir, "--project-dir", ROOT, "-p", playbook, "--ident", ident, "--inventory", str(inventory)]
        if limit:
            argv += ["--limit", limit]
        run_env = self.env(env)
        if resolv_conf:
            argv = [os.path.join(ROOT, "tools", "with-local-dns")] + argv
            run_env["KOPSIBLE_RESOLV_CONF"] = resolv_conf
        proc = subprocess.run(argv, capture_output=True, text=True, env=run_env, cwd=private_dir, timeout=timeout, check=False)
        artifacts = os.path.join(private_dir, "artifacts", ident)
        events = job_events(artifacts)
        status, rc = "unknown", proc.returncode
        if os.path.exists(os.path.join(artifacts, "status")):
            with open(os.path.join(artifacts, "status")) as handle:
                status = handle.read().strip()
        if os.path.exists(os.path.join(artifacts, "rc")):
            with open(os.path.join(artifacts, "rc")) as handle:
                rc = int(handle.read().strip() or rc)
        return JobRun(rc, status, proc.stdout, proc.stderr, events)
