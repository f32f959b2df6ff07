"""Every Molecule scenario of the collection (extensions/molecule/<scenario>, the layout Molecule documents for
collections), run with ``molecule test``: create (the local AWS emulator), prepare, converge, Molecule's own
idempotence step (a second converge must change nothing), verify (amazon.aws info modules), destroy. ``make
molecule`` runs the same scenarios without pytest."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
SCENARIOS = sorted(os.path.basename(os.path.dirname(p))
                   for p in glob.glob(os.path.join(ROOT, "extensions", "molecule", "*", "molecule.yml")))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    molecule = os.path.join(BIN, "molecule")
    if not os.path.exists(molecule):
        pytest.skip("molecule is not installed in %s (requirements.txt)" % BIN)
    env = dict(os.environ, PATH=os.pathsep.join([BIN, os.environ.get("PATH", "")]), NO_COLOR="1", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"))
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    proc = subprocess.run([molecule, "test", "-s", scenario], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    for step in ("create", "converge", "idempotence", "verify", "destroy"):
        assert "%s ➜ %s: Executed: Successful" % (scenario, step) in output, (step, output[-3000:])
