"""The harness's warm ansible-playbook (tools/harness/forkserver.py) and bytecode cache
(tools/harness/bytecode_cache/sitecustomize.py) change the cost of a playbook run, not what it does or shows."""

import os
import re
import subprocess
import sys
import zipfile

import pytest

from harness import playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = [
    {"name": "say", "ansible.builtin.debug": {"msg": "hi"}},
    {"name": "echo", "ansible.builtin.command": "echo hello"},
    {"name": "boom", "ansible.builtin.fail": {"msg": "boom"}},
]


def _run(monkeypatch, forkserver, **kwargs):
    monkeypatch.setenv("KOPSIBLE_FORKSERVER", forkserver)
    run = playbook.run_playbook(TASKS, stdout_callback="default", diff=True, **kwargs)
    # the only difference allowed: the temporary directory of each run's play.yml
    return run.rc, re.sub(r"kopsible-play-\w+", "kopsible-play-X", run.stdout), run.stderr


def test_a_forked_run_shows_what_a_process_shows(monkeypatch):
    process = _run(monkeypatch, "0")
    forked = _run(monkeypatch, "1")
    assert process[0] == 2 and "hello" in process[1] and "boom" in process[1]
    assert forked == process


def test_a_forked_run_keeps_the_runs_environment_and_exit_status(monkeypatch):
    monkeypatch.setenv("KOPSIBLE_FORKSERVER", "1")
    run = playbook.run_playbook([{"name": "env", "ansible.builtin.command": "printenv KOPSIBLE_TEST_MARK"}], env={"KOPSIBLE_TEST_MARK": "one"})
    assert run.rc == 0 and run.result("env")["stdout"] == "one"
    run = playbook.run_playbook([{"name": "env", "ansible.builtin.command": "printenv KOPSIBLE_TEST_MARK"}], env={"KOPSIBLE_TEST_MARK": "two"})
    assert run.result("env")["stdout"] == "two"
    # a different Ansible setting is a different server (Ansible reads its settings when imported)
    run = playbook.run_playbook([{"name": "say", "ansible.builtin.debug": {"msg": "x"}}], env={"ANSIBLE_DISPLAY_OK_HOSTS": "false"}, stdout_callback="default")
    assert run.rc == 0 and "TASK [say]" not in run.stdout


def test_a_forked_run_past_its_timeout_is_killed(monkeypatch):
    monkeypatch.setenv("KOPSIBLE_FORKSERVER", "1")
    with pytest.raises(subprocess.TimeoutExpired):
        playbook.run_playbook([{"name": "wait", "ansible.builtin.command": "sleep 29.25"}], timeout=5)
    gone = subprocess.run(["pgrep", "-f", "sleep 29.25"], capture_output=True, text=True)
    assert gone.stdout == ""


def test_an_invalid_setting_fails_as_in_a_process(monkeypatch):
    """A server whose import fails (here on an invalid setting) serves nothing: the run is a process, and shows
    Ansible's error as a process does."""
    env = {"ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "bogus"}
    monkeypatch.setenv("KOPSIBLE_FORKSERVER", "1")
    run = playbook.run_playbook(TASKS[:1], env=env)
    assert run.rc != 0 and "Invalid value 'bogus' for config 'TRANSFORM_INVALID_GROUP_CHARS'" in run.stderr


def test_the_bytecode_cache_gives_the_code_of_the_source_with_its_own_path(tmp_path):
    """Two archives holding the same source: the second import reads the cached code, which names the second
    archive (tracebacks name the task's own payload), and runs the same."""
    script = (
        "import sys, traceback\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import payload_mod\n"
        "print(payload_mod.answer())\n"
        "try:\n    payload_mod.fail()\nexcept ValueError:\n    print(traceback.format_exc().splitlines()[-2].strip())\n"
        "print(payload_mod.answer.__code__.co_filename)\n"
    )
    source = "def answer():\n    return 42\n\ndef fail():\n    raise ValueError('x')\n"
    cache = tmp_path / "cache"
    env = dict(os.environ, KOPSIBLE_BYTECODE_CACHE=str(cache), PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"))
    outputs = []
    for name in ("first.zip", "second.zip"):
        archive = tmp_path / name
        with zipfile.ZipFile(archive, "w") as handle:
            handle.writestr("payload_mod.py", source)
        outputs.append(subprocess.run([sys.executable, "-c", script, str(archive)], capture_output=True, text=True, env=env, check=True).stdout.splitlines())
    assert [len(list(cache.rglob("*"))) > 0] == [True]
    for output, name in zip(outputs, ("first.zip", "second.zip")):
        assert output[0] == "42"
        assert output[1] == "raise ValueError('x')"
        assert output[2] == str(tmp_path / name / "payload_mod.py")
