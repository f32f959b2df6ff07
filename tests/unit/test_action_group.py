"""One module_defaults block for ``group/kopsible.kops.kops`` can carry the shared kops options: every module of the
action group (meta/runtime.yml) accepts each of them (kops_common.kops_argument_spec) with the same type and default,
and documents it (ansible-doc, from the doc fragments)."""

import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kopsible.kops.plugins.module_utils._kops.common import kops_argument_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
    GROUP = yaml.safe_load(handle)["action_groups"]["kops"]


def test_every_module_of_the_collection_is_in_the_group():
    modules = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules")) if name.endswith(".py"))
    assert sorted(GROUP) == modules


@pytest.mark.parametrize("module", GROUP)
def test_module_accepts_and_documents_the_shared_kops_options(module):
    spec = importlib.import_module("ansible_collections.kopsible.kops.plugins.modules." + module).argument_spec()
    shared = kops_argument_spec()
    for option, rule in shared.items():
        assert spec.get(option) == rule, (module, option)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".cache", "collections"))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json", "kopsible.kops." + module],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    documented = json.loads(proc.stdout)["kopsible.kops." + module]["doc"]["options"]
    for option, rule in shared.items():
        assert documented[option]["type"] == rule["type"], (module, option)
        assert documented[option].get("default") == rule.get("default"), (module, option)
