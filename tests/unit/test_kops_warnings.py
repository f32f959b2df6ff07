"""Issue 16 item 10: kops' own warnings, in the three shapes kops v1.36.2 prints them, found in its output and routed
through KopsRunner to the module's warnings."""

import os
import stat

from ansible_collections.kopsible.kops.plugins.module_utils._kops.output import kops_warnings
from ansible_collections.kopsible.kops.plugins.module_utils._kops.runner import KopsRunner, kops_environment

STAR = "*" * 81


def test_klog_warning_of_upgrade_cluster():
    """cmd/kops/upgrade_cluster.go:207 klog.Warningf; klog's header (Lmmdd hh:mm:ss.uuuuuu threadid file:line])."""
    stderr = (
        "I1201 02:52:07.101010   4242 upgrade_cluster.go:150] reading channel\n"
        'W1201 02:52:07.123456   4242 upgrade_cluster.go:207] cluster version "1.35.4" is greater than the desired '
        'version "1.35.2"\n'
    )
    assert kops_warnings("ITEM\tPROPERTY\tOLD\tNEW\n", stderr) == ['cluster version "1.35.4" is greater than the desired version "1.35.2"']


def test_banner_and_plain_stderr_lines():
    """apply_cluster.go:1019-1029 (a banner on stdout) and rolling-update_cluster.go:268-269 (plain stderr lines);
    'No upgrade required' (upgrade_cluster.go:268) and the Error: line are not warnings."""
    stdout = (
        "Will create resources:\n\n%s\n\nKops support for this Kubernetes version is deprecated and will be removed "
        "in a future release.\n\nUpgrading Kubernetes is recommended\nMore information: "
        "https://github.com/kubernetes/kops/blob/master/permalinks/upgrade_k8s.md#1.33.0\n\n%s\n\n" % (STAR, STAR)
    )
    stderr = (
        "Unable to reach the kubernetes API.\nUse --cloudonly to do a rolling-update without confirming progress "
        "with the k8s API\n\nError: error listing nodes in cluster: dial tcp: lookup api.c.example.org: no such host\n"
    )
    assert kops_warnings(stdout, stderr) == [
        "Kops support for this Kubernetes version is deprecated and will be removed in a future release. Upgrading "
        "Kubernetes is recommended More information: https://github.com/kubernetes/kops/blob/master/permalinks/upgrade_k8s.md#1.33.0",
        "Unable to reach the kubernetes API. Use --cloudonly to do a rolling-update without confirming progress with the k8s API",
    ]
    assert kops_warnings("", "\nNo upgrade required\n") == []
    # merged output (rolling update): plain lines are stdout's (tables, evictions), only W lines count
    merged = "NAME\tSTATUS\nnodes\tNeedsUpdate\nW1201 02:52:07.123456   4242 instancegroups.go:1] detach failed\n"
    assert kops_warnings(merged, merged, merged=True) == ["detach failed"]


def test_runner_routes_each_warning_once(tmp_path):
    """Every kops call of every module passes KopsRunner.run: each warning reaches on_warning once, named by the
    command, and credentials in it are redacted. A script stands in for kops here only to print fixed output."""
    script = tmp_path / "kops"
    script.write_text(
        "#!/bin/sh\necho 'W1201 02:52:07.123456   1 x.go:1] key SECRETVALUE1 is old' >&2\n"
        "echo 'W1201 02:52:07.123456   1 x.go:2] cluster version \"1.35.4\" is greater' >&2\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    seen = []
    env = kops_environment(base=dict(os.environ, AWS_SECRET_ACCESS_KEY="SECRETVALUE1"))
    runner = KopsRunner(str(script), env, on_warning=seen.append)
    runner.run(["upgrade", "cluster", "--name", "c.example.org"])
    runner.derived(X="1").run(["upgrade", "cluster", "--name", "c.example.org", "--yes"])
    assert seen == runner.warnings == ["kops upgrade cluster: key ******** is old", 'kops upgrade cluster: cluster version "1.35.4" is greater']


def test_the_local_store_warning_of_check_modes_scratch_copy_is_not_shown(tmp_path):
    """Issue 33 item 11: kops warns on every file:// store (cmd/kops/util/factory.go:152); against check mode's scratch
    copy that is the collection's own temporary store, so it is not the user's warning. On a user's file:// store it is."""
    script = tmp_path / "kops"
    script.write_text(
        "#!/bin/sh\necho 'W1201 02:52:07.123456   1 factory.go:152] The local filesystem state store is not functional for running clusters' >&2\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    seen = []
    runner = KopsRunner(str(script), kops_environment(base=dict(os.environ)), on_warning=seen.append)
    runner.derived(scratch=True, KOPS_STATE_STORE="file:///tmp/scratch").run(["replace", "-f", "-"])
    assert seen == []
    runner.run(["get", "cluster", "c.example.org"])
    assert seen == ["kops get cluster: The local filesystem state store is not functional for running clusters"]


def test_a_validation_that_passed_does_not_show_its_retries(tmp_path):
    """Issue 33 item 11: `kops validate cluster --wait` warns "(will retry): ..." on every attempt before the cluster is
    healthy (cmd/kops/validate_cluster.go:193, :241); once it exits 0 those are not the user's warnings. When it fails
    they say why, and are kept; other warnings of a passing run are kept too."""
    script = tmp_path / "kops"
    script.write_text(
        "#!/bin/sh\n"
        "echo 'W1202 08:00:01.000000   1 validate_cluster.go:241] (will retry): cluster not yet healthy' >&2\n"
        "echo 'W1202 08:00:11.000000   1 validate_cluster.go:193] (will retry): unexpected error during validation: "
        'error listing nodes: Get "https://api.c.example.org/api/v1/nodes": EOF\' >&2\n'
        "echo 'W1202 08:00:12.000000   1 x.go:1] something else' >&2\n"
        'exit "$RC"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    seen = []
    runner = KopsRunner(str(script), kops_environment(base=dict(os.environ, RC="0")), on_warning=seen.append)
    runner.run(["validate", "cluster", "--wait", "10m"])
    assert seen == ["kops validate cluster: something else"]
    failing = []
    KopsRunner(str(script), kops_environment(base=dict(os.environ, RC="1")), on_warning=failing.append).run(["validate", "cluster"], check=False)
    assert failing == [
        "kops validate cluster: (will retry): cluster not yet healthy",
        'kops validate cluster: (will retry): unexpected error during validation: error listing nodes: Get "https://api.c.example.org/api/v1/nodes": EOF',
        "kops validate cluster: something else",
    ]
