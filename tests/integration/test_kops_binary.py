"""Role kops_binary through playbooks/install_kops.yml: the real kops v1.36.2 served from a ``file://``
mirror laid out as kOps publishes its releases (``v<version>/kops-<os>-<arch>`` and ``.sha256``)."""

import hashlib
import json
import os
import platform
import shutil
import subprocess

import pytest

from harness.emulator import ROOT
from harness.kops_env import KOPS_VERSION, kops_binary
from harness.playbook import run_playbook

PLAYBOOK = os.path.join(ROOT, "playbooks", "install_kops.yml")
OS = platform.system().lower()
ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def real_kops():
    """(path, sha256) of the real kops; skips when it is not v1.36.2."""
    try:
        path = kops_binary()
    except RuntimeError:
        pytest.fail("no kops binary (make setup builds it)")
    version = subprocess.run([path, "version", "--short"], capture_output=True, text=True).stdout.strip()
    if version != KOPS_VERSION:
        pytest.fail("kops at %s is %r, not %s (make setup builds the pinned one)" % (path, version, KOPS_VERSION))
    return path, sha256(path)


def release_mirror(root, binary, version=KOPS_VERSION, checksum=None, checksum_file=True):
    """A mirror in kOps' release layout holding ``binary`` (symlinked); returns its ``file://`` base URL."""
    folder = os.path.join(root, "mirror", "v" + version)
    os.makedirs(folder, exist_ok=True)
    name = os.path.join(folder, "kops-%s-%s" % (OS, ARCH))
    os.symlink(binary, name)
    if checksum_file:
        with open(name + ".sha256", "w") as handle:
            handle.write((checksum or sha256(binary)) + "\n")
    return "file://" + os.path.join(root, "mirror")


def install(tmp_path, base_url, check=False, **extra):
    extra_vars = {"kops_binary_base_url": base_url, "kops_binary_install_dir": str(tmp_path / "bin")}
    extra_vars.update(extra)
    return run_playbook(playbook=PLAYBOOK, extra_vars=extra_vars, check=check, timeout=600)


def failures(run):
    return [result for _, result in run.results if result.get("failed")]


def test_install_checks_sha256_then_rerun_is_unchanged(tmp_path, real_kops):
    binary, digest = real_kops
    run = install(tmp_path, release_mirror(str(tmp_path), binary))
    assert run.rc == 0, run.stdout[-3000:]
    installed = tmp_path / "bin" / "kops"
    assert sha256(installed) == digest
    assert os.access(installed, os.X_OK) and oct(installed.stat().st_mode & 0o777) == "0o755"
    # The installed copy is the real kops and says so.
    assert subprocess.run([str(installed), "version", "--short"], capture_output=True, text=True).stdout.strip() == "1.36.2"
    assert run.stats["localhost"]["changed"] == 2  # the directory and the binary

    inode, mtime = installed.stat().st_ino, installed.stat().st_mtime_ns
    again = install(tmp_path, release_mirror(str(tmp_path / "again"), binary))
    assert again.rc == 0
    assert again.stats["localhost"]["changed"] == 0
    assert (installed.stat().st_ino, installed.stat().st_mtime_ns) == (inode, mtime)
    # The download task never ran: the installed copy already reports 1.36.2.
    downloads = [result for name, result in again.results if name.endswith(" : Download and check the sha256 of kops")]
    assert len(downloads) == 1 and downloads[0].get("skipped") is True


def test_explicit_sha256_without_checksum_file(tmp_path, real_kops):
    binary, digest = real_kops
    base = release_mirror(str(tmp_path), binary, checksum_file=False)
    run = install(tmp_path, base, kops_binary_sha256=digest.upper())
    assert run.rc == 0, run.stdout[-3000:]
    assert sha256(tmp_path / "bin" / "kops") == digest


@pytest.mark.parametrize("where", ["checksum_file", "explicit"])
def test_bad_checksum_fails_and_installs_nothing(tmp_path, real_kops, where):
    binary, digest = real_kops
    wrong = "0" * 64
    if where == "checksum_file":
        run = install(tmp_path, release_mirror(str(tmp_path), binary, checksum=wrong))
    else:
        run = install(tmp_path, release_mirror(str(tmp_path), binary), kops_binary_sha256=wrong)
    assert run.rc != 0
    [failure] = failures(run)
    assert "did not match %s" % wrong in failure["msg"] and digest in failure["msg"], failure["msg"]
    assert os.listdir(tmp_path / "bin") == []


def test_foreign_file_at_destination_is_replaced(tmp_path, real_kops):
    binary, digest = real_kops
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kops").write_text("not kops\n")
    run = install(tmp_path, release_mirror(str(tmp_path), binary))
    assert run.rc == 0, run.stdout[-3000:]
    assert sha256(tmp_path / "bin" / "kops") == digest
    assert run.stats["localhost"]["changed"] == 1


def test_release_holding_another_version_is_refused(tmp_path, real_kops):
    # A mirror whose v1.36.3 path serves 1.36.2 with a matching checksum: the sha256 passes, the
    # version check after the install does not.
    binary, _ = real_kops
    run = install(tmp_path, release_mirror(str(tmp_path), binary, version="1.36.3"), kops_binary_version="1.36.3")
    assert run.rc != 0
    [failure] = failures(run)
    assert "reports version '1.36.2', expected 1.36.3" in failure["msg"], failure["msg"]


@pytest.mark.parametrize("dir_exists", [False, True])
def test_check_mode_installs_nothing(tmp_path, real_kops, dir_exists):
    binary, _ = real_kops
    if dir_exists:
        (tmp_path / "bin").mkdir()
    run = install(tmp_path, release_mirror(str(tmp_path), binary), check=True)
    assert run.rc == 0, run.stdout[-3000:]
    assert run.stats["localhost"]["changed"] >= 1
    if dir_exists:
        assert os.listdir(tmp_path / "bin") == []
    else:
        assert not (tmp_path / "bin").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"kops_binary_version": "latest"}, "kops_binary_version: latest is not a release version"),
        ({"kops_binary_sha256": "abc123"}, "kops_binary_sha256: must be 64 hex digits"),
        ({"kops_binary_kubectl": True, "kops_binary_kubectl_version": "stable"}, "kops_binary_kubectl_version: stable is not"),
    ],
)
def test_bad_input_fails_naming_the_field(tmp_path, extra, message):
    run = install(tmp_path, "file:///nonexistent", **extra)
    assert run.rc != 0
    [failure] = failures(run)
    assert message in json.dumps(failure), failure
    assert not (tmp_path / "bin").exists()


def real_kubectl():
    """A real kubectl whose ``version --client -o json`` reports a plain release (path, version), or None.

    ``KUBECTL_BINARY`` first, then the one scripts/ensure_kube.sh builds into .cache/bin, then versioned kubectl builds shipped by the Google Cloud SDK (its
    ``kubectl`` itself is a dispatcher reporting ``v1.32.4-dispatcher``), then ``kubectl`` on PATH.
    """
    candidates = [os.environ.get("KUBECTL_BINARY", ""), os.path.join(ROOT, ".cache", "bin", "kubectl")]
    sdk = "/usr/lib/google-cloud-sdk/bin"
    if os.path.isdir(sdk):
        candidates += sorted((os.path.join(sdk, n) for n in os.listdir(sdk) if n.startswith("kubectl.1.")), reverse=True)
    candidates.append(shutil.which("kubectl") or "")
    for path in filter(None, candidates):
        proc = subprocess.run([path, "version", "--client", "-o", "json"], capture_output=True, text=True)
        try:
            version = json.loads(proc.stdout)["clientVersion"]["gitVersion"].lstrip("v")
        except (ValueError, KeyError):
            continue
        if version.count(".") == 2 and "-" not in version:
            return path, version
    return None


def test_kubectl_from_the_kubernetes_release_layout(tmp_path, real_kops):
    found = real_kubectl()
    if found is None:
        pytest.fail("no real kubectl: make setup builds one into .cache/bin (scripts/ensure_kube.sh)")
    kubectl, version = found
    binary, _ = real_kops
    folder = tmp_path / "k8s" / ("v" + version) / "bin" / OS / ARCH
    folder.mkdir(parents=True)
    os.symlink(kubectl, folder / "kubectl")
    (folder / "kubectl.sha256").write_text(sha256(kubectl))
    extra = {"kops_binary_kubectl": True, "kops_binary_kubectl_version": version, "kops_binary_kubectl_base_url": "file://%s/k8s" % tmp_path}
    run = install(tmp_path, release_mirror(str(tmp_path), binary), **extra)
    assert run.rc == 0, run.stdout[-3000:]
    installed = tmp_path / "bin" / "kubectl"
    assert sha256(installed) == sha256(kubectl)
    reported = json.loads(subprocess.run([str(installed), "version", "--client", "-o", "json"], capture_output=True, text=True).stdout)["clientVersion"][
        "gitVersion"
    ]
    assert reported == "v" + version
    again = install(tmp_path, release_mirror(str(tmp_path / "again"), binary), **extra)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0
