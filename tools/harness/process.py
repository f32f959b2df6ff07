"""Child processes of the harness: stopping the ones it starts (emulator, named), and finding descendants."""

import os
import subprocess


def stop_process(proc, grace=10):
    """Terminate ``proc`` (a Popen or None), wait ``grace`` seconds, then kill it. Returns None."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def descendants(pid):
    """Every live process below ``pid`` (list of int pids, from /proc's parent links), deepest last."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
