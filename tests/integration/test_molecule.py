"""The Molecule scenarios that need no kops (state_store, subdomain_delegation, kops_iam on the emulator; kops_binary
without AWS), run with ``molecule test`` (tools/harness/molecule_scenarios.py); the kops scenarios are run by
test_molecule_cluster.py and test_molecule_day2.py. ``make molecule`` runs every scenario without pytest."""

import os

import pytest

from harness.molecule_scenarios import TEST_FILES, assert_scenario_passes, scenarios


@pytest.mark.parametrize("scenario", TEST_FILES[os.path.basename(__file__)])
def test_molecule_scenario(scenario, emulator):
    assert_scenario_passes(scenario, emulator)


def test_every_scenario_is_run_by_one_test_file():
    """A new scenario folder must be listed in TEST_FILES (once), and every listed file exists."""
    listed = [scenario for names in TEST_FILES.values() for scenario in names]
    assert sorted(listed) == scenarios()
    here = os.path.dirname(os.path.abspath(__file__))
    assert all(os.path.exists(os.path.join(here, name)) for name in TEST_FILES), TEST_FILES
