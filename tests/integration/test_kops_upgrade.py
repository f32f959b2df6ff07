"""kops_cluster upgrade: true, i.e. ``kops upgrade cluster`` from a channel, with the real kops against the
emulator: check mode lists the actions and the cloud plan and writes nothing; the real run stores them and
the next apply puts the channel's new image on the launch templates; the re-run is a no-op."""

import pytest

from conftest import CLUSTER

pytestmark = pytest.mark.kops
OLD_IMAGE = "099720109477/ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20260218"
NEW_IMAGE = "099720109477/ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20261101"
NEW_AMI = "ami-0a1b2c3d4e5f60003"  # tools/emulator_amis.json

# A channel in kops' format (channels/stable of k8s.io/kops): versions recommended per minor, images per
# Kubernetes range.
CHANNEL = (
    """spec:
  images:
  - name: %s
    providerID: aws
    architectureID: amd64
    kubernetesVersion: ">=1.34.0"
  kubernetesVersions:
  - range: ">=1.35.0"
    recommendedVersion: 1.35.2
    requiredVersion: 1.35.0
  - range: ">=1.34.0"
    recommendedVersion: 1.34.3
    requiredVersion: 1.34.0
"""
    % NEW_IMAGE
)


def test_upgrade_from_channel_check_mode_apply_and_noop(kops_world, kplay, tmp_path):
    channel = tmp_path / "channel.yaml"
    channel.write_text(CHANNEL)
    options = kops_world.cluster_options(channel="file://%s" % channel, image=OLD_IMAGE, node_count=1)
    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": dict(options, apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    groups = sorted(g["name"] for g in created["instance_groups"])

    store, versions = kops_world.store(), kops_world.store_versions()
    task = {"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "upgrade": True, "apply": True}}
    preview = kplay([task], check=True, diff=True).result("u")
    assert not preview.get("failed"), preview.get("msg")
    assert preview["changed"] is True
    # kops proposes the next minor version's recommended patch (cmd/kops/upgrade_cluster.go) and the channel image
    assert {(a["item"], a["property"], a["old"], a["new"]) for a in preview["upgrade"]} == (
        {("Cluster", "KubernetesVersion", "1.34.1", "1.35.2")} | {("InstanceGroup/" + g, "Image", OLD_IMAGE, NEW_IMAGE) for g in groups}
    )
    assert {"path": "spec.kubernetesVersion", "before": "1.34.1", "after": "1.35.2"} in preview["changes"]
    image_changes = [m for m in preview["plan"]["modify"] if m["type"] == "LaunchTemplate"]
    assert len(image_changes) == len(groups)
    assert all(m["changes"]["ImageID"]["new"] == NEW_IMAGE for m in image_changes), image_changes
    assert kops_world.store() == store and kops_world.store_versions() == versions

    done = kplay([task]).result("u")
    assert not done.get("failed"), done.get("msg")
    assert done["changed"] is True and done["upgrade"] == preview["upgrade"]
    assert done["cluster"]["kubernetes_version"] == "1.35.2"
    s3 = kops_world.emulator.client("s3")
    for group in groups:  # the state store's InstanceGroup objects, as kops wrote them
        body = s3.get_object(Bucket="kopsible-state", Key="%s/instancegroup/%s" % (CLUSTER, group))["Body"].read().decode()
        assert "image: %s" % NEW_IMAGE in body
    ec2 = kops_world.emulator.client("ec2")
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        latest = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"])
        assert latest["LaunchTemplateVersions"][0]["LaunchTemplateData"]["ImageId"] == NEW_AMI

    again = kplay([task]).result("u")
    assert not again.get("failed"), again.get("msg")
    assert again["changed"] is False and again["upgrade"] == []


def test_kops_warnings_reach_the_result(kops_world, kplay, tmp_path):
    """Issue 16 item 10: kops' own warnings reach the module's warnings: `kops upgrade cluster` on a cluster newer than
    the channel recommends (klog W line, cmd/kops/upgrade_cluster.go:207), each once though kops is asked twice;
    variant: rolling_update's plain stderr lines when the Kubernetes API cannot be reached (rolling-update_cluster.go:268)."""
    channel = tmp_path / "channel.yaml"
    channel.write_text(CHANNEL)
    options = kops_world.cluster_options(
        channel="file://%s" % channel, kubernetes_version="1.35.4", node_count=1, apply=True, target="terraform", out=str(tmp_path / "tf")
    )  # the CA, no cloud
    created = kplay([{"name": "c", "kopsible.kops.kops_cluster": options}]).result("c")
    assert not created.get("failed"), created.get("msg")

    upgraded = kplay([{"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "upgrade": True}}]).result("u")
    assert not upgraded.get("failed"), upgraded.get("msg")
    assert upgraded["changed"] is False and upgraded["upgrade"] == []
    assert upgraded["warnings"] == ['kops upgrade cluster: cluster version "1.35.4" is greater than the desired version "1.35.2"']

    roll = kplay([{"name": "r", "kopsible.kops.rolling_update": {"cluster": CLUSTER}, "ignore_errors": True}]).result("r")
    assert roll["failed"] is True, roll
    assert (
        "kops rolling-update cluster: Unable to reach the kubernetes API. Use --cloudonly to do a rolling-update without confirming progress with the k8s API"
    ) in roll["warnings"], roll.get("warnings")
    assert not any(w.startswith("kops rolling-update cluster: Error") for w in roll["warnings"])
