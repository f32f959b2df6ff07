"""Every Molecule scenario of the collection (extensions/molecule/<scenario>, the layout Molecule documents for
collections), run with ``molecule test``: create (the local AWS emulator), prepare, converge, Molecule's own
idempotence step (a second converge must change nothing), verify (amazon.aws info modules), destroy. ``make
molecule`` runs the same scenarios without pytest."""

import glob
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SCENARIOS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(ROOT, "extensions", "molecule", "*", "molecule.yml")))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    molecule = os.path.join(BIN, "molecule")
    if not os.path.exists(molecule):
        pytest.skip("molecule is not installed in %s (requirements.txt)" % BIN)
    env = dict(
        os.environ,
        PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]),
        NO_COLOR="1",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"),
    )
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    proc = subprocess.run([molecule, "test", "-s", scenario], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-5000:]
    sequence = scenario_sequence(scenario)
    for step in ("create", "converge", "idempotence", "verify", "destroy"):
        assert step in sequence, (scenario, sequence)
    # Molecule's recap: every action of the sequence ran and succeeded (idempotence included)
    recap = re.search(r"^%s\s*:\s*actions=(\d+)\s+successful=(\d+)\s+disabled=0\s+skipped=0\s+missing=0\s+failed=0" % scenario, output, re.M)
    assert recap and int(recap.group(1)) == int(recap.group(2)) == len(sequence), output[-3000:]


def scenario_sequence(scenario):
    """The scenario's test_sequence: its molecule.yml's, else the shared extensions/molecule/config.yml's."""
    for path in (os.path.join(ROOT, "extensions", "molecule", scenario, "molecule.yml"), os.path.join(ROOT, "extensions", "molecule", "config.yml")):
        with open(path) as handle:
            sequence = ((yaml.safe_load(handle) or {}).get("scenario") or {}).get("test_sequence")
        if sequence:
            return sequence
    raise AssertionError("no test_sequence for scenario %s" % scenario)
