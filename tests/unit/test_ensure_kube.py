"""Issue 33 item 12: scripts/ensure_kube.sh reuses control-plane binaries of the pinned versions found on PATH (as
ensure_kops.sh reuses kops), linking them into .cache/bin, and does not take ones of another version. Small scripts
that print a version stand in for the binaries here: only the script's choice is under test."""

import os
import shutil
import subprocess

from conftest import ROOT


def fake(directory, name, text):
    path = directory / name
    path.write_text("#!/bin/sh\necho '%s'\n" % text)
    path.chmod(0o755)


def tree(tmp_path, kube="v1.35.4", etcd="3.6.16"):
    (tmp_path / "scripts").mkdir()
    shutil.copy(os.path.join(ROOT, "scripts", "ensure_kube.sh"), tmp_path / "scripts")
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        fake(tools, name, "Kubernetes %s" % kube)
    fake(tools, "kubectl", "Client Version: %s" % kube)
    fake(tools, "etcd", "etcd Version: %s" % etcd)
    return tools


def run(tmp_path, tools):
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % tools)  # no Go toolchain: a build would fail at once
    return subprocess.run(["bash", str(tmp_path / "scripts" / "ensure_kube.sh")], capture_output=True, text=True, env=env, timeout=60)


def test_pinned_binaries_on_path_are_linked_and_reused(tmp_path):
    tools = tree(tmp_path)
    proc = run(tmp_path, tools)
    assert proc.returncode == 0, proc.stderr
    assert "reusing kubernetes=v1.35.4 etcd=v3.6.16 from PATH" in proc.stderr
    bin_dir = tmp_path / ".cache" / "bin"
    assert os.readlink(bin_dir / "kube-apiserver") == str(tools / "kube-apiserver")
    assert os.readlink(bin_dir / "kubectl") == str(tools / "kubectl")
    assert (bin_dir / "kube-versions").read_text().strip() == "kubernetes=v1.35.4 etcd=v3.6.16"
    again = run(tmp_path, tools)
    assert again.returncode == 0 and "ensure_kube: reusing %s (kubernetes=v1.35.4" % bin_dir in again.stderr, again.stderr


def test_binaries_of_another_version_are_not_taken(tmp_path):
    tools = tree(tmp_path, kube="v1.34.1")
    proc = run(tmp_path, tools)
    assert proc.returncode == 1 and "no Go toolchain" in proc.stderr, proc.stderr
    assert not (tmp_path / ".cache" / "bin" / "kube-apiserver").exists()
