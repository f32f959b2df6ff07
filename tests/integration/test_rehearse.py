"""Issue 32, rehearse: a change to a "production" cluster rehearsed on its twin in the local world, never touching
production.

Production is a second emulator with its own kube world: a gossip cluster made with kops by hand (1 control-plane
node, 2 workers in 2 groups), a Deployment of 2 pods (one per worker) under a PodDisruptionBudget that allows no
disruption. The rehearsal gets only read access: an IAM user allowed s3:GetObject and s3:ListBucket on the state store
(IAM enforced), and a ServiceAccount token that may only get and list Nodes, Pods and budgets. The twin is built in
this worker's emulator and kube world (scripts/rehearse.py, as `make rehearse` runs it), an upgrade (the upgrade role,
1.34.1 -> 1.35.0) is run against it, and the report is read back: the budget blocks, on the production nodes that run
its pods; the roll order; nothing would be written. Production's snapshot is unchanged, no lock object is there, and
every request the rehearsal made there was a read.
"""

import json
import os
import subprocess
import sys

import kubernetes
import pytest
import yaml

from harness.emulator import ROOT, Emulator
from harness.kops_env import UBUNTU_AMI, module_options
from harness.kubeworld_runner import KubeWorldProcess, wait_for
from harness.store_factory import run_kops

pytestmark = pytest.mark.kops

PROD = "prod.k8s.local"
BUCKET = "prod-kops-state"
STORE = "s3://" + BUCKET
READER = "rehearsal-reader"


def read_only_user(emulator):
    """IAM user ``rehearsal-reader`` allowed to read the state store and nothing else; returns its access key (dict)."""
    iam = emulator.client("iam")
    iam.create_user(UserName=READER)
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "arn:aws:s3:::" + BUCKET},
            {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::%s/*" % BUCKET},
        ],
    }
    iam.put_user_policy(UserName=READER, PolicyName="read-state-store", PolicyDocument=json.dumps(policy))
    return iam.create_access_key(UserName=READER)["AccessKey"]


def read_only_kubeconfig(kube, path):
    """A kubeconfig of the production cluster whose ServiceAccount may only get and list Nodes, Pods and
    PodDisruptionBudgets (RBAC), written to ``path``."""
    client = kube.api_client(PROD)
    core, rbac = kubernetes.client.CoreV1Api(client), kubernetes.client.RbacAuthorizationV1Api(client)
    core.create_namespaced_service_account("kube-system", {"metadata": {"name": "rehearsal"}})
    rules = [
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list"]},
    ]
    rbac.create_cluster_role({"metadata": {"name": "rehearsal-read"}, "rules": rules})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "rehearsal-read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "rehearsal-read"},
            "subjects": [{"kind": "ServiceAccount", "name": "rehearsal", "namespace": "kube-system"}],
        }
    )
    token = core.create_namespaced_service_account_token("rehearsal", "kube-system", {"spec": {"expirationSeconds": 3600}}).status.token
    with open(kube.admin_kubeconfig(PROD)) as handle:
        config = yaml.safe_load(handle)
    config["users"] = [{"name": "rehearsal", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "rehearsal"
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def web(apps, policy):
    """Deployment ``web`` (2 pods, one per worker) and budget ``web`` (minAvailable 2: no disruption allowed)."""
    labels = {"app": "web"}
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}
    spec = {
        "replicas": 2,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"affinity": {"podAntiAffinity": anti}, "containers": [{"name": "web", "image": "nginx:1.27"}]}},
    }
    apps.create_namespaced_deployment("default", {"metadata": {"name": "web"}, "spec": spec})
    policy.create_namespaced_pod_disruption_budget("default", {"metadata": {"name": "web"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}}})


@pytest.fixture(scope="module")
def production(tmp_path_factory, ssh_public_key):
    """The production account: its own emulator and kube world, the cluster, the workload, the read-only user."""
    tmp = tmp_path_factory.mktemp("production")
    emulator = Emulator(log_path=str(tmp / "emulator.log")).start()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    kube = KubeWorldProcess(emulator, "127.%d.9" % (60 + int(worker[2:] or 0)), state_dir=str(tmp / "kube-world")).start()
    try:
        emulator.warm()
        s3 = emulator.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        key = tmp / "id.pub"
        key.write_text(ssh_public_key + "\n")
        run_kops(
            emulator,
            STORE,
            [
                "create", "cluster", "--name", PROD, "--cloud", "aws", "--zones", "us-east-1a,us-east-1b",
                "--control-plane-zones", "us-east-1a", "--node-count", "2", "--node-size", "t3.medium",
                "--control-plane-size", "t3.medium", "--kubernetes-version", "1.34.1", "--channel", "none",
                "--image", UBUNTU_AMI, "--ssh-public-key", str(key),
            ],
        )  # fmt: skip
        run_kops(emulator, STORE, ["update", "cluster", "--name", PROD, "--yes"])
        kube.wait_cluster(PROD, timeout=180, nodes=3)
        client = kube.api_client(PROD)
        web(kubernetes.client.AppsV1Api(client), kubernetes.client.PolicyV1Api(client))
        core = kubernetes.client.CoreV1Api(client)
        wait_for(lambda: len([p for p in core.list_namespaced_pod("default", label_selector="app=web").items if p.status.phase == "Running"]) == 2, timeout=120)
        # a second cluster whose spec the local world cannot host: its VPC is the production account's own
        config = yaml.safe_load(s3.get_object(Bucket=BUCKET, Key=PROD + "/config")["Body"].read())
        config["metadata"]["name"] = "shared.k8s.local"
        config["spec"]["networkID"] = "vpc-0123456789abcdef0"
        config["spec"]["configBase"] = STORE + "/shared.k8s.local"
        s3.put_object(Bucket=BUCKET, Key="shared.k8s.local/config", Body=yaml.safe_dump(config).encode())
        reader = read_only_user(emulator)
        kubeconfig = read_only_kubeconfig(kube, str(tmp / "live.kubeconfig"))
        emulator.enforce_iam()
        yield {"emulator": emulator, "kube": kube, "reader": reader, "kubeconfig": kubeconfig, "core": core}
    finally:
        kube.stop()
        emulator.stop()


def twin_vars(emulator, dns, path):
    """The local world's settings for the twin in sandbox-vars.yml's shape (scripts/sandbox.py sandbox_vars)."""
    env = emulator.aws_env()
    aws = {"endpoint_url": emulator.url, "region": "us-east-1", "access_key": env["AWS_ACCESS_KEY_ID"], "secret_key": env["AWS_SECRET_ACCESS_KEY"]}
    with open(path, "w") as handle:
        yaml.safe_dump({"kopsible_defaults": dict(aws, **module_options(dns)), "aws_defaults": aws, "kops_image": UBUNTU_AMI, "kops_channel": "none"}, handle)
    return path


UPGRADE = [
    {
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/kopsible.kops.kops": "{{ kopsible_defaults }}", "group/aws": "{{ aws_defaults }}"},
        "roles": [
            {
                "role": "kopsible.kops.upgrade",
                "vars": {
                    "upgrade_cluster": "{{ cluster_name }}",
                    "upgrade_kubernetes_version": "1.35.0",
                    "upgrade_kubeconfig": "{{ kubeconfig }}",
                    "upgrade_etcd_backup_max_age": "",
                    "upgrade_diagnostics": False,
                },
            }
        ],
    }
]


def rehearse(production, tmp_path, vars_file, cluster, playbook=None, kubeconfig=True):
    """Run scripts/rehearse.py as `make rehearse` does; returns (CompletedProcess, report dict or None)."""
    report = tmp_path / ("report-%s.json" % cluster)
    playbook_file = tmp_path / "change.yml"
    playbook_file.write_text(yaml.safe_dump(playbook or UPGRADE))
    argv = [sys.executable, os.path.join(ROOT, "scripts", "rehearse.py"), "--cluster", cluster, "--source-store", STORE]
    argv += ["--source-endpoint", production["emulator"].url, "--playbook", str(playbook_file), "--twin-vars", str(vars_file), "--report", str(report)]
    if kubeconfig:
        argv += ["--kubeconfig", production["kubeconfig"]]
    env = dict(
        os.environ, REHEARSE_SOURCE_ACCESS_KEY_ID=production["reader"]["AccessKeyId"], REHEARSE_SOURCE_SECRET_ACCESS_KEY=production["reader"]["SecretAccessKey"]
    )
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1500, cwd=ROOT)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


def test_an_upgrade_rehearsed_on_the_twin_names_the_blocking_budget_and_leaves_production_alone(production, emulator, kops_dns, kube_world, tmp_path):
    prod = production["emulator"]
    before = prod.snapshot()
    live_nodes = {n.metadata.name: n.metadata.labels.get("kops.k8s.io/instancegroup") for n in production["core"].list_node().items}
    web_nodes = sorted(p.spec.node_name for p in production["core"].list_namespaced_pod("default", label_selector="app=web").items)
    emulator.warm()
    vars_file = twin_vars(emulator, kops_dns, str(tmp_path / "twin-vars.yml"))

    proc, report = rehearse(production, tmp_path, vars_file, PROD)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]  # the change fails on the twin: the budget
    assert report["imported"] == {"budgets": 1, "pods": 2}, report["imported"]
    # the budget blocks, on the production nodes that run its pods (the names a person knows)
    [blocking] = report["blocking"]
    assert blocking["budget"] == "default/web"
    assert sorted(p.split(" on ")[1] for p in blocking["pods"]) == web_nodes, (blocking, web_nodes)
    assert "PodDisruptionBudgets allow no disruption" in report["failed"]["msg"] and "default/web" in report["failed"]["msg"]
    # the roll order kops would take: the control plane, then the workers, each with its live node count
    order = [(g["name"], g["role"], g["nodes"]) for g in report["roll_order"]]
    assert order == [("control-plane-us-east-1a", "ControlPlane", 1), ("nodes-us-east-1a", "Node", 1), ("nodes-us-east-1b", "Node", 1)], order
    assert report["expected_roll_total_seconds"] == 60  # 3 nodes x (kops' 15 s interval + 5 s post-drain delay)
    assert report["writes"] == []  # the pre-flight refused before anything was written
    assert {"field": "state store", "source": STORE, "twin": "s3://twin-" + BUCKET} in report["mapped"]
    assert "blocked by budget default/web" in proc.stdout

    # the twin: the same groups and sizes as production, the budget and its pods on the twin's nodes
    twin_core = kube_world.core(PROD)
    twin_nodes = {n.metadata.name: n.metadata.labels.get("kops.k8s.io/instancegroup") for n in twin_core.list_node().items}
    assert sorted(twin_nodes.values()) == sorted(live_nodes.values())
    pods = twin_core.list_namespaced_pod("default", label_selector="app=web").items
    assert sorted(twin_nodes[p.spec.node_name] for p in pods) == sorted(live_nodes[n] for n in web_nodes)
    twin_store = emulator.client("s3").list_objects_v2(Bucket="twin-" + BUCKET, Prefix=PROD + "/instancegroup/")
    assert len(twin_store.get("Contents", [])) == 3

    # production: nothing written, no lock, every request a read, none refused
    assert prod.snapshot() == before, prod.snapshot_diff(before, prod.snapshot())
    keys = [o["Key"] for o in prod.client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert not [k for k in keys if "lock" in k], keys
    requests = prod.iam_authorized_requests()
    assert requests and {r["action"] for r in requests} <= {"s3:GetObject", "s3:ListBucket"}, requests
    assert prod.iam_refusals() == []


SCALE_UP = [
    {
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/kopsible.kops.kops": "{{ kopsible_defaults }}"},
        "tasks": [
            {
                "name": "Scale nodes-us-east-1a up",
                "kopsible.kops.kops_instancegroup": {"cluster": "{{ cluster_name }}", "name": "nodes-us-east-1a", "min_size": 2, "max_size": 3, "apply": True},
            }
        ],
    }
]


def test_a_scale_up_rehearsed_says_what_it_would_write_and_plan(production, emulator, kops_dns, kube_world, tmp_path):
    prod = production["emulator"]
    before = prod.snapshot()
    emulator.warm()
    vars_file = twin_vars(emulator, kops_dns, str(tmp_path / "twin-vars.yml"))
    proc, report = rehearse(production, tmp_path, vars_file, PROD, playbook=SCALE_UP)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert report["failed"] is None
    assert report["writes"] == [
        {"object": "InstanceGroup nodes-us-east-1a", "path": "spec.maxSize", "before": 1, "after": 3},
        {"object": "InstanceGroup nodes-us-east-1a", "path": "spec.minSize", "before": 1, "after": 2},
    ]
    assert any("AutoscalingGroup/nodes-us-east-1a.%s" % PROD in line and "MaxSize" in line for line in report["cloud_plan"]), report["cloud_plan"]
    group = emulator.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=["nodes-us-east-1a." + PROD])["AutoScalingGroups"][0]
    assert (group["MinSize"], group["MaxSize"]) == (2, 3)  # applied in the twin
    assert prod.snapshot() == before, prod.snapshot_diff(before, prod.snapshot())


def test_a_spec_the_local_world_cannot_host_is_named_and_nothing_is_written(production, emulator, kops_dns, tmp_path):
    before = emulator.snapshot()
    vars_file = twin_vars(emulator, kops_dns, str(tmp_path / "twin-vars.yml"))
    proc, report = rehearse(production, tmp_path, vars_file, "shared.k8s.local", kubeconfig=False)
    assert proc.returncode == 2 and report is None, proc.stdout + proc.stderr
    assert "Cluster.spec.networkID" in proc.stderr and "an existing VPC of the source account" in proc.stderr, proc.stderr
    assert "nothing was written" in proc.stderr
    assert emulator.snapshot() == before  # the twin's world was not touched either
