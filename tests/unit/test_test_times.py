"""Issue 28: the time report of ``make test`` (tools/test_times.py) from pytest's JUnit XML: wall time, the slowest
files, the sum of file times, and the files that grew or are new against tests/file_costs.json."""

import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))

import test_times  # noqa: E402

XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="3" time="1234.5">
<testcase classname="tests.unit.test_test_times" name="a" time="30.0"/>
<testcase classname="tests.unit.test_test_times" name="b" time="20.0"/>
<testcase classname="tests.unit.test_kops_argv" name="c" time="7.2"/>
</testsuite></testsuites>
"""


def test_report_gives_wall_sum_slowest_grown_and_new(tmp_path):
    path = tmp_path / "results.xml"
    path.write_text(XML)
    found = test_times.report(str(path), {"tests/unit/test_test_times.py": 12, "tests/unit/test_kops_argv.py": 7})
    assert (found["wall_seconds"], found["sum_seconds"], found["tests"]) == (1234.5, 57, 3)
    assert found["slowest"] == [["tests/unit/test_test_times.py", 50], ["tests/unit/test_kops_argv.py", 7]]
    assert found["grown"] == [["tests/unit/test_test_times.py", 12, 50]] and found["new"] == []
    assert test_times.report(str(path), {})["new"] == [["tests/unit/test_kops_argv.py", 7], ["tests/unit/test_test_times.py", 50]]
