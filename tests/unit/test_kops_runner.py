"""kops_runner: the child environment, and KopsRunner against a fake kops (a shell script in tmp_path)."""

import os
import stat
import time

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError, KopsRunner, find_binary, kops_environment

ENDPOINT = "http://127.0.0.1:5055"


# --------------------------------------------------------------------------------------------
# kops_environment
# --------------------------------------------------------------------------------------------


def test_environment_with_endpoint():
    env = kops_environment(
        state_store="s3://kops-state", region="eu-west-1", endpoint_url=ENDPOINT, access_key="AKIDEXAMPLE", secret_key="sekrit", session_token="tok", base={}
    )
    assert env == {
        "KOPS_STATE_STORE": "s3://kops-state",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "sekrit",
        "AWS_SESSION_TOKEN": "tok",
        "AWS_ENDPOINT_URL": ENDPOINT,
        "AWS_EC2_METADATA_DISABLED": "true",
        "S3_ENDPOINT": ENDPOINT,
        "S3_REGION": "eu-west-1",
        "S3_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "S3_SECRET_ACCESS_KEY": "sekrit",
    }


def test_environment_endpoint_from_base_and_region_fallbacks():
    base = {
        "AWS_ENDPOINT_URL": ENDPOINT,
        "AWS_ACCESS_KEY_ID": "A",
        "AWS_SECRET_ACCESS_KEY": "S",
        "AWS_DEFAULT_REGION": "ap-south-1",
        "AWS_EC2_METADATA_DISABLED": "false",
    }
    env = kops_environment(base=base)
    assert env["S3_ENDPOINT"] == ENDPOINT
    assert env["S3_REGION"] == "ap-south-1"
    assert env["S3_ACCESS_KEY_ID"] == "A" and env["S3_SECRET_ACCESS_KEY"] == "S"
    assert env["AWS_EC2_METADATA_DISABLED"] == "false"  # an explicit setting is kept
    assert base == {
        "AWS_ENDPOINT_URL": ENDPOINT,
        "AWS_ACCESS_KEY_ID": "A",
        "AWS_SECRET_ACCESS_KEY": "S",
        "AWS_DEFAULT_REGION": "ap-south-1",
        "AWS_EC2_METADATA_DISABLED": "false",
    }
    assert kops_environment(endpoint_url=ENDPOINT, base={})["S3_REGION"] == "us-east-1"
    # Without static keys there are no S3 keys to copy.
    env = kops_environment(endpoint_url=ENDPOINT, region="us-west-2", base={})
    assert "S3_ACCESS_KEY_ID" not in env and "S3_SECRET_ACCESS_KEY" not in env
    assert env["S3_REGION"] == "us-west-2"


def test_environment_keeps_the_state_store_key_the_caller_set():
    """Temporary AWS credentials (an STS token) cannot sign kops' state-store requests to a custom endpoint (kops
    util/pkg/vfs/s3context.go: NewStaticCredentialsProvider(S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, "")), so a key
    set for them (an AWX custom credential) is kept; one of the two alone is not a key and is replaced."""
    base = {"S3_ACCESS_KEY_ID": "AKIASTATESTORE", "S3_SECRET_ACCESS_KEY": "store-secret"}
    env = kops_environment(endpoint_url=ENDPOINT, access_key="ASIATEMP", secret_key="temp", session_token="tok", base=base)
    assert (env["S3_ACCESS_KEY_ID"], env["S3_SECRET_ACCESS_KEY"]) == ("AKIASTATESTORE", "store-secret")
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SESSION_TOKEN"]) == ("ASIATEMP", "tok")
    env = kops_environment(endpoint_url=ENDPOINT, access_key="ASIATEMP", secret_key="temp", base={"S3_ACCESS_KEY_ID": "AKIASTATESTORE"})
    assert (env["S3_ACCESS_KEY_ID"], env["S3_SECRET_ACCESS_KEY"]) == ("ASIATEMP", "temp")


def test_environment_region_keeps_explicit_default_region():
    env = kops_environment(region="eu-west-1", base={"AWS_DEFAULT_REGION": "us-east-2"})
    assert env == {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-2"}


def test_environment_without_endpoint_has_no_s3_keys():
    env = kops_environment(state_store="s3://kops-state", region="us-east-1", access_key="A", secret_key="S", base={})
    assert env == {
        "KOPS_STATE_STORE": "s3://kops-state",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "A",
        "AWS_SECRET_ACCESS_KEY": "S",
    }
    assert not any(key.startswith("S3_") for key in env)
    assert "AWS_ENDPOINT_URL" not in env and "AWS_EC2_METADATA_DISABLED" not in env


def test_environment_profile_removes_static_keys():
    base = {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T", "HOME": "/h"}
    env = kops_environment(profile="dev", base=base)
    assert env == {"AWS_PROFILE": "dev", "HOME": "/h"}
    assert base["AWS_ACCESS_KEY_ID"] == "A"


def test_environment_extra_is_applied_last_and_kubeconfig():
    extra = {"AWS_REGION": "eu-north-1", "KOPS_FEATURE_FLAGS": "+Foo", "KOPS_RUN_TOO_NEW_VERSION": 1}
    env = kops_environment(region="us-east-1", kubeconfig="/tmp/kc", base={"KOPS_FEATURE_FLAGS": "old"}, extra=extra)
    assert env["AWS_REGION"] == "eu-north-1"
    assert env["KOPS_FEATURE_FLAGS"] == "+Foo"
    assert env["KOPS_RUN_TOO_NEW_VERSION"] == "1"
    assert env["KUBECONFIG"] == "/tmp/kc"


def test_environment_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("KOPSIBLE_TEST_MARKER", "yes")
    assert kops_environment()["KOPSIBLE_TEST_MARKER"] == "yes"
    assert "KOPSIBLE_TEST_MARKER" not in kops_environment(base={})


# --------------------------------------------------------------------------------------------
# find_binary
# --------------------------------------------------------------------------------------------


def make_script(tmp_path, body, name="kops"):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def test_find_binary(tmp_path, monkeypatch):
    script = make_script(tmp_path, "exit 0")
    assert find_binary(script) == script
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary("kops") == script


@pytest.mark.parametrize("binary", ["/nonexistent/dir/kops", "kops-not-installed-anywhere-xyz"])
def test_find_binary_missing(binary):
    with pytest.raises(KopsError) as err:
        find_binary(binary)
    assert err.value.message.startswith("kops_binary: %r is not an executable file" % binary)
    assert "kops_binary" in str(err.value)


def test_find_binary_not_executable(tmp_path):
    path = tmp_path / "kops"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    with pytest.raises(KopsError) as err:
        find_binary(str(path))
    assert "kops_binary" in err.value.message


# --------------------------------------------------------------------------------------------
# KopsRunner
# --------------------------------------------------------------------------------------------


def runner_env(**extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update(extra)
    return env


def test_run_records_argv_with_kops_as_argv0(tmp_path):
    script = make_script(tmp_path, 'printf "%s\\n" "$@"; echo "FOO=$FOO" >&2')
    runner = KopsRunner(script, runner_env(FOO="bar"), timeout=30)
    result = runner.run(["get", "cluster", "--name", "a b", 3])
    assert result.stdout == "get\ncluster\n--name\na b\n3\n"
    assert result.stderr == "FOO=bar\n"
    assert result.rc == 0
    assert result.argv == ["kops", "get", "cluster", "--name", "a b", "3"]
    assert len(runner.calls) == 1
    call = runner.calls[0]
    assert call["argv"] == ["kops", "get", "cluster", "--name", "a b", "3"]
    assert call["rc"] == 0
    assert isinstance(call["seconds"], float) and call["seconds"] >= 0
    runner.run(["version"])
    assert [c["argv"] for c in runner.calls] == [["kops", "get", "cluster", "--name", "a b", "3"], ["kops", "version"]]


def test_run_passes_stdin(tmp_path):
    script = make_script(tmp_path, "cat")
    manifest = "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"
    result = KopsRunner(script, runner_env(), timeout=30).run(["replace", "-f", "-"], stdin=manifest)
    assert result.stdout == manifest


def test_run_failure_raises_kops_error(tmp_path):
    script = make_script(tmp_path, 'echo partial; echo "I1130 00:19:04.621661   1 x.go:1] log" >&2; echo "Error: cluster not found \\"x\\"" >&2; exit 1')
    runner = KopsRunner(script, runner_env(), timeout=30)
    with pytest.raises(KopsError) as err:
        runner.run(["get", "cluster", "x", "-o", "json"])
    error = err.value
    assert error.message == 'cluster not found "x"'
    assert str(error) == 'cluster not found "x"'
    assert error.rc == 1
    assert error.command == ["kops", "get", "cluster", "x", "-o", "json"]
    assert error.stdout == "partial\n"
    assert error.stderr.endswith('Error: cluster not found "x"\n')
    assert error.not_found is True
    assert error.to_result() == {"kops_command": ["kops", "get", "cluster", "x", "-o", "json"], "rc": 1, "stderr": error.stderr}
    assert runner.calls == [{"argv": ["kops", "get", "cluster", "x", "-o", "json"], "rc": 1, "seconds": runner.calls[0]["seconds"]}]


def test_run_failure_without_error_line(tmp_path):
    script = make_script(tmp_path, "exit 3")
    with pytest.raises(KopsError) as err:
        KopsRunner(script, runner_env(), timeout=30).run(["x"])
    assert err.value.message == "kops exited with 3" and err.value.rc == 3


def test_run_check_false_returns_result(tmp_path):
    script = make_script(tmp_path, 'echo out; echo "Error: bad" >&2; exit 2')
    runner = KopsRunner(script, runner_env(), timeout=30)
    result = runner.run(["validate", "cluster"], check=False)
    assert (result.rc, result.stdout, result.stderr) == (2, "out\n", "Error: bad\n")
    assert runner.calls[0]["rc"] == 2


def test_stderr_is_truncated_to_last_4000_characters():
    error = KopsError("m", ["kops"], 1, "x" * 5000 + "TAIL", "y" * 4500)
    assert len(error.stderr) == 4000 and error.stderr.endswith("TAIL")
    assert len(error.stdout) == 4000


@pytest.mark.parametrize(
    "message, expected",
    [
        ('cluster not found "x"', True),
        ('error reading cluster configuration: Cluster.kops.k8s.io "x" not found', True),
        ('InstanceGroup.kops.k8s.io "nodes-us-east-1d" not found', True),
        ('instancegroup "nodes-x" not found', True),
        ("NoSuchBucket: The specified bucket does not exist", False),
        ('error listing nodes in cluster: Get "https://api.x/api/v1/nodes": dial tcp: lookup api.x: no such host', False),
        ('file "x" not found', False),
    ],
)
def test_not_found(message, expected):
    assert KopsError(message).not_found is expected


def test_timeout(tmp_path):
    script = make_script(tmp_path, "echo started; sleep 30")
    runner = KopsRunner(script, runner_env(), timeout=30)
    start = time.monotonic()
    with pytest.raises(KopsError) as err:
        runner.run(["rolling-update", "cluster"], timeout=1)
    elapsed = time.monotonic() - start
    assert elapsed < 10
    assert err.value.rc == -1
    assert err.value.message == "kops did not finish within 1s"
    assert err.value.command == ["kops", "rolling-update", "cluster"]
    assert err.value.stdout == "started\n"
    assert runner.calls[0]["rc"] == -1 and runner.calls[0]["argv"] == ["kops", "rolling-update", "cluster"]


def test_timeout_default_from_runner(tmp_path):
    script = make_script(tmp_path, "sleep 30")
    start = time.monotonic()
    with pytest.raises(KopsError) as err:
        KopsRunner(script, runner_env(), timeout=1).run(["x"])
    assert time.monotonic() - start < 10
    assert err.value.rc == -1 and err.value.message == "kops did not finish within 1s"


def test_run_missing_binary_records_no_call():
    runner = KopsRunner("/nonexistent/kops", runner_env())
    with pytest.raises(KopsError) as err:
        runner.run(["version"])
    assert "kops_binary" in err.value.message
    assert runner.calls == []


SECRET = "s3cr3t"


def secret_env():
    return runner_env(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY=SECRET, S3_SECRET_ACCESS_KEY=SECRET)


def test_secret_not_in_error_result_or_calls(tmp_path):
    seen = tmp_path / "seen"
    script = make_script(tmp_path, 'printf %%s "$AWS_SECRET_ACCESS_KEY" > "%s"; echo "Error: AccessDenied: Access Denied" >&2; exit 1' % seen)
    runner = KopsRunner(script, secret_env(), timeout=30)
    with pytest.raises(KopsError) as err:
        runner.run(["get", "cluster", "--name", "a.example.org"])
    error = err.value
    assert seen.read_text() == SECRET  # the child got the secret through its environment
    assert error.message == "AccessDenied: Access Denied"
    assert SECRET not in str(error)
    assert SECRET not in repr(error.to_result())
    assert SECRET not in repr(runner.calls)
    assert SECRET not in repr(error.command)


def test_secret_echoed_by_kops_is_redacted(tmp_path):
    script = make_script(tmp_path, 'echo "Error: signature mismatch for secret $AWS_SECRET_ACCESS_KEY" >&2; exit 1')
    runner = KopsRunner(script, secret_env(), timeout=30)
    with pytest.raises(KopsError) as err:
        runner.run(["get", "cluster"])
    assert SECRET not in str(err.value)
    assert SECRET not in repr(err.value.to_result())


def test_writes_are_the_commands_that_may_write(tmp_path):
    """KopsRunner.writes: kops' writing subcommands (cmd/kops/root.go) unless --dry-run, and any command with
    --yes; reads and dry runs are left out; the exit code is kept (a failed write may have written part)."""
    script = make_script(tmp_path, 'case "$*" in *fail*) exit 1;; esac; exit 0')
    runner = KopsRunner(script, env=runner_env())
    for args in (
        ["get", "--name", "c.example.org", "-o", "yaml"],
        ["create", "cluster", "--name", "c", "--dry-run", "-o", "yaml"],
        ["update", "cluster", "--name", "c"],
        ["validate", "cluster", "--name", "c"],
        ["create", "cluster", "--name", "c"],
        ["replace", "-f", "-"],
        ["update", "cluster", "--name", "c", "--yes"],
        ["rolling-update", "cluster", "c", "--yes", "fail"],
    ):
        runner.run(args, check=False)
    assert runner.writes() == [
        "kops create cluster (exit 0)",
        "kops replace (exit 0)",
        "kops update cluster --yes (exit 0)",
        "kops rolling-update cluster --yes (exit 1)",
    ]


def test_binary_that_cannot_start_names_kops_binary(tmp_path):
    """An executable file that is not a program (found by the bad-input matrix: ``kops_binary: /etc/hostname``
    on a machine where that file has the x bit) fails naming the option."""
    import pytest

    from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsError, KopsRunner

    path = tmp_path / "not-a-program"
    path.write_text("just text\n")
    path.chmod(0o755)
    with pytest.raises(KopsError) as err:
        KopsRunner(str(path), {}).run(["version"])
    assert err.value.message.startswith("kops_binary: could not start %s: " % path)


# --------------------------------------------------------------------------------------------
# a stop signal (Ctrl-C, a cancelled job) while kops runs (issue 33 item 8)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def stop_signals(monkeypatch):
    """Fresh interruption state; the test process' own handlers are put back afterwards (the first signal leaves the
    stop signals ignored, as a module process that is cleaning up must)."""
    import signal

    from ansible_collections.kopsible.kops.plugins.module_utils._kops import runner as kops_runner

    saved = dict((sig, signal.getsignal(sig)) for sig in kops_runner.STOP_SIGNALS)
    monkeypatch.setattr(kops_runner, "_interrupted", [])
    monkeypatch.setattr(kops_runner, "STOP_GRACE", 3)
    yield kops_runner
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def signal_later(sig, delay):
    import signal
    import threading

    threading.Timer(delay, lambda: os.kill(os.getpid(), getattr(signal, sig))).start()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_signal_stops_kops_and_raises_kops_interrupted(tmp_path, stop_signals, sig):
    """kops runs in its own session (start_new_session), so a terminal's Ctrl-C never reaches it and an orphaned kops
    would go on rolling; the runner sends it SIGTERM and reports what it printed until then."""
    import signal

    pidfile = tmp_path / "pid"
    script = make_script(tmp_path, "echo $$ > %s; echo 'I detaching instance i-1'; sleep 30" % pidfile)
    runner = KopsRunner(script, runner_env(), timeout=60)
    signal_later(sig, 1.0)
    start = time.monotonic()
    with pytest.raises(stop_signals.KopsInterrupted) as err:
        runner.run(["rolling-update", "cluster", "--name", "c.example.org", "--yes"], merged=True)
    assert time.monotonic() - start < 10
    assert err.value.signal_name == sig and err.value.rc == -signal.SIGTERM
    assert err.value.message.startswith("interrupted by %s: kops rolling-update cluster --yes was stopped after " % sig)
    assert "I detaching instance i-1" in err.value.output
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)  # kops is gone
    assert runner.calls[-1]["interrupted"] == sig and runner.writes() == ["kops rolling-update cluster --yes (exit -15)"]
    assert stop_signals.interrupted_by() == sig
    # from then on the stop signals stay ignored: the clean-up (note, lock) must not be cut by a second Ctrl-C
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_kops_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, stop_signals):
    script = make_script(tmp_path, "trap '' TERM; echo started; while :; do sleep 1; done")
    runner = KopsRunner(script, runner_env(), timeout=60)
    signal_later("SIGINT", 1.0)
    start = time.monotonic()
    with pytest.raises(stop_signals.KopsInterrupted) as err:
        runner.run(["update", "cluster", "--yes"])
    assert 3 <= time.monotonic() - start < 10 and err.value.rc == -9 and err.value.stdout == "started\n"


def test_without_a_signal_the_handlers_are_put_back(tmp_path, stop_signals):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    KopsRunner(make_script(tmp_path, "echo ok"), runner_env()).run(["version"])
    assert signal.getsignal(signal.SIGTERM) == before and stop_signals.interrupted_by() is None
