"""The Molecule scenarios of the cluster and teardown roles, run with ``molecule test``
(tools/harness/molecule_scenarios.py): the real kops makes the smallest gossip cluster on the scenario's emulator; the
cluster scenario's converge creates and applies it, the teardown scenario's prepare does and its converge deletes it."""

import os

import pytest

from harness.molecule_scenarios import TEST_FILES, assert_scenario_passes

pytestmark = pytest.mark.kops


@pytest.mark.parametrize("scenario", TEST_FILES[os.path.basename(__file__)])
def test_molecule_scenario(scenario, emulator):
    assert_scenario_passes(scenario, emulator)
