# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of kopsible.kops.rolling_update: the roll's steps in the play's output while the task runs.

A module's output reaches the controller only when it ends, and a group of a rolling update can take an hour
(drains wait on PodDisruptionBudgets, each node is validated). When the task runs through the local connection (the
collection's roles run on the controller), not in check mode, not async, and the task gives no ``progress_file``, this
plugin hands the module a temporary ``progress_file`` and, while it runs, shows each line the module appends there
(one per step of kops: detach, drain, eviction, stop, validation) with ``Display.display``, which a worker process
sends to the controller at once (ansible-core executor/process/worker.py sets the display queue). Otherwise the
module runs as any module does.
"""

import os
import tempfile
import threading

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ActionModule(ActionBase):
    """Runs the rolling_update module, following its progress file when the task runs on the controller."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        wrap_async = self._task.async_val and not self._connection.has_native_async
        args = dict(self._task.args)
        local = self._connection.transport.rsplit(".", 1)[-1] == "local"
        follow = local and not self._task.check_mode and not self._task.async_val and not args.get("progress_file")
        path, stop, follower = None, threading.Event(), None
        if follow:
            handle, path = tempfile.mkstemp(prefix="kopsible-roll-", suffix=".log")
            os.close(handle)
            args["progress_file"] = path
            follower = threading.Thread(target=self._follow, args=(path, args.get("cluster"), stop), daemon=True)
            follower.start()
        try:
            result.update(self._execute_module(module_args=args, task_vars=task_vars, wrap_async=wrap_async))
        finally:
            if follower is not None:
                stop.set()
                follower.join(10)
                os.unlink(path)
        if follow and isinstance(result.get("invocation"), dict) and isinstance(result["invocation"].get("module_args"), dict):
            result["invocation"]["module_args"]["progress_file"] = None  # the task gave none: the plugin's own file is gone
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    @staticmethod
    def _follow(path, cluster, stop):
        """Show each line appended to ``path`` as ``<cluster> | <step>`` until ``stop`` is set and the file is read to its
        end (polls every 0.5 s)."""
        with open(path) as handle:
            while True:
                line = handle.readline()
                if line:
                    display.display("%s | %s" % (cluster, line.rstrip("\n")))
                elif stop.is_set():
                    return
                else:
                    stop.wait(0.5)
