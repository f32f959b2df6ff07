"""The collection as users get it: ``ansible-galaxy collection build`` makes a tarball that
``ansible-galaxy collection install`` installs, and a playbook run from the installed copy (not the
checkout) delegates a subdomain in the emulator."""

import json
import os
import subprocess
import sys
import tarfile

import pytest

from harness.playbook import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
CHILD = "kopsclustertest.example.org"


def galaxy(*args, env=None):
    """Run ``ansible-galaxy ARGS`` from the venv; returns the CompletedProcess (fails the test on rc != 0)."""
    proc = subprocess.run([os.path.join(BIN, "ansible-galaxy")] + list(args), capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def bundled_collections():
    """The ``ansible_collections`` directory of the venv's ansible package (amazon.aws, kubernetes.core)."""
    for path in sys.path:
        candidate = os.path.join(path, "ansible_collections")
        if os.path.isdir(os.path.join(candidate, "amazon", "aws")):
            return candidate
    pytest.fail("amazon.aws is not installed in this Python (the ansible package of requirements.txt)")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the tarball once and install it: ``(tarball path, collections dir, environment)``; the
    environment's ANSIBLE_COLLECTIONS_PATH holds the install dir and the venv's bundled collections only."""
    base = tmp_path_factory.mktemp("galaxy")
    built = galaxy("collection", "build", "--output-path", str(base / "dist"), ROOT)
    tarball = str(base / "dist" / "kopsible-kops-0.1.0.tar.gz")
    assert tarball in built.stdout
    collections = str(base / "collections")
    path = os.pathsep.join([collections, os.path.dirname(bundled_collections())])
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=path, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    # --no-deps: amazon.aws and kubernetes.core come from the venv's ansible package; --offline: no Galaxy server.
    galaxy("collection", "install", "--offline", "--no-deps", "-p", collections, tarball, env=env)
    return tarball, collections, env


def test_tarball_ships_the_collection_without_the_development_tree(installed):
    tarball, collections, dummy = installed
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    assert manifest["collection_info"]["namespace"] == "kopsible" and manifest["collection_info"]["name"] == "kops"
    assert manifest["collection_info"]["dependencies"] == {"amazon.aws": ">=9.0.0", "community.aws": ">=9.0.0", "kubernetes.core": ">=5.0.0"}
    for shipped in (
        "plugins/modules/route53_subdomain.py",
        "plugins/modules/kops_cluster.py",
        "plugins/inventory/kops.py",
        "roles/cluster/tasks/main.yml",
        "playbooks/lifecycle.yml",
        "meta/runtime.yml",
        "README.md",
    ):
        assert shipped in names, shipped
    top = {name.split("/")[0] for name in names}
    for left_out in ("tests", "tools", "extensions", "bench", "scripts", ".venv", ".cache", "out", "Makefile", "requirements.txt"):
        assert left_out not in top, left_out
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    # the sandbox is development tooling (scripts/sandbox.py, tools/harness/), and so are the files it writes
    for left_out in ("sandbox.env", "sandbox-vars.yml"):
        assert left_out not in names, left_out
    assert "docs/getting-started.md" in names and "examples/getting-started/cluster.yml" in names
    assert manifest["collection_info"]["issues"] == "https://github.com/kopsible/kopsible/issues"
    assert manifest["collection_info"]["repository"] == "https://github.com/kopsible/kopsible"

    # The install is the tarball's content, with the MANIFEST that ansible-galaxy reads back.
    install_dir = os.path.join(collections, "ansible_collections", "kopsible", "kops")
    assert os.path.isfile(os.path.join(install_dir, "plugins", "modules", "route53_subdomain.py"))
    assert not os.path.islink(install_dir)
    listed = galaxy("collection", "list", "kopsible.kops", "--format", "json", env=installed[2]).stdout
    assert json.loads(listed) == {os.path.join(collections, "ansible_collections"): {"kopsible.kops": {"version": "0.1.0"}}}


def test_shipped_docs_link_only_to_shipped_files(installed):
    """Every relative link of a Markdown file in the tarball ([text](path)) names a file that is in the tarball too."""
    import re

    tarball = installed[0]
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        broken = []
        for name in sorted(n for n in names if n.endswith(".md")):
            text = tar.extractfile(name).read().decode()
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                path = os.path.normpath(os.path.join(os.path.dirname(name), target.split("#")[0]))
                if path not in names:
                    broken.append((name, target))
    assert broken == []


def test_ansible_doc_reads_the_installed_copy(installed):
    dummy, collections, env = installed
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "--json", "kopsible.kops.route53_subdomain"], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["kopsible.kops.route53_subdomain"]["doc"]
    assert doc["filename"] == os.path.join(collections, "ansible_collections", "kopsible", "kops", "plugins", "modules", "route53_subdomain.py")
    assert doc["short_description"]


def test_playbook_from_the_installed_copy_delegates_a_subdomain(installed, emulator):
    dummy, collections, env = installed
    r53 = emulator.client("route53")
    parent_id = r53.create_hosted_zone(Name="example.org.", CallerReference="parent")["HostedZone"]["Id"].split("/")[-1]
    task = {"name": "delegate", "kopsible.kops.route53_subdomain": {"name": CHILD, "parent_zone": "example.org"}}
    run = run_playbook([task], emulator=emulator, verbosity=3, env={"ANSIBLE_COLLECTIONS_PATH": env["ANSIBLE_COLLECTIONS_PATH"]})
    assert run.rc == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # ansible-playbook -vvv names the module file it sent: the installed one, not the checkout's.
    module_file = os.path.join(collections, "ansible_collections", "kopsible", "kops", "plugins", "modules", "route53_subdomain.py")
    assert "Using module file %s" % module_file in run.stdout
    assert os.path.join(ROOT, ".cache", "collections") not in run.stdout
    result = run.result("delegate")
    assert result["changed"] is True
    # Read back from the emulator: the child zone exists and the parent's NS record holds its name servers.
    zones = [z for z in r53.list_hosted_zones()["HostedZones"] if z["Name"] == CHILD + "."]
    assert len(zones) == 1
    zone_id = zones[0]["Id"].split("/")[-1]
    assert result["zone_id"] == zone_id
    child_ns = sorted(ns.rstrip(".") for ns in r53.get_hosted_zone(Id=zone_id)["DelegationSet"]["NameServers"])
    records = r53.list_resource_record_sets(HostedZoneId=parent_id)["ResourceRecordSets"]
    ns = [r for r in records if r["Name"] == CHILD + "." and r["Type"] == "NS"]
    assert len(ns) == 1 and sorted(v["Value"].rstrip(".") for v in ns[0]["ResourceRecords"]) == child_ns
    assert result["name_servers"] == child_ns

    again = run_playbook([task], emulator=emulator, env={"ANSIBLE_COLLECTIONS_PATH": env["ANSIBLE_COLLECTIONS_PATH"]})
    assert again.result("delegate")["changed"] is False
