"""Targeted fixes to moto's backends so that the emulator answers as AWS does where kops needs it.

Each fix restores one documented AWS behaviour; docs/emulator.md lists the exact call, what moto
does and what AWS does, and tests/unit/test_emulator_patches.py pins each one.
"""

PATCHES = []


def patch(func):
    """Register ``func`` (no arguments, returns None) as a fix applied by :func:`apply_all`."""
    PATCHES.append(func)
    return func


def apply_all():
    """Apply every registered fix once. Returns the list of fix names applied (list of str)."""
    applied = []
    for func in PATCHES:
        func()
        applied.append(func.__name__)
    return applied
