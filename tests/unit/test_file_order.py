"""The suite's file order (tests/conftest.py ``pytest_collection_modifyitems``): longest file first by
tests/file_costs.json, the tests of a file kept together and in their own order, so that pytest-xdist's
``--dist loadfile`` schedules the longest files first."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import UNKNOWN_FILE_COST  # noqa: E402


def collected(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_files_are_collected_longest_first_and_kept_whole():
    with open(os.path.join(ROOT, "tests", "file_costs.json")) as handle:
        costs = json.load(handle)
    ids = collected("tests")
    files = [nodeid.split("::")[0] for nodeid in ids]
    order = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(order) == len(set(order)), "a file's tests are split: %s" % order
    seconds = [costs.get(f, UNKNOWN_FILE_COST) for f in order]
    assert seconds == sorted(seconds, reverse=True), list(zip(order, seconds))
    # the longest file on record is first; the tests inside a file keep the order pytest collects them in alone
    assert order[0] == max(costs, key=costs.get)
    alone = collected("tests/unit/test_kops_output.py")
    assert [i for i in ids if i.startswith("tests/unit/test_kops_output.py::")] == alone
