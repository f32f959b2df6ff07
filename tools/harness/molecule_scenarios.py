"""The collection's Molecule scenarios (extensions/molecule/<scenario>, the layout Molecule documents for collections)
for the tests that run them with ``molecule test``: create (the local AWS emulator), prepare, converge, Molecule's own
idempotence step (a second converge must change nothing), verify (amazon.aws info modules), destroy.

The scenarios are spread over several test files so that pytest-xdist (``--dist loadfile``: one file per worker at a
time) runs them on both workers: :data:`TEST_FILES` says which file runs which, and tests/integration/test_molecule.py
proves that every scenario is run by exactly one file."""

import glob
import os
import re
import subprocess
import sys

import yaml

from .emulator import ROOT
from .playbook import with_bytecode_cache

MOLECULE_DIR = os.path.join(ROOT, "extensions", "molecule")
# test file (tests/integration/) -> the scenarios it runs
TEST_FILES = {
    # AWS APIs only (and no AWS at all for kops_binary): the emulator, no kops
    "test_molecule.py": ("state_store", "subdomain_delegation", "kops_iam", "kops_binary"),
    # the real kops on the emulator: the smallest gossip cluster made, then converged, deleted or adopted
    "test_molecule_cluster.py": ("cluster", "teardown", "adopt"),
    "test_molecule_day2.py": ("instancegroups", "upgrade"),
}


def scenarios():
    """Every scenario of the collection: the folders of extensions/molecule with a molecule.yml (sorted list of str)."""
    return sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(MOLECULE_DIR, "*", "molecule.yml")))


def scenario_sequence(scenario):
    """The scenario's test_sequence (list of str): its molecule.yml's, else the shared extensions/molecule/config.yml's.
    AssertionError when neither has one."""
    for path in (os.path.join(MOLECULE_DIR, scenario, "molecule.yml"), os.path.join(MOLECULE_DIR, "config.yml")):
        with open(path) as handle:
            sequence = ((yaml.safe_load(handle) or {}).get("scenario") or {}).get("test_sequence")
        if sequence:
            return sequence
    raise AssertionError("no test_sequence for scenario %s" % scenario)


def molecule_test(scenario, timeout=1200, emulator_url=None):
    """Run ``molecule test -s scenario`` from the repository root with the venv's tools and the collection link of
    .cache/collections; AWS settings of the caller's environment removed (the scenarios' own point at their emulator).
    With ``emulator_url`` (the URL of a running emulator, e.g. the test worker's) the scenario's create step empties
    that one and uses it instead of starting its own (extensions/molecule/shared/create.yml: about 3 s a scenario).
    Returns ``(returncode, output)``: stdout and stderr without colour codes."""
    binary = os.path.dirname(sys.executable)
    env = dict(
        os.environ,
        PATH=os.pathsep.join([binary, os.environ.get("PATH", "")]),
        NO_COLOR="1",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"),
    )
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "KOPSIBLE_MOLECULE_EMULATOR"):
        env.pop(name, None)
    if emulator_url:
        env["KOPSIBLE_MOLECULE_EMULATOR"] = emulator_url
    with_bytecode_cache(env)
    molecule = os.path.join(binary, "molecule")
    proc = subprocess.run([molecule, "test", "-s", scenario], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


def assert_scenario_passes(scenario, emulator=None):
    """Run the scenario (:func:`molecule_test`, on ``emulator``, a harness Emulator, when given) and assert that it
    passed: exit 0, a sequence with create, converge, idempotence, verify and destroy, and Molecule's recap counting
    every action of it successful (none skipped, missing or failed: idempotence included). Skips (pytest) when
    molecule is not installed in the venv."""
    import pytest

    if not os.path.exists(os.path.join(os.path.dirname(sys.executable), "molecule")):
        pytest.fail("molecule is not installed in %s (requirements.txt)" % os.path.dirname(sys.executable))
    returncode, output = molecule_test(scenario, emulator_url=emulator.url if emulator is not None else None)
    assert returncode == 0, output[-5000:]
    sequence = scenario_sequence(scenario)
    for step in ("create", "converge", "idempotence", "verify", "destroy"):
        assert step in sequence, (scenario, sequence)
    recap = re.search(r"^%s\s*:\s*actions=(\d+)\s+successful=(\d+)\s+disabled=0\s+skipped=0\s+missing=0\s+failed=0" % scenario, output, re.M)
    assert recap and int(recap.group(1)) == int(recap.group(2)) == len(sequence), output[-3000:]
