"""Every unit-test fixture says where it comes from: tests/unit/fixtures/README.md lists each file, as captured
from the real kops (with its command) or as hand-written (with the reason)."""

import os
import re

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def listed():
    """Fixture paths named in the README's tables (``name.ext`` and the ``, .stderr`` shorthand)."""
    with open(os.path.join(HERE, "README.md")) as handle:
        text = handle.read()
    names = set()
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].split("/")[0].strip() + "/"
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        files = re.findall(r"`([^`]+)`", cell)
        first = files[0]
        prefix = "" if first.startswith(section) else section
        names.add(prefix + first)
        stem = first.rsplit(".", 1)[0]
        for more in files[1:]:
            names.add(prefix + (stem + more if more.startswith(".") else more))
    return names


def test_every_fixture_has_its_provenance():
    present = set()
    for root, dummy, files in os.walk(HERE):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), HERE)
            if rel != "README.md":
                present.add(rel)
    assert sorted(present - listed()) == []
    assert sorted(listed() - present) == []


def test_no_fixture_is_the_output_of_something_else():
    """The kops captures hold kops' words, not a wrapper's (the old validate fixture was a failed `timeout`)."""
    folder = os.path.join(HERE, "kops-1.36.2")
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as handle:
            text = handle.read()
        assert "failed to run command" not in text and "command not found" not in text, name
