"""Targeted fixes to moto's backends so that the emulator answers as AWS does where kops needs it, one module per AWS
service as moto has them (autoscaling, ec2, elbv2, iam, route53) and the IAM enforcement mode (iam_enforcement).

Each fix restores one documented AWS behaviour that moto 5.2.5 gets wrong and that kops v1.36.2
relies on; none of them changes what kops does. docs/emulator.md lists, per fix, the exact call,
what moto does, what AWS does and how kops reacts; tests/integration/test_emulator_patches.py pins
each one through boto3 over HTTP. They are applied by tools/emulator.py before the server starts.
"""

PATCHES = []

# The modules whose fixes apply_all applies, in this order (a later fix may wrap what an earlier one patched).
SERVICES = ("autoscaling", "ec2", "iam", "elbv2", "route53", "iam_enforcement")


def patch(func):
    """Register ``func`` (no arguments, returns None) as a fix applied by :func:`apply_all`."""
    PATCHES.append(func)
    return func


def apply_all():
    """Import every service module (each registers its fixes with :func:`patch`) and apply every registered fix once.
    Returns the list of fix names applied (list of str)."""
    import importlib

    for service in SERVICES:
        importlib.import_module("emulator_patches." + service)
    applied = []
    for func in PATCHES:
        func()
        applied.append(func.__name__)
    return applied
