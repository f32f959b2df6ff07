# -*- coding: utf-8 -*-
"""ansible.posix.json with each task's module (``task.action``), so that the harness knows which module made each
result (tools/harness/playbook.py checks kopsible modules' results against their RETURN documentation)."""

import datetime
import os

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

    def _record_task_result(self, on_info, result, **kwargs):
        """Record the result as ansible.posix.json does; with ``KOPSIBLE_PROGRESS_FD`` set (harness.playbook
        ``run_playbook(progress=...)``), also write one line per task result to that file descriptor as it arrives:
        ``<status> <seconds>s <task name>``, status one of ok, changed, failed, ignored (failed, ignore_errors), skipped,
        unreachable, so a person follows a long run before its JSON arrives at the end."""
        record = self._find_result_task(result._host, result._task)  # before the parent forgets the host's task
        super(CallbackModule, self)._record_task_result(on_info, result, **kwargs)
        fd = os.environ.get("KOPSIBLE_PROGRESS_FD")
        if not fd:
            return
        task, outcome = result._task, result._result
        if on_info.get("failed"):
            status = "ignored" if task.ignore_errors else "failed"
        elif on_info.get("skipped"):
            status = "skipped"
        elif outcome.get("unreachable"):
            status = "unreachable"
        else:
            status = "changed" if outcome.get("changed") else "ok"
        duration = record["task"]["duration"]
        seconds = _seconds(duration.get("start"), duration.get("end"))
        line = "   %-9s %6.1fs  %s\n" % (status, seconds, task.get_name())
        try:
            os.write(int(fd), line.encode("utf-8", "replace"))
        except (OSError, ValueError):  # the reader went away: the run and its JSON go on
            pass


def _seconds(start, end):
    """Seconds between two of ansible.posix.json's timestamps (ISO 8601 with a trailing Z); 0.0 when one is missing."""
    if not start or not end:
        return 0.0
    return (datetime.datetime.fromisoformat(end.rstrip("Z")) - datetime.datetime.fromisoformat(start.rstrip("Z"))).total_seconds()
