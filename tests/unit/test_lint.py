"""Hygiene gates: ansible-lint (production profile) on the whole repository and ansible-test sanity on what
the collection ships. Each fails on any finding and prints the findings; each is skipped only when its
tool is not installed in the venv (requirements.txt installs both)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def tool(name):
    """Path of ``name`` in the venv, or skip the test when it is not installed."""
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.fail("%s is not installed in %s (requirements.txt)" % (name, BIN))
    return path


def env_for_tools():
    """The venv first on PATH; the collection from .cache/collections (amazon.aws comes from the venv's
    ansible package)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([BIN, env.get("PATH", "")])
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".cache", "collections")
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    env["NO_COLOR"] = "1"
    return env


def test_ansible_lint_production_profile_has_no_finding():
    """Every playbook, role, vars file, meta file and galaxy.yml passes the production profile (.ansible-lint);
    the only exceptions are inline noqa comments, each with its reason."""
    lint = tool("ansible-lint")
    proc = subprocess.run(
        [lint, "--offline", "--profile", "production", "--format", "pep8", "--nocolor"],
        cwd=ROOT,
        env=env_for_tools(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    findings = [line for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and not findings, "ansible-lint found:\n%s\n%s" % (proc.stdout, proc.stderr[-3000:])
    # It did lint the repository (a run that finds no file also exits 0).
    assert "files processed" in proc.stderr or "Passed" in proc.stderr, proc.stderr[-3000:]


def test_ansible_test_sanity_passes_on_the_built_collection():
    """ansible-test sanity (all its tests that run here: pylint, pep8, validate-modules, import, ansible-doc,
    yamllint...) on the unpacked tarball, through tests/sanity/run_sanity.py."""
    tool("ansible-test")
    tool("ansible-galaxy")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests", "sanity", "run_sanity.py")],
        cwd=ROOT,
        env=env_for_tools(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    output = proc.stdout + proc.stderr
    errors = [line for line in output.splitlines() if line.startswith(("ERROR:", "FATAL:"))]
    assert proc.returncode == 0 and not errors, "ansible-test sanity found:\n%s" % "\n".join(errors or [output[-5000:]])
    ran = [line for line in output.splitlines() if line.startswith("Running sanity test")]
    # The checks that matter for plugins did run (a missing requirement makes ansible-test skip a test silently).
    for name in ("ansible-doc", "compile", "import", "pep8", "pylint", "validate-modules", "yamllint"):
        assert any('"%s"' % name in line for line in ran), "sanity test %s did not run:\n%s" % (name, output[-3000:])


def test_ruff_format_and_check_have_no_finding():
    """The Python of the repository (plugins, tools, tests, scripts, bench) is formatted by ``ruff format`` and has
    no ``ruff check`` finding under pyproject.toml's rules; a finding is printed with its file and line."""
    ruff = tool("ruff")
    check = subprocess.run(
        [ruff, "check", "--output-format", "concise", "."], cwd=ROOT, env=env_for_tools(), capture_output=True, text=True, timeout=300, check=False
    )
    assert check.returncode == 0, "ruff check found:\n%s%s" % (check.stdout, check.stderr)
    fmt = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, env=env_for_tools(), capture_output=True, text=True, timeout=300, check=False)
    assert fmt.returncode == 0, "ruff format would change:\n%s%s" % (fmt.stdout, fmt.stderr)
    # It did read the repository's Python (a run that finds no file also exits 0).
    assert "files already formatted" in fmt.stdout, fmt.stdout
