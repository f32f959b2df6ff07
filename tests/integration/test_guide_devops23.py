"""examples/devops23: the kOps guide 001 run step by step as a user runs it (ansible-playbook with the example's
vars file, one ``devops23_steps`` entry at a time), with the real kops on the emulator and the cluster's real
control plane (kube world): each step's values are read back from IAM, S3, the state store, Auto Scaling, EC2,
ELB and the Kubernetes API. One cluster for the file, one test (the steps depend on each other)."""

import json
import os

import pytest
import yaml

from conftest import ROOT, UBUNTU_AMI
from harness.kops_env import module_options
from harness.playbook import run_playbook

pytestmark = pytest.mark.kops

REGION = "us-east-2"
SUFFIX = "1700000000"
BUCKET = "devops23-" + SUFFIX
CLUSTER = "devops23.k8s.local"
# A channel in kops' format: 1.34 recommends 1.34.1, 1.35 recommends 1.35.0 (kops upgrade cluster proposes the next
# minor version's recommendation, cmd/kops/upgrade_cluster.go).
CHANNEL = """spec:
  kubernetesVersions:
  - range: ">=1.35.0"
    recommendedVersion: 1.35.0
    requiredVersion: 1.35.0
  - range: ">=1.34.0"
    recommendedVersion: 1.34.1
    requiredVersion: 1.34.0
  - range: ">=1.33.0"
    recommendedVersion: 1.33.0
    requiredVersion: 1.33.0
"""
FAST_ROLL = {
    "control_plane_interval": "2s",
    "node_interval": "2s",
    "validate_count": 1,
    "validation_timeout": "10m",
    "drain_timeout": "5m",
    "post_drain_delay": "1s",
}


def example():
    with open(os.path.join(ROOT, "examples", "devops23", "vars.yml")) as handle:
        return yaml.safe_load(handle)


class Guide:
    def __init__(self, emulator, dns, ssh_public_key, tmp_path):
        self.emulator, self.dns = emulator, dns
        channel = tmp_path / "channel.yaml"
        channel.write_text(CHANNEL)
        self.kubeconfig = str(tmp_path / "config" / "kubecfg.yaml")
        self.credentials = str(tmp_path / "kops-creds")
        self.extra = dict(example(), **module_options(dns))
        self.extra.update(
            aws_endpoint_url=emulator.url,
            devops23_suffix=SUFFIX,
            cluster_ssh_public_key=ssh_public_key,
            cluster_image=UBUNTU_AMI,
            cluster_channel="file://%s" % channel,
            devops23_validation_timeout="5m",
            devops23_roll=FAST_ROLL,
            devops23_kubeconfig=self.kubeconfig,
            devops23_credentials_file=self.credentials,
        )

    def run(self, steps, ok=True, **extra):
        run = run_playbook(
            playbook=os.path.join(ROOT, "examples", "devops23", "guide.yml"),
            emulator=self.emulator,
            extra_vars=dict(self.extra, devops23_steps=steps, **extra),
            resolv_conf=self.dns.resolv_conf,
        )
        if ok:
            assert run.rc == 0, [(n, r.get("msg")) for n, r in run.results if r.get("failed")] or run.stderr[-2000:]
        return run

    def client(self, service):
        return self.emulator.client(service, REGION)

    def stored(self, key):
        return yaml.safe_load(self.client("s3").get_object(Bucket=BUCKET, Key="%s/%s" % (CLUSTER, key))["Body"].read())

    def groups(self):
        """``{group: (min, max, desired, sorted instance ids)}`` of the cluster's Auto Scaling groups."""
        found = {}
        for group in self.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]:
            name = group["AutoScalingGroupName"].split(".")[0]
            found[name] = (group["MinSize"], group["MaxSize"], group["DesiredCapacity"], sorted(i["InstanceId"] for i in group["Instances"]))
        return found

    def instance_types(self):
        ec2 = self.client("ec2")
        return {
            i["InstanceType"]
            for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["running"]}])["Reservations"]
            for i in r["Instances"]
        }


def result(run, name):
    return next(r for n, r in run.results if n.endswith(name) and not r.get("skipped"))


def kubelets(kube_world):
    import kubernetes

    nodes = kubernetes.client.CoreV1Api(kube_world.api_client(CLUSTER)).list_node().items
    return sorted(n.status.node_info.kubelet_version for n in nodes if not n.spec.unschedulable)


def test_guide_001_step_by_step(emulator, kops_dns, ssh_public_key, kube_world, tmp_path):
    guide = Guide(emulator, kops_dns, ssh_public_key, tmp_path)
    emulator.warm(REGION)

    # IAM: group kops with the policies, user kops in it, one access key kept in the credentials file only.
    run = guide.run(["iam"])
    iam = guide.client("iam")
    policies = sorted(p["PolicyArn"] for p in iam.list_attached_group_policies(GroupName="kops")["AttachedPolicies"])
    assert policies == sorted("arn:aws:iam::aws:policy/" + p for p in example()["kops_iam_managed_policies"])
    assert [u["UserName"] for u in iam.get_group(GroupName="kops")["Users"]] == ["kops"]
    with open(guide.credentials) as handle:
        credentials = json.load(handle)
    assert [k["AccessKeyId"] for k in iam.list_access_keys(UserName="kops")["AccessKeyMetadata"]] == [credentials["access_key_id"]]
    assert credentials["secret_access_key"] not in run.stdout + run.stderr
    assert os.stat(guide.credentials).st_mode & 0o777 == 0o600

    # State store: devops23-<suffix> in us-east-2, versioned and encrypted.
    guide.run(["state_store"])
    s3 = guide.client("s3")
    assert s3.get_bucket_location(Bucket=BUCKET)["LocationConstraint"] == REGION
    assert s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
    rules = s3.get_bucket_encryption(Bucket=BUCKET)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"

    # The guide's --kubernetes-version v1.14.8: refused before anything is written, naming kops' oldest version.
    before = emulator.snapshot()
    old = guide.run(["create"], ok=False, cluster_kubernetes_version="v1.14.8")
    assert old.rc != 0
    failed = result(old, "Create, apply and validate the cluster")
    assert failed["msg"].startswith("kubernetes_version: v1.14.8 is older than 1.31.0, the oldest Kubernetes version kops v1.36.2 supports"), failed["msg"]
    assert "kops_invocations" not in failed
    assert emulator.snapshot() == before

    # Create: 3 control planes in us-east-2a/b/c, 1 node, t2.small, kubenet, validated on the real control plane.
    created = result(guide.run(["create"]), "Create, apply and validate the cluster")
    assert created["validation"]["ok"] is True and len(created["validation"]["nodes"]) == 4
    config = guide.stored("config")
    assert config["spec"]["networking"] == {"kubenet": {}} and config["spec"]["kubernetesVersion"] == "1.33.0"
    assert sorted(s["zone"] for s in config["spec"]["subnets"]) == ["us-east-2a", "us-east-2b", "us-east-2c"]
    groups = guide.groups()
    assert {g: v[:3] for g, v in groups.items() if v[2]} == {
        "control-plane-us-east-2a": (1, 1, 1),
        "control-plane-us-east-2b": (1, 1, 1),
        "control-plane-us-east-2c": (1, 1, 1),
        "nodes-us-east-2a": (1, 1, 1),
    }
    assert guide.instance_types() == {"t2.small"}
    assert kubelets(kube_world) == ["v1.33.0"] * 4

    # Scale (kops edit ig nodes): nodes-us-east-2a 1 -> 2, applied, validated with 5 nodes.
    run = guide.run(["scale"])
    scaled = result(run, "Scale the node group")
    assert scaled["changed"] is True
    assert guide.groups()["nodes-us-east-2a"][:3] == (2, 2, 2) and len(guide.groups()["nodes-us-east-2a"][3]) == 2
    assert guide.stored("instancegroup/nodes-us-east-2a")["spec"]["minSize"] == 2
    assert len(result(run, "Validate the scaled cluster")["validation"]["nodes"]) == 5

    # Manual upgrade 1.33.0 -> 1.34.1 and a rolling update in kops' order with real drains.
    before_ids = {g: v[3] for g, v in guide.groups().items() if v[2]}
    run = guide.run(["upgrade_manual"])
    assert guide.stored("config")["spec"]["kubernetesVersion"] == "1.34.1"
    roll = result(run, "Manual upgrade - rolling update")
    assert [g["name"] for g in roll["rolled"]] == ["control-plane-us-east-2a", "control-plane-us-east-2b", "control-plane-us-east-2c", "nodes-us-east-2a"]
    after_ids = {g: v[3] for g, v in guide.groups().items() if v[2]}
    assert all(not set(before_ids[g]) & set(after_ids[g]) for g in before_ids), (before_ids, after_ids)
    assert kubelets(kube_world) == ["v1.34.1"] * 5

    # Automatic upgrade (kops upgrade cluster --yes): the channel's recommendation for the next minor, rolled.
    run = guide.run(["upgrade_auto"])
    auto = result(run, "Automatic upgrade - what the channel recommends, applied")
    assert ("Cluster", "KubernetesVersion", "1.34.1", "1.35.0") in {(a["item"], a["property"], a["old"], a["new"]) for a in auto["upgrade"]}
    assert guide.stored("config")["spec"]["kubernetesVersion"] == "1.35.0"
    assert all(g["done"] for g in result(run, "Automatic upgrade - rolling update")["rolled"])
    assert kubelets(kube_world) == ["v1.35.0"] * 5

    # kops export kubecfg: the API server is the API load balancer's DNS name; the credential's expiry is given.
    run = guide.run(["kubeconfig"])
    exported = result(run, "Export the kubeconfig (admin credential)")
    assert exported["kubeconfig"]["admin_expires"]
    with open(guide.kubeconfig) as handle:
        kubeconfig = yaml.safe_load(handle)
    balancers = [lb for lb in guide.client("elbv2").describe_load_balancers()["LoadBalancers"] if lb["LoadBalancerName"].startswith("api-devops23-k8s-local-")]
    assert len(balancers) == 1
    assert [c["cluster"]["server"] for c in kubeconfig["clusters"] if c["name"] == CLUSTER] == ["https://" + balancers[0]["DNSName"]]

    # Delete the cluster and the bucket, then the IAM clean-up: nothing of the guide is left.
    run = guide.run(["delete", "iam_cleanup"])
    assert result(run, "Delete the cluster")["changed"] is True
    assert guide.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []
    assert BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert iam.list_users()["Users"] == [] and iam.list_groups()["Groups"] == []
