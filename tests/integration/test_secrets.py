"""No secret reaches the output: route53_subdomain, kops_cluster and rolling_update run with ``-vvv`` and
with an AWS access key, secret key and session token given both as module options and in the
environment, a kubeconfig path whose file holds recognisable content, and a private key given by
mistake as ``ssh_public_key``; kops_cluster and rolling_update get the kubeconfig path. The full
stdout+stderr of ansible-playbook and every result are searched for the secret keys, the session
tokens, the kubeconfig content and the private key material.

The kops modules run the real kops (.cache/bin/kops) without the local DNS: a cluster that does not
exist (delete, rolling update) and the check-mode create of a gossip cluster need no DNS lookup.
"""

import json
import subprocess

from conftest import BUCKET, UBUNTU_AMI
from harness.kops_env import artifact_mirror, kops_binary
from harness.playbook import run_playbook

OPTION_SECRETS = {
    "access_key": "AKIAKOPSIBLEOPTION01",
    "secret_key": "kopsible-secret-canary-OPTION-5f0c1e9a77",
    "session_token": "kopsible-token-canary-OPTION-IQoJb3JpZ2luX2VjEF0aCXVzLWVhc3QtMSJH",
}
ENV_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAKOPSIBLEENVIRON1",
    "AWS_SECRET_ACCESS_KEY": "kopsible-secret-canary-ENV-0b9d2c4471",
    "AWS_SESSION_TOKEN": "kopsible-token-canary-ENV-FwoGZXIvYXdzEJr//////////wEaDK",
}
KUBECONFIG_CANARY = "kopsible-kubeconfig-canary-c2VjcmV0LWNsaWVudC1rZXk"
GOSSIP = "c1.k8s.local"


def private_key(tmp_path):
    """A real RSA private key (PEM text) and its public key line."""
    path = tmp_path / "id_rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", str(path)], check=True)
    return path.read_text(), (tmp_path / "id_rsa.pub").read_text().strip()


def kubeconfig_file(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: %s\n    token: %s-token\n" % (KUBECONFIG_CANARY, KUBECONFIG_CANARY)
    )
    return str(path)


def test_no_secret_in_verbose_output(emulator, tmp_path):
    r53 = emulator.client("route53")
    r53.create_hosted_zone(Name="example.org.", CallerReference="parent")
    emulator.client("s3").create_bucket(Bucket=BUCKET)
    key, public = private_key(tmp_path)
    kubeconfig = kubeconfig_file(tmp_path)
    aws = {"endpoint_url": emulator.url, "region": "us-east-1"}
    kops = dict(
        aws, kops_binary=kops_binary(), state_store="s3://" + BUCKET, kops_env={"KOPS_BASE_URL": artifact_mirror(), "KOPS_FEATURE_FLAGS": "-ImageDigest"}
    )
    create = dict(
        zones=["us-east-1a"], node_count=1, node_size="t3.medium", control_plane_size="t3.medium", kubernetes_version="1.34.1", channel="none", image=UBUNTU_AMI
    )

    def task(label, module, options, secrets=True, **extra):
        options = dict(options, **(OPTION_SECRETS if secrets else {}))
        return dict({"name": label, "kopsible.kops." + module: options, "ignore_errors": True}, **extra)

    tasks = [
        task("r53_options", "route53_subdomain", dict(aws, name="kopsclustertest.example.org", parent_zone="example.org")),
        task("r53_env", "route53_subdomain", dict(aws, name="kopsclustertest.example.org", parent_zone="example.org"), secrets=False),
        task("absent_options", "kops_cluster", dict(kops, name="gone.k8s.local", state="absent", kubeconfig=kubeconfig)),
        task("preview_env", "kops_cluster", dict(kops, name=GOSSIP, ssh_public_key=public, kubeconfig=kubeconfig, **create), secrets=False, check_mode=True),
        task("private_key", "kops_cluster", dict(kops, name=GOSSIP, ssh_public_key=key, kubeconfig=kubeconfig, **create)),
        task("roll_options", "rolling_update", dict(kops, cluster="gone.k8s.local", cloudonly=True, kubeconfig=kubeconfig)),
        task("roll_env", "rolling_update", dict(kops, cluster="gone.k8s.local", cloudonly=True, kubeconfig=kubeconfig), secrets=False),
    ]
    run = run_playbook(tasks, emulator=emulator, verbosity=3, module_defaults=False, env=ENV_SECRETS)

    # The runs did what they say (so the search below is over real output).
    created = run.result("r53_options")
    assert created["changed"] is True and not created.get("failed"), created.get("msg")
    assert [z["Name"] for z in r53.list_hosted_zones()["HostedZones"]] == ["example.org.", "kopsclustertest.example.org."]
    assert run.result("r53_env")["changed"] is False
    absent = run.result("absent_options")
    assert absent["changed"] is False and not absent.get("failed"), absent.get("msg")
    assert [c["argv"][1:3] for c in absent["kops_invocations"]] == [["get", "cluster"]]
    preview = run.result("preview_env")
    assert not preview.get("failed"), preview.get("msg")
    assert preview["changed"] is True and preview["spec"]["kubernetesVersion"] == "1.34.1"
    refused = run.result("private_key")
    assert refused["failed"] is True and "ssh_public_key: this is a private key" in refused["msg"]
    assert "kops_invocations" not in refused
    for label in ("roll_options", "roll_env"):
        roll = run.result(label)
        assert roll["failed"] is True and "gone.k8s.local" in roll["msg"], roll.get("msg")
        assert "Traceback" not in json.dumps(roll)
    assert not any(k.startswith(GOSSIP) for k in _keys(emulator))  # check mode wrote nothing

    text = run.stdout + run.stderr + json.dumps([r for _, r in run.results])
    assert "EXEC" in run.stdout + run.stderr and "private_key" in text  # -vvv output is there
    secrets = [
        OPTION_SECRETS["secret_key"],
        OPTION_SECRETS["session_token"],
        ENV_SECRETS["AWS_SECRET_ACCESS_KEY"],
        ENV_SECRETS["AWS_SESSION_TOKEN"],
        KUBECONFIG_CANARY,
    ]
    key_lines = [line for line in key.splitlines() if line and not line.startswith("-----")]
    assert len(key_lines) > 10
    leaked = [s for s in secrets if s in text] + ["private key line %d" % i for i, line in enumerate(key_lines) if line in text]
    assert leaked == [], leaked
    assert "PRIVATE KEY-----" not in text


def _keys(emulator):
    s3 = emulator.client("s3")
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_no_key_material_from_exported_kubeconfig(kops_world, kplay, kube_world, tmp_path):
    """The kubeconfig kops exports holds a real client key; tasks that read it (kops_cluster exporting it,
    rolling_update checking PodDisruptionBudgets through it, kubernetes.core.k8s_info listing nodes with it)
    run with ``-vvv`` and a log file, and neither the output, the results, the log nor any file the run left
    next to the kubeconfig holds its key material, its client certificate data or the emulator's secret key
    (the credentials every task of the harness gets as module options and in the environment)."""
    import base64
    import os

    import yaml

    from conftest import CLUSTER
    from harness.emulator import SECRET_KEY

    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": kops_world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    kube_world.wait_cluster(CLUSTER, timeout=120, nodes=5)
    kubeconfig = str(tmp_path / "kubeconfig")
    log = tmp_path / "ansible.log"
    before = set(os.listdir(str(tmp_path)))
    tasks = [
        {"name": "export", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": kubeconfig}},
        {
            "name": "roll_preview",
            "kopsible.kops.rolling_update": {"cluster": CLUSTER, "kubeconfig": kubeconfig, "force": True, "cloudonly": True},
            "check_mode": True,
        },
        {"name": "nodes", "kubernetes.core.k8s_info": {"kind": "Node", "kubeconfig": kubeconfig}},
    ]
    run = kplay(tasks, verbosity=3, resolv_conf=kops_world.dns.resolv_conf, env={"ANSIBLE_LOG_PATH": str(log)})

    # the tasks did read the kubeconfig: the export wrote it, the PDB check and k8s_info reached the API with it
    assert not run.result("export").get("failed"), run.result("export").get("msg")
    with open(kubeconfig) as handle:
        user = yaml.safe_load(handle)["users"][0]["user"]
    roll = run.result("roll_preview")
    assert not roll.get("failed"), roll.get("msg")
    assert roll["pdb_check"].get("skipped_reason") is None and roll["pdb_check"]["nodes"], roll["pdb_check"]
    assert len(run.result("nodes")["resources"]) == 5

    key_pem = base64.b64decode(user["client-key-data"]).decode()
    assert "PRIVATE KEY-----" in key_pem
    key_lines = [line for line in key_pem.splitlines() if line and not line.startswith("-----")]
    artifacts = {"stdout": run.stdout, "stderr": run.stderr, "results": json.dumps([r for _, r in run.results]), "log": log.read_text()}
    for name in set(os.listdir(str(tmp_path))) - before - {"kubeconfig", "ansible.log"}:
        path = tmp_path / name
        if path.is_file():
            artifacts[name] = path.read_text(errors="replace")
    assert "EXEC" in artifacts["stdout"] + artifacts["stderr"] and "roll_preview" in artifacts["log"]  # -vvv, the log
    # any 48 contiguous characters of the key (base64 as in the file, or its PEM body) hold one of these pieces
    secrets = {"emulator secret key": SECRET_KEY}
    secrets.update(chunks("client-key-data", user["client-key-data"]))
    secrets.update(chunks("client key PEM", "".join(key_lines)))
    secrets.update(("client key line %d" % i, line) for i, line in enumerate(key_lines))
    secrets.update(chunks("client-certificate-data", user["client-certificate-data"]))
    leaked = sorted("%s in %s" % (label, where) for label, value in secrets.items() for where, text in artifacts.items() if value in text)
    assert leaked == [], leaked
    assert "PRIVATE KEY-----" not in "".join(artifacts.values())


def chunks(label, text, size=24):
    """``{label + offset: piece}``: ``text`` cut into pieces of ``size`` characters; any leaked run of
    ``2 * size`` characters or more contains a whole piece."""
    return {"%s[%d:]" % (label, i): text[i : i + size] for i in range(0, len(text) - size + 1, size)}
