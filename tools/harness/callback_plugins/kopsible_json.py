# -*- coding: utf-8 -*-
"""ansible.posix.json with each task's module (``task.action``), so that the harness knows which module made each
result (tools/harness/playbook.py checks kopsible modules' results against their RETURN documentation)."""

from ansible_collections.ansible.posix.plugins.callback.json import DOCUMENTATION as _JSON_DOC
from ansible_collections.ansible.posix.plugins.callback.json import CallbackModule as JsonCallback

DOCUMENTATION = _JSON_DOC.replace("name: json", "name: kopsible_json", 1).replace(
    "short_description: Ansible screen output as JSON", "short_description: ansible.posix.json plus each task's action", 1
)


class CallbackModule(JsonCallback):
    CALLBACK_NAME = "kopsible_json"

    def _new_task(self, task):
        data = super(CallbackModule, self)._new_task(task)
        data["task"]["action"] = task.resolved_action or task.action
        return data
