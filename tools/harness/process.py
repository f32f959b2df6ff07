"""Stopping the child processes the harness starts (emulator, named)."""

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
