"""Merge a recorded run's observed RETURN key paths into tests/unit/fixtures/recorded/return-keys-observed.json.

    KOPSIBLE_RETURN_RECORD=/tmp/rk .venv/bin/python -m pytest -n 2 --dist loadfile tests/integration
    .venv/bin/python tools/return_coverage.py /tmp/rk "<the pytest command>"

With ``--add`` first, the recorded paths are added to the fixture's (a run of a few files that exercise new keys),
and the run is listed under ``added`` next to the first run's provenance.

Prints, per module, the documented keys no result held (tests/unit/test_return_docs.py fails on them unless the
test lists them with a reason).
"""

import datetime
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from harness.return_doc import documented_paths, return_doc  # noqa: E402

OUT = os.path.join(ROOT, "tests", "unit", "fixtures", "recorded", "return-keys-observed.json")


def merge(folder):
    """``{module: sorted paths}`` from every ``*.jsonl`` file of ``folder``."""
    seen = {}
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        with open(path) as handle:
            for line in handle:
                entry = json.loads(line)
                seen.setdefault(entry["module"], set()).update(entry["paths"])
    return {module: sorted(paths) for module, paths in sorted(seen.items())}


if __name__ == "__main__":
    args = sys.argv[1:]
    add = args[:1] == ["--add"]
    args = args[1:] if add else args
    if len(args) != 2:
        raise SystemExit("usage: %s [--add] RECORD_DIR COMMAND" % sys.argv[0])
    modules = merge(args[0])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    run = {"recorded": datetime.date.today().isoformat(), "commit": commit, "command": args[1]}
    if add:
        with open(OUT) as handle:
            data = json.load(handle)
        for module, paths in modules.items():
            data["modules"][module] = sorted(set(data["modules"].get(module, [])) | set(paths))
        data.setdefault("added", []).append(run)
        modules = data["modules"]
    else:
        data = dict(run, modules=modules)
    with open(OUT, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    for module, paths in modules.items():
        unseen = sorted(documented_paths(return_doc(module)) - set(paths))
        print("%s: %d documented paths seen, %d not: %s" % (module, len(paths), len(unseen), unseen))
