"""The harness's warm ansible-playbook (tools/harness/forkserver.py), bytecode cache
(tools/harness/bytecode_cache/sitecustomize.py) and module server (tools/harness/module_server.py) change the cost
of a playbook run, not what it does or shows."""

import os
import re
import subprocess
import sys
import time
import zipfile

import pytest

from harness import playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = [
    {"name": "say", "ansible.builtin.debug": {"msg": "hi"}},
    {"name": "echo", "ansible.builtin.command": "echo hello"},
    {"name": "boom", "ansible.builtin.fail": {"msg": "boom"}},
]


def _run(monkeypatch, forkserver, module_server="0", **kwargs):
    monkeypatch.setenv("KOPSIBLE_FORKSERVER", forkserver)
    monkeypatch.setenv("KOPSIBLE_MODULE_FORKSERVER", module_server)
    run = playbook.run_playbook(TASKS, stdout_callback="default", diff=True, **kwargs)
    # the only difference allowed: the temporary directory of each run's play.yml
    return run.rc, re.sub(r"kopsible-play-\w+", "kopsible-play-X", run.stdout), run.stderr


def test_a_forked_run_shows_what_a_process_shows(monkeypatch):
    process = _run(monkeypatch, "0")
    forked = _run(monkeypatch, "1")
    assert process[0] == 2 and "hello" in process[1] and "boom" in process[1]
    assert forked == process
    assert _run(monkeypatch, "1", module_server="1") == process


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
    # the module process is killed with the run; its payload, in the module server, ends when the server sees it go
    assert _gone("sleep 29.25")


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


# A payload as Ansible pipes one into `python`: what it sees of its process, its output, a traceback, an exit status.
PAYLOAD = """import os, sys
print(sys.argv, sys.path[0], os.getcwd(), __file__, __name__, os.environ.get("KOPSIBLE_TEST_MARK"), oct(os.umask(0)))
print("to stderr", file=sys.stderr)
if os.environ.get("KOPSIBLE_TEST_MARK") == "fail":
    def broken():
        raise ValueError("x")
    broken()
sys.exit(int(os.environ.get("KOPSIBLE_TEST_MARK") or 0))
"""


def _module_process(server, mark, extra_env=None, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"), KOPSIBLE_TEST_MARK=mark, **(extra_env or {}))
    env.pop("KOPSIBLE_MODULE_SERVER", None)
    if server is not None:
        env["KOPSIBLE_MODULE_SERVER"] = server.socket_path
    return subprocess.run([sys.executable], input=PAYLOAD, capture_output=True, text=True, env=env, cwd="/tmp", **kwargs)


@pytest.fixture
def module_server():
    import shutil
    import tempfile

    from harness.forkserver import ModuleServers

    workdir = tempfile.mkdtemp(prefix="kopsible-test-")  # a socket's path has at most 107 bytes (pytest's are longer)
    servers = ModuleServers(workdir)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"))
    yield servers.get(env)
    servers.stop()
    shutil.rmtree(workdir)


def _gone(command_line, seconds=5.0):
    """True once no process runs ``command_line`` (polled for up to ``seconds``)."""
    deadline = time.monotonic() + seconds
    while subprocess.run(["pgrep", "-f", command_line], capture_output=True).stdout:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _children_of(pid):
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def test_a_module_process_in_the_server_shows_what_a_process_shows(module_server):
    assert module_server is not None
    for mark in ("0", "3", "fail"):
        alone = _module_process(None, mark)
        served = _module_process(module_server, mark)
        assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert alone.returncode == 1 and alone.stderr.endswith("in broken\nValueError: x\n") and "module_server" not in alone.stderr


def test_a_module_process_the_server_cannot_be_runs_its_payload_itself(module_server):
    """Python reads its locale at start-up: a process with another one is refused and runs the payload alone."""
    probe = "import os; print(os.getppid())"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"), KOPSIBLE_MODULE_SERVER=module_server.socket_path)
    served = subprocess.run([sys.executable], input=probe, capture_output=True, text=True, env=env)
    refused = subprocess.run([sys.executable], input=probe, capture_output=True, text=True, env=dict(env, LC_ALL="C"))
    assert int(served.stdout) == module_server.process.pid
    assert int(refused.stdout) == os.getpid() and refused.returncode == 0 and refused.stderr == ""


def test_a_module_process_in_a_mount_namespace_of_its_own_is_served_in_that_namespace(module_server, tmp_path):
    """tools/with-local-dns runs a playbook (and its module processes) in a mount namespace of its own, with
    /etc/resolv.conf bound to another file: the server's child joins that namespace (as root; a process in a user
    namespace of its own, without root, is refused and runs its payload itself) and reads what the module process
    would read."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.99  # %s\n" % tmp_path.name)
    probe = "import os; print(os.getppid()); print(open('/etc/resolv.conf').read(), end='')"
    env = dict(
        os.environ,
        PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"),
        KOPSIBLE_MODULE_SERVER=module_server.socket_path,
        KOPSIBLE_RESOLV_CONF=str(resolv),
    )
    wrapped = subprocess.run([os.path.join(ROOT, "tools", "with-local-dns"), sys.executable], input=probe, capture_output=True, text=True, env=env)
    assert (wrapped.returncode, wrapped.stderr) == (0, ""), wrapped.stderr
    ppid, content = wrapped.stdout.split("\n", 1)
    assert content == resolv.read_text()  # the namespace's file, wherever the payload ran
    assert (int(ppid) == module_server.process.pid) == (os.geteuid() == 0), ppid
    with open("/etc/resolv.conf") as handle:
        assert handle.read() != content  # the server itself, and this process, still see the machine's


def test_a_killed_module_process_takes_its_payloads_processes_with_it(module_server):
    """A task's timeout kills the module process: the server's child and what it started end with it."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools", "harness", "bytecode_cache"), KOPSIBLE_MODULE_SERVER=module_server.socket_path)
    for signal_name in ("TERM", "KILL"):
        client = subprocess.Popen(["timeout", "-s", signal_name, "3", sys.executable], stdin=subprocess.PIPE, env=env, text=True)
        client.communicate("import subprocess; subprocess.run(['sleep', '31.75'])")
        assert client.returncode in (124, -9)  # timeout(1) timed out (with KILL it kills its own group, itself too)
        assert _gone("sleep 31.75")
        assert _children_of(module_server.process.pid) == []
