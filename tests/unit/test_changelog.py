"""Changelog fragments as Ansible collections keep them (antsibull-changelog, changelogs/config.yaml): every change
since the last release is a fragment under changelogs/fragments/, changelogs/changelog.yaml holds the releases, and
CHANGELOG.md is what ``antsibull-changelog generate`` writes from them (never edited by hand)."""

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def changelog_tool():
    path = os.path.join(BIN, "antsibull-changelog")
    if not os.path.exists(path):
        pytest.fail("antsibull-changelog is not installed in %s (requirements.txt)" % BIN)
    return path


def run(*args, cwd=ROOT):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"), PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
    return subprocess.run([changelog_tool(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_fragments_and_changelog_yaml_pass_antsibull_changelog_lint():
    fragments = [f for f in os.listdir(os.path.join(ROOT, "changelogs", "fragments")) if f.endswith((".yml", ".yaml"))]
    assert fragments, "no fragment: the changes since the last release are not recorded"
    lint = run("lint")
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    yaml_lint = run("lint-changelog-yaml", os.path.join("changelogs", "changelog.yaml"))
    assert yaml_lint.returncode == 0 and not yaml_lint.stdout.strip(), yaml_lint.stdout + yaml_lint.stderr
    # each fragment uses a section of changelogs/config.yaml
    with open(os.path.join(ROOT, "changelogs", "config.yaml")) as handle:
        sections = {name for name, _title in yaml.safe_load(handle)["sections"]}
    for name in fragments:
        with open(os.path.join(ROOT, "changelogs", "fragments", name)) as handle:
            assert set(yaml.safe_load(handle)) <= sections | {"release_summary", "trivial"}, name


def test_changelog_md_is_what_antsibull_changelog_generates(tmp_path):
    """CHANGELOG.md equals a fresh ``generate`` (on a copy of the files it reads, so the check writes nothing)."""
    copy = tmp_path / "collection"
    copy.mkdir()
    for name in ("galaxy.yml", "changelogs", "plugins", "meta", "CHANGELOG.md"):
        source = os.path.join(ROOT, name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, copy / name)
    generated = run("generate", cwd=str(copy))
    assert generated.returncode == 0, generated.stdout + generated.stderr
    with open(os.path.join(ROOT, "CHANGELOG.md")) as handle:
        committed = handle.read()
    assert (copy / "CHANGELOG.md").read_text() == committed, "CHANGELOG.md differs from `antsibull-changelog generate`: run it and commit"
