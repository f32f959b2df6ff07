"""The Molecule scenarios of the instancegroups and upgrade roles, run with ``molecule test``
(tools/harness/molecule_scenarios.py): prepare makes the smallest gossip cluster with the real kops on the scenario's
emulator, converge scales its worker group (instancegroups) or upgrades it one minor version with a cloud-only roll
(upgrade)."""

import os

import pytest

from harness.molecule_scenarios import TEST_FILES, assert_scenario_passes

pytestmark = pytest.mark.kops


@pytest.mark.parametrize("scenario", TEST_FILES[os.path.basename(__file__)])
def test_molecule_scenario(scenario, emulator):
    assert_scenario_passes(scenario, emulator)
