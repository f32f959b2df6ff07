"""Issue 16 item 14: a warning reaches the result once and without ansible-core 2.19's deprecation
"Passing `warnings` to `exit_json` or `fail_json` is deprecated" (amazon.aws copies its recorded warnings into
exit_json on 2.19; KopsModule leaves that copy out, AnsibleModule.warn already reports them)."""

import json

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import KopsModule


def run(module_class, capsys):
    """The result of a module that warns once and exits, run in a fresh Python (ansible-core keeps module state in
    process-wide globals, which other tests of the same pytest worker may have touched, e.g. ansible-runner's)."""
    import subprocess
    import sys

    code = (
        "from ansible.module_utils.testing import patch_module_args\n"
        "from %s import %s as Module\n"
        "with patch_module_args({}):\n"
        "    module = Module(argument_spec={}, supports_check_mode=True)\n"
        "    module.warn('something to know')\n"
        "    module.exit_json(changed=False)\n" % (module_class.__module__, module_class.__name__)
    )
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the collection as the tests import it
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def messages(items):
    """Warning / deprecation texts: ansible-core 2.19 modules emit structured summaries ({'event': {'msg': ...}})."""
    return [i.get("event", i).get("msg") if isinstance(i, dict) else i for i in items or []]


def test_kops_module_warns_without_a_deprecation(capsys):
    result = run(KopsModule, capsys)
    assert messages(result["warnings"]) == ["something to know"]
    assert "deprecations" not in result


def test_plain_aws_module_still_shows_why(capsys):
    """The fault KopsModule fixes, so the test fails if amazon.aws stops injecting (then KopsModule can go)."""
    result = run(AnsibleAWSModule, capsys)
    assert "something to know" in messages(result["warnings"])
    assert any("Passing `warnings` to `exit_json`" in m for m in messages(result.get("deprecations")))
