"""Write tests/file_costs.json, the seconds each test file took in a full run, from pytest's JUnit XML.

tests/conftest.py orders the test files longest first with it, so that pytest-xdist (``--dist loadfile``) hands out
the long files first and the short ones fill the end (longest-processing-time-first scheduling). Refresh it after
a full run when files were added or changed much:

    .venv/bin/python -m pytest -n 3 --dist loadfile --junitxml=/tmp/full.xml tests
    .venv/bin/python tools/test_costs.py /tmp/full.xml
"""

import collections
import json
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "file_costs.json")


def file_costs(junit_xml):
    """``{"tests/<dir>/<file>.py": seconds}`` (int, rounded up to 1) summed over the test cases of each file."""
    costs = collections.Counter()
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        # classname is "tests.integration.test_x" or "tests.integration.test_x.TestClass"
        for end in range(len(parts), 0, -1):
            path = os.path.join(*parts[:end]) + ".py"
            if os.path.exists(os.path.join(ROOT, path)):
                costs[path] += float(case.get("time") or 0)
                break
    return {path: max(1, round(seconds)) for path, seconds in sorted(costs.items())}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: %s JUNIT_XML" % sys.argv[0])
    costs = file_costs(sys.argv[1])
    with open(OUT, "w") as handle:
        json.dump(costs, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print("%d files, %d s in all: %s" % (len(costs), sum(costs.values()), OUT))
