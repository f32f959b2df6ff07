"""Shared fixtures: the local AWS emulator (one moto server process per test session, reset
between tests), and helpers to run real playbooks against it."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
# Unit tests import plugin code as ansible_collections.kopsible.kops.plugins...
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from harness.emulator import Emulator  # noqa: E402
from harness.playbook import run_playbook  # noqa: E402


@pytest.fixture(scope="session")
def emulator_session():
    emu = Emulator()
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def emulator(emulator_session):
    """The emulator, emptied before the test."""
    emulator_session.reset()
    return emulator_session


@pytest.fixture
def play(emulator):
    """``play(tasks, **kw)`` runs ``tasks`` through ansible-playbook against the emulator."""

    def _play(tasks, **kwargs):
        return run_playbook(tasks, emulator=emulator, **kwargs)

    return _play
