"""Issue 16 item 14: a warning reaches the result once and without ansible-core 2.19's deprecation
"Passing `warnings` to `exit_json` or `fail_json` is deprecated" (amazon.aws copies its recorded warnings into
exit_json on 2.19; KopsModule leaves that copy out, AnsibleModule.warn already reports them)."""
import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule
from ansible_collections.kopsible.kops.plugins.module_utils.kops_common import KopsModule


def run(module_class, capsys):
    with patch_module_args({}):
        module = module_class(argument_spec={}, supports_check_mode=True)
        module.warn("something to know")
        with pytest.raises(SystemExit):
            module.exit_json(changed=False)
    return json.loads(capsys.readouterr().out)


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
