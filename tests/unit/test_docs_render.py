"""Every module, role and inventory plugin renders with ansible-doc, without errors or warnings."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p))) for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


def ansible_doc(kind, name):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", kind, "kopsible.kops." + name],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def assert_clean_stderr(proc):
    """ansible-doc's stderr holds no error and no warning: Ansible's own ([WARNING], ERROR!) nor a Python warning
    (e.g. cryptography 51's CryptographyDeprecationWarning from ansible-core's ssh-agent support)."""
    assert "ERROR" not in proc.stderr and "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("module", MODULES)
def test_module_doc_renders(module):
    proc = ansible_doc("module", module)
    assert proc.returncode == 0, proc.stderr
    assert_clean_stderr(proc)
    for section in ("OPTIONS", "EXAMPLES", "RETURN VALUES"):
        assert section in proc.stdout


@pytest.mark.parametrize("role", ROLES)
def test_role_doc_renders(role):
    proc = ansible_doc("role", role)
    assert proc.returncode == 0, proc.stderr
    assert_clean_stderr(proc)


INVENTORY = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "inventory", "*.py")))


@pytest.mark.parametrize("plugin", INVENTORY)
def test_inventory_doc_renders(plugin):
    proc = ansible_doc("inventory", plugin)
    assert proc.returncode == 0, proc.stderr
    assert_clean_stderr(proc)
    for section in ("OPTIONS", "EXAMPLES"):
        assert section in proc.stdout
