"""The execution environment definition (execution-environment.yml) renders with ansible-builder,
installs the pinned kops with its sha256 check, and pins what the project pins; no interactive prompts
anywhere (AWX job templates cannot answer them)."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
from harness.execution_environment import EE_FILES  # noqa: E402  (the files of the EE definition, one list)


def pins(path):
    """``{name (lower case): version}`` of the ``name==version`` lines of a pip requirements file."""
    found = {}
    with open(path) as handle:
        for line in handle:
            match = re.match(r"^([A-Za-z0-9_.\[\]-]+)==([^\s#;]+)", line.strip())
            if match:
                found[re.sub(r"\[.*\]", "", match.group(1)).lower()] = match.group(2)
    return found


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """``ansible-builder create`` of a copy of the EE files plus the collection tarball; returns the context dir."""
    import ansible_builder  # noqa: F401  (requirements.txt: a missing one fails, never skips)

    tree = tmp_path_factory.mktemp("ee")
    for rel in EE_FILES:
        os.makedirs(tree / os.path.dirname(rel), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), tree / rel)
    build = subprocess.run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tree / "dist"), ROOT], capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stderr
    create = subprocess.run(
        [os.path.join(BIN, "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", "context", "--output-filename", "Containerfile"],
        capture_output=True,
        text=True,
        cwd=tree,
        timeout=300,
    )
    assert create.returncode == 0, create.stdout + create.stderr
    assert "No matches" not in create.stdout + create.stderr
    return tree / "context"


def test_containerfile_installs_pinned_kops_with_sha256(context):
    from harness.kops_env import KOPS_VERSION

    containerfile = (context / "Containerfile").read_text()
    assert "ARG KOPS_VERSION=%s\n" % KOPS_VERSION in containerfile
    [step] = [line for line in containerfile.splitlines() if "kops-linux-" in line]
    assert step.startswith("RUN set -eu;")
    assert 'url="https://github.com/kubernetes/kops/releases/download/v${KOPS_VERSION}/kops-linux-${arch}"' in step
    assert '"${url}.sha256"' in step and "sha256sum -c -" in step
    assert 'test "$(/usr/local/bin/kops version --short)" = "${KOPS_VERSION}"' in step
    # The kops step and the collection are in the final image, before it drops to the runner user.
    final = containerfile[containerfile.index("FROM base AS final") :]
    assert final.index("kops-linux-") < final.index("USER 1000")
    assert "ansible-galaxy collection install --offline --no-deps" in final


def test_collection_tarball_and_requirements_reach_the_context(context):
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    assert (context / "_build" / "kopsible" / ("kopsible-kops-%s.tar.gz" % galaxy["version"])).is_file()
    assert (context / "_build" / "requirements.txt").read_text() == open(os.path.join(ROOT, "meta", "ee-requirements.txt")).read()
    assert (context / "_build" / "bindep.txt").read_text() == open(os.path.join(ROOT, "bindep.txt")).read()
    collections = {c["name"]: c["version"] for c in yaml.safe_load((context / "_build" / "requirements.yml").read_text())["collections"]}
    assert set(collections) == {"amazon.aws", "community.aws", "kubernetes.core"}
    containerfile = (context / "Containerfile").read_text()
    assert "COPY _build/requirements.txt requirements.txt" in containerfile
    assert "--user-pip=requirements.txt --user-bindep=bindep.txt" in containerfile


def test_ee_pins_match_the_tested_environment():
    """The image gets the versions the tests run with: requirements.txt and the collections in .venv."""
    project = pins(os.path.join(ROOT, "requirements.txt"))
    ee = pins(os.path.join(ROOT, "meta", "ee-requirements.txt"))
    for name, version in ee.items():
        if name in project:
            assert project[name] == version, name
    with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
        definition = yaml.safe_load(handle)
    assert definition["version"] == 3
    assert definition["dependencies"]["ansible_core"]["package_pip"] == "ansible-core==" + project["ansible-core"]
    with open(os.path.join(ROOT, "meta", "ee-galaxy-requirements.yml")) as handle:
        wanted = {c["name"]: c["version"] for c in yaml.safe_load(handle)["collections"]}
    import ansible_collections

    for name, version in wanted.items():
        manifest = [m for base in ansible_collections.__path__ for m in glob.glob(os.path.join(base, *name.split("."), "MANIFEST.json"))]
        if not manifest:
            pytest.fail("collection %s is not installed in this Python (the ansible package of requirements.txt)" % name)
        with open(manifest[0]) as handle:
            assert json.load(handle)["collection_info"]["version"] == version, name


def test_no_interactive_prompts():
    """AWX runs playbooks without a terminal: no vars_prompt, no pause waiting for input."""
    offenders = []
    for pattern in ("playbooks/**/*.yml", "roles/**/*.yml", "examples/**/*.yml"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path) as handle:
                text = handle.read()
            if re.search(r"^\s*vars_prompt\s*:", text, re.M) or re.search(r"^\s*(-\s+)?(ansible\.builtin\.)?pause\s*:", text, re.M):
                offenders.append(os.path.relpath(path, ROOT))
    assert offenders == []


def test_introspection_of_the_installed_collection_finds_its_dependencies(context, tmp_path):
    """kopsible.kops in another EE's galaxy requirements: ansible-builder's introspection reads the installed
    collection's meta/execution-environment.yml (paths relative to the collection root) and lists its Python
    packages and system packages (it failed on a missing ee-requirements.txt while that file was the build definition)."""
    [tarball] = (context / "_build" / "kopsible").glob("kopsible-kops-*.tar.gz")
    collections = tmp_path / "collections"
    install = subprocess.run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force", "-p", str(collections), str(tarball)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    pip_file, bindep_file = tmp_path / "pip.txt", tmp_path / "bindep.txt"
    introspect = subprocess.run(
        [os.path.join(BIN, "ansible-builder"), "introspect", str(collections), "--write-pip", str(pip_file), "--write-bindep", str(bindep_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert introspect.returncode == 0, introspect.stdout + introspect.stderr
    listed = {line.split("#")[0].strip() for line in pip_file.read_text().splitlines() if line.split("#")[0].strip()}
    # introspect leaves out what every EE has anyway (its EXCLUDE_REQUIREMENTS: ansible-core's own, PyYAML among them)
    wanted = {"%s==%s" % item for item in pins(os.path.join(ROOT, "meta", "ee-requirements.txt")).items() if item[0] != "pyyaml"}
    assert wanted and wanted <= {line.lower() for line in listed}, listed
    assert "curl" in bindep_file.read_text(), bindep_file.read_text()
