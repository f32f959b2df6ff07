"""The time report at the end of ``make test``: wall time, the 10 slowest files and the sum of file times, from
pytest's JUnit XML, written to out/test-times.json and compared with tests/file_costs.json (the seconds of the last
refresh, tools/test_costs.py), so that a file that grew, or a new one, shows up.

    .venv/bin/python tools/test_times.py out/test-results.xml
"""

import json
import os
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from test_costs import OUT as COSTS  # noqa: E402
from test_costs import file_costs  # noqa: E402

REPORT = os.path.join(ROOT, "out", "test-times.json")
GREW = (1.2, 10)  # a file grew when it took more than 1.2 times its recorded seconds and 10 s more


def report(junit_xml, recorded):
    """``{'wall_seconds', 'sum_seconds', 'tests', 'slowest': [[file, s]], 'grown': [[file, recorded, now]],
    'new': [[file, s]]}`` from ``junit_xml`` and ``recorded`` (``{file: seconds}``)."""
    root = ET.parse(junit_xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    costs = file_costs(junit_xml)
    factor, margin = GREW
    return {
        "wall_seconds": round(max(float(s.get("time") or 0) for s in suites), 1),
        "sum_seconds": sum(costs.values()),
        "tests": sum(int(s.get("tests") or 0) for s in suites),
        "slowest": [[path, seconds] for path, seconds in sorted(costs.items(), key=lambda item: -item[1])[:10]],
        "grown": [
            [path, recorded[path], seconds]
            for path, seconds in sorted(costs.items())
            if path in recorded and seconds > recorded[path] * factor and seconds > recorded[path] + margin
        ],
        "new": [[path, seconds] for path, seconds in sorted(costs.items()) if path not in recorded],
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: %s JUNIT_XML" % sys.argv[0])
    if not os.path.exists(sys.argv[1]):
        raise SystemExit("test_times: %s was not written (pytest stopped before its report)" % sys.argv[1])
    with open(COSTS) as handle:
        found = report(sys.argv[1], json.load(handle))
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    with open(REPORT, "w") as handle:
        json.dump(found, handle, indent=1)
    print("test times: %d tests, wall %.0f s, sum of file times %d s (%s)" % (found["tests"], found["wall_seconds"], found["sum_seconds"], REPORT))
    for path, seconds in found["slowest"]:
        print("  %5d s  %s" % (seconds, path))
    for path, before, now in found["grown"]:
        print("  grew: %s %d s -> %d s" % (path, before, now))
    for path, seconds in found["new"]:
        print("  new:  %s %d s" % (path, seconds))
