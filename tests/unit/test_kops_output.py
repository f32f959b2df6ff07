"""kops output parsers, checked against real kops v1.36.2 output (tests/unit/fixtures/kops-1.36.2/)."""

import json
import os

import pytest

from ansible_collections.kopsible.kops.plugins.module_utils._kops import output as kops_output
from ansible_collections.kopsible.kops.plugins.module_utils._kops import update_plan

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "kops-1.36.2")
CLUSTER = "mycluster01.kopsclustertest.example.org"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def by_resource(items):
    return {item["resource"]: item for item in items}


# --------------------------------------------------------------------------------------------
# parse_update_plan / summarize_plan
# --------------------------------------------------------------------------------------------


def test_plan_scale_is_exactly_one_asg_modification():
    plan = update_plan.parse_update_plan(fixture("update_plan_scale.txt"))
    assert plan == {
        "create": [],
        "modify": [
            {
                "resource": "AutoscalingGroup/nodes-us-east-1a." + CLUSTER,
                "type": "AutoscalingGroup",
                "name": "nodes-us-east-1a." + CLUSTER,
                "changes": {"MaxSize": {"old": "1", "new": "3"}, "MinSize": {"old": "1", "new": "3"}},
            }
        ],
        "delete": [],
        "prune": [],
        "ignored": [],
        "changed": True,
    }


def test_plan_no_changes():
    plan = update_plan.parse_update_plan(fixture("update_no_changes.txt"))
    assert plan == {"create": [], "modify": [], "delete": [], "prune": [], "ignored": [], "changed": False}
    assert plan == update_plan.empty_plan()


def test_plan_empty_output_is_empty_plan():
    assert update_plan.parse_update_plan("") == update_plan.empty_plan()


def test_create_preview_lists_every_resource_to_create():
    text = fixture("create_cluster_preview.txt")
    plan = update_plan.parse_update_plan(text)
    assert plan["changed"] is True
    assert plan["modify"] == [] and plan["delete"] == [] and plan["prune"] == []
    # One item per "  Type/name" header line of the "Will create resources:" section.
    headers = [line.strip() for line in text.splitlines() if line.startswith("  ") and not line.startswith("  \t") and "/" in line]
    assert len(headers) == 129
    assert [item["resource"] for item in plan["create"]] == headers
    counts = {}
    for item in plan["create"]:
        counts[item["type"]] = counts.get(item["type"], 0) + 1
    assert counts["AutoscalingGroup"] == 6
    assert counts["LaunchTemplate"] == 6
    assert counts["Secret"] == 9
    assert counts["ManagedFile"] == 18
    assert counts["SecurityGroupRule"] == 17
    assert counts["VPC"] == 1


def test_create_preview_field_values():
    items = by_resource(update_plan.parse_update_plan(fixture("create_cluster_preview.txt"))["create"])

    asg_a = items["AutoscalingGroup/nodes-us-east-1a." + CLUSTER]
    assert asg_a["type"] == "AutoscalingGroup" and asg_a["name"] == "nodes-us-east-1a." + CLUSTER
    assert asg_a["fields"]["MinSize"] == "1" and asg_a["fields"]["MaxSize"] == "1"
    assert asg_a["fields"]["LaunchTemplate"] == "name:nodes-us-east-1a." + CLUSTER
    assert asg_a["fields"]["Subnets"] == "[name:us-east-1a.%s]" % CLUSTER
    assert asg_a["fields"]["LoadBalancers"] == "[]"
    assert "changes" not in asg_a

    asg_c = items["AutoscalingGroup/nodes-us-east-1c." + CLUSTER]
    assert asg_c["fields"]["MinSize"] == "0" and asg_c["fields"]["MaxSize"] == "0"
    assert sorted(asg_c["fields"]) == [
        "Granularity",
        "InstanceProtection",
        "LaunchTemplate",
        "LoadBalancers",
        "MaxInstanceLifetime",
        "MaxSize",
        "Metrics",
        "MinSize",
        "Subnets",
        "SuspendProcesses",
        "Tags",
        "TargetGroups",
    ]

    cp = items["AutoscalingGroup/control-plane-us-east-1b.masters." + CLUSTER]
    assert cp["fields"]["MinSize"] == "1"
    assert cp["fields"]["Subnets"] == "[name:us-east-1b.%s]" % CLUSTER

    lt = items["LaunchTemplate/nodes-us-east-1a." + CLUSTER]
    assert lt["fields"]["InstanceType"] == "t3.medium"
    assert lt["fields"]["ImageID"] == "ami-0a1b2c3d4e5f60001"
    assert lt["fields"]["RootVolumeSize"] == "128"
    # A field name of 20+ characters is followed by the tab directly.
    assert lt["fields"]["HTTPPutResponseHopLimit"] == "1"
    assert lt["fields"]["RootVolumeThroughput"] == "125"
    # Empty values stay empty strings.
    assert lt["fields"]["CPUCredits"] == "" and lt["fields"]["SpotPrice"] == ""
    assert items["LaunchTemplate/control-plane-us-east-1a.masters." + CLUSTER]["fields"]["RootVolumeSize"] == "64"

    vpc = items["VPC/" + CLUSTER]
    assert vpc["fields"]["CIDR"] == "172.20.0.0/16"
    assert vpc["fields"]["EnableDNSHostnames"] == "true"

    subnet = items["Subnet/us-east-1b." + CLUSTER]
    assert subnet["fields"]["CIDR"] == "172.20.64.0/18"
    assert subnet["fields"]["AvailabilityZone"] == "us-east-1b"

    volume = items["EBSVolume/a.etcd-main." + CLUSTER]
    assert volume["fields"]["SizeGB"] == "20" and volume["fields"]["VolumeType"] == "gp3"

    keypair = items["Keypair/kubernetes-ca"]
    assert keypair["fields"] == {"Subject": "cn=kubernetes-ca", "Issuer": "", "Type": "ca", "LegacyFormat": "false"}

    # A name with slashes is split only at the first one.
    route = items["Route/0.0.0.0/0"]
    assert route["type"] == "Route" and route["name"] == "0.0.0.0/0"
    assert route["fields"]["CIDR"] == "0.0.0.0/0"

    # Items without fields.
    assert items["Secret/admin"]["fields"] == {}
    assert items["Secret/system:scheduler"]["fields"] == {}

    rule = items["EventBridgeRule/%s-ASGLifecycle" % CLUSTER]
    assert rule["fields"]["EventPattern"] == ('{"source":["aws.autoscaling"],"detail-type":["EC2 Instance-terminate Lifecycle Action"]}')


def test_create_preview_ignores_text_after_the_plan():
    plan = update_plan.parse_update_plan(fixture("create_cluster_preview.txt"))
    resources = [item["resource"] for item in plan["create"]]
    assert resources[-1] == "WarmPool/nodes-us-east-1c." + CLUSTER
    assert not any("Suggestions" in r or "kops" in r.split("/")[0] for r in resources)


def test_upgrade_plan_multiline_diffs():
    plan = update_plan.parse_update_plan(fixture("update_plan_upgrade.txt"))
    assert plan["changed"] is True
    assert plan["create"] == [] and plan["delete"] == [] and plan["prune"] == []
    items = by_resource(plan["modify"])
    assert len(plan["modify"]) == 16

    launch_templates = sorted(r for r in items if r.startswith("LaunchTemplate/"))
    assert launch_templates == ["LaunchTemplate/control-plane-us-east-1%s.masters.%s" % (z, CLUSTER) for z in "abc"] + [
        "LaunchTemplate/nodes-us-east-1%s.%s" % (z, CLUSTER) for z in "abc"
    ]

    lt = items["LaunchTemplate/control-plane-us-east-1a.masters." + CLUSTER]
    assert list(lt["changes"]) == ["UserData"]
    diff = lt["changes"]["UserData"]["diff"]
    assert "old" not in lt["changes"]["UserData"]
    assert diff[0] == "..."
    assert "  InstanceGroupName: control-plane-us-east-1a" in diff
    plus = diff.index("+ NodeupConfigHash: GQUh2Gemjp6x1kEl8xiT8AkLCclytteN4nfhwGEueu0=")
    assert diff[plus + 1] == "- NodeupConfigHash: BgsEYvIRBqd4+DEmG3fZ8miqVgReGHe1JOWo4kv5dlY="
    assert "  __EOF_KUBE_ENV" in diff and diff[-1] == "..."

    addon = items["AddonManifest/%s-addons-aws-ebs-csi-driver.addons.k8s.io-k8s-1.17" % CLUSTER]
    assert addon["changes"]["Contents"]["diff"][:4] == ["...", "  spec:", "    attachRequired: true", "+   nodeAllocatableUpdatePeriodSeconds: 10"]

    spec = items["ManagedFile/cluster-completed.spec"]["changes"]["Contents"]["diff"]
    assert "+   kubernetesVersion: 1.35.0" in spec
    assert "-   kubernetesVersion: 1.34.1" in spec
    assert "+     image: registry.k8s.io/kube-apiserver:v1.35.0" in spec

    # Single-line changes in the same plan keep old/new.
    asg = items["AutoscalingGroup/nodes-us-east-1a." + CLUSTER]
    assert asg["changes"] == {"MaxSize": {"old": "1", "new": "3"}, "MinSize": {"old": "1", "new": "3"}}


def test_plan_deletion_sections():
    # Format of upup/pkg/fi/dryrun_target.go (kops v1.36.2): "  %-20s %s".
    text = (
        "Will modify resources:\n"
        "  AutoscalingGroup/nodes\n"
        "  \tMaxSize             \t 2 -> 3\n"
        "\n"
        "Items will be deleted only when the --prune flag is specified:\n"
        "  SecurityGroupRule    sg-1:port=22\n"
        "\n"
        "Items will be deleted during update:\n"
        "  LoadBalancer         api-old\n"
        "\n"
        "Must specify --yes to apply changes\n"
    )
    plan = update_plan.parse_update_plan(text)
    assert plan["prune"] == [{"resource": "SecurityGroupRule", "name": "sg-1:port=22"}]
    assert plan["delete"] == [{"resource": "LoadBalancer", "name": "api-old"}]
    assert plan["modify"][0]["changes"] == {"MaxSize": {"old": "2", "new": "3"}}
    assert plan["changed"] is True
    assert update_plan.summarize_plan(plan) == [
        "modify AutoscalingGroup/nodes: MaxSize 2 -> 3",
        "delete LoadBalancer api-old",
        "prune SecurityGroupRule sg-1:port=22 (deleted only with prune: true)",
    ]


def test_plan_prune_only_is_not_a_change():
    # --yes without --prune would not delete these, so applying would change nothing.
    text = "Items will be deleted only when the --prune flag is specified:\n  SecurityGroupRule    sg-1:port=22\n\nMust specify --yes to apply changes\n"
    plan = update_plan.parse_update_plan(text)
    assert plan["prune"] == [{"resource": "SecurityGroupRule", "name": "sg-1:port=22"}]
    assert plan["changed"] is False


def test_summarize_scale_plan():
    plan = update_plan.parse_update_plan(fixture("update_plan_scale.txt"))
    assert update_plan.summarize_plan(plan) == ["modify AutoscalingGroup/nodes-us-east-1a.%s: MaxSize 1 -> 3, MinSize 1 -> 3" % CLUSTER]


def test_summarize_upgrade_plan():
    lines = update_plan.summarize_plan(update_plan.parse_update_plan(fixture("update_plan_upgrade.txt")))
    assert len(lines) == 16
    assert lines[0] == ("modify AddonManifest/%s-addons-aws-ebs-csi-driver.addons.k8s.io-k8s-1.17: Contents (changed)" % CLUSTER)
    assert lines[1] == "modify AutoscalingGroup/nodes-us-east-1a.%s: MaxSize 1 -> 3, MinSize 1 -> 3" % CLUSTER
    assert "modify LaunchTemplate/nodes-us-east-1c.%s: UserData (changed)" % CLUSTER in lines


def test_summarize_create_and_empty():
    plan = update_plan.parse_update_plan(fixture("create_cluster_preview.txt"))
    lines = update_plan.summarize_plan(plan)
    assert len(lines) == 129
    assert lines[0] == "create AddonManifest/%s-addons-aws-cloud-controller.addons.k8s.io-k8s-1.18" % CLUSTER
    assert "create VPC/" + CLUSTER in lines
    assert update_plan.summarize_plan(update_plan.empty_plan()) == []


# --------------------------------------------------------------------------------------------
# parse_table / parse_rolling_update
# --------------------------------------------------------------------------------------------


def ig_row(name, role, minimum, maximum, zone):
    return {"NAME": name, "ROLE": role, "MACHINETYPE": "t3.medium", "MIN": minimum, "MAX": maximum, "ZONES": zone}


def test_table_instance_groups():
    rows = kops_output.parse_table(fixture("get_ig_table.txt"))
    assert rows == [
        ig_row("control-plane-us-east-1a", "ControlPlane", "1", "1", "us-east-1a"),
        ig_row("control-plane-us-east-1b", "ControlPlane", "1", "1", "us-east-1b"),
        ig_row("control-plane-us-east-1c", "ControlPlane", "1", "1", "us-east-1c"),
        ig_row("nodes-us-east-1a", "Node", "1", "1", "us-east-1a"),
        ig_row("nodes-us-east-1b", "Node", "1", "1", "us-east-1b"),
        ig_row("nodes-us-east-1c", "Node", "0", "0", "us-east-1c"),
    ]


def test_table_empty_cells():
    # Go's tabwriter pads an empty cell with tabs only; a missing last cell leaves the line short.
    text = "NAME\tROLE\tMACHINETYPE\tZONES\nig-a\t\tt3.small\tus-east-1a\nig-b\tNode\t\t\nig-c\tNode\n"
    assert kops_output.parse_table(text) == [
        {"NAME": "ig-a", "ROLE": "", "MACHINETYPE": "t3.small", "ZONES": "us-east-1a"},
        {"NAME": "ig-b", "ROLE": "Node", "MACHINETYPE": "", "ZONES": ""},
        {"NAME": "ig-c", "ROLE": "Node", "MACHINETYPE": "", "ZONES": ""},
    ]


def test_table_stops_at_blank_line_and_handles_empty_input():
    rows = kops_output.parse_table(fixture("rolling_update_needs.txt"))
    assert len(rows) == 6
    assert all("Must specify" not in v for row in rows for v in row.values())
    assert kops_output.parse_table("") == []
    assert kops_output.parse_table("\n\n") == []


def group(name, status, need_update, ready, minimum, target, maximum):
    return {"name": name, "status": status, "need_update": need_update, "ready": ready, "min": minimum, "target": target, "max": maximum}


NEEDS = [
    group("control-plane-us-east-1a", "NeedsUpdate", 1, 0, 1, 1, 1),
    group("control-plane-us-east-1b", "NeedsUpdate", 1, 0, 1, 1, 1),
    group("control-plane-us-east-1c", "NeedsUpdate", 1, 0, 1, 1, 1),
    group("nodes-us-east-1a", "NeedsUpdate", 1, 2, 3, 3, 3),
    group("nodes-us-east-1b", "NeedsUpdate", 1, 0, 1, 1, 1),
    group("nodes-us-east-1c", "Ready", 0, 0, 0, 0, 0),
]


def test_rolling_update_needs():
    assert kops_output.parse_rolling_update(fixture("rolling_update_needs.txt")) == {"groups": NEEDS, "required": True}


def test_rolling_update_yes():
    assert kops_output.parse_rolling_update(fixture("rolling_update_yes.txt")) == {"groups": NEEDS, "required": True}


def test_rolling_update_none():
    result = kops_output.parse_rolling_update(fixture("rolling_update_none.txt"))
    assert result == {
        "required": False,
        "groups": [
            group("control-plane-us-east-1a", "Ready", 0, 1, 1, 1, 1),
            group("control-plane-us-east-1b", "Ready", 0, 1, 1, 1, 1),
            group("control-plane-us-east-1c", "Ready", 0, 1, 1, 1, 1),
            group("nodes-us-east-1a", "Ready", 0, 1, 1, 1, 1),
            group("nodes-us-east-1b", "Ready", 0, 1, 1, 1, 1),
            group("nodes-us-east-1c", "Ready", 0, 0, 0, 0, 0),
        ],
    }


def test_rolling_update_nodes_column():
    text = "NAME\tSTATUS\t\tNEEDUPDATE\tREADY\tMIN\tTARGET\tMAX\tNODES\nnodes\tNeedsUpdate\t2\t\t1\t3\t3\t3\t3\n"
    result = kops_output.parse_rolling_update(text)
    assert result == {
        "required": True,
        "groups": [{"name": "nodes", "status": "NeedsUpdate", "need_update": 2, "ready": 1, "min": 3, "target": 3, "max": 3, "nodes": 3}],
    }


# --------------------------------------------------------------------------------------------
# parse_delete_report
# --------------------------------------------------------------------------------------------


def test_delete_preview():
    report = kops_output.parse_delete_report(fixture("delete_preview.txt"))
    assert report["deleted"] is False
    assert report["nothing_to_delete"] is False
    resources = report["resources"]
    assert len(resources) == 47
    assert resources[0] == {"type": "autoscaling-config", "name": "control-plane-us-east-1a.masters." + CLUSTER, "id": "lt-d211c01dff551c3d4"}
    assert resources[-1] == {"type": "vpc", "name": CLUSTER, "id": "vpc-847b9db402a2ffec4"}
    assert {"type": "keypair", "name": "kubernetes.%s-69:e9:e1:2a:54:65:1a:46:b7:ea:9c:34:f5:3f:5b:67" % CLUSTER, "id": "key-d2c898eba943fa49e"} in resources
    assert {
        "type": "route53-record",
        "name": "kops-controller.internal.%s." % CLUSTER,
        "id": "QSZZTXEH6T0STUAI9Z547L/A/kops-controller.internal.%s." % CLUSTER,
    } in resources
    assert {"type": "subnet", "name": "us-east-1c." + CLUSTER, "id": "subnet-b58f512840c7528d8"} in resources
    instances = [r["id"] for r in resources if r["type"] == "instance"]
    assert instances == [
        "i-a439dbab61bb1e651",
        "i-8c7e82fe169f6d2db",
        "i-ec32744e886912e32",
        "i-920dad414500f9245",
        "i-c456452ab1354babb",
        "i-fb147a353aeec4736",
        "i-5cd451c141b0967cb",
    ]
    assert all(r["type"] and r["name"] and r["id"] for r in resources)


def test_delete_yes():
    report = kops_output.parse_delete_report(fixture("delete_yes.txt"))
    assert report["deleted"] is True
    assert report["nothing_to_delete"] is False
    assert len(report["resources"]) == 47
    assert report["resources"][-1] == {"type": "vpc", "name": CLUSTER, "id": "vpc-847b9db402a2ffec4"}
    # The per-resource "type:id\tok" progress lines are not resources.
    assert not any(":" in r["type"] for r in report["resources"])


def test_delete_nothing():
    report = kops_output.parse_delete_report('No cloud resources to delete\n\nDeleted cluster: "a.example.org"\n')
    assert report == {"resources": [], "deleted": True, "nothing_to_delete": True}
    assert kops_output.parse_delete_report(fixture("delete_missing.txt")) == {"resources": [], "deleted": False, "nothing_to_delete": False}


# --------------------------------------------------------------------------------------------
# parse_get_json / parse_yaml_documents
# --------------------------------------------------------------------------------------------


def test_get_json_single_object_becomes_list():
    clusters = kops_output.parse_get_json(fixture("get_cluster.json"))
    assert isinstance(clusters, list) and len(clusters) == 1
    cluster = clusters[0]
    assert cluster["kind"] == "Cluster"
    assert cluster["metadata"]["name"] == CLUSTER
    assert cluster["spec"]["kubernetesVersion"] == "1.34.1"
    assert cluster["spec"]["configBase"] == "s3://kopsible-state/" + CLUSTER


def test_get_json_array():
    clusters = kops_output.parse_get_json(fixture("get_clusters.json"))
    assert [c["metadata"]["name"] for c in clusters] == [CLUSTER]
    assert clusters == json.loads(fixture("get_clusters.json"))
    assert clusters[0]["spec"]["networkCIDR"] == "172.20.0.0/16"


def test_yaml_documents():
    docs = kops_output.parse_yaml_documents(fixture("get_ig.yaml"))
    assert [d["metadata"]["name"] for d in docs] == [
        "control-plane-us-east-1a",
        "control-plane-us-east-1b",
        "control-plane-us-east-1c",
        "nodes-us-east-1a",
        "nodes-us-east-1b",
        "nodes-us-east-1c",
    ]
    assert all(d["kind"] == "InstanceGroup" and d["apiVersion"] == "kops.k8s.io/v1alpha2" for d in docs)
    assert [d["spec"]["role"] for d in docs] == ["Master"] * 3 + ["Node"] * 3
    assert docs[5]["spec"]["minSize"] == 0 and docs[5]["spec"]["maxSize"] == 0
    assert docs[0]["spec"]["subnets"] == ["us-east-1a"]
    assert docs[3]["metadata"]["labels"] == {"kops.k8s.io/cluster": CLUSTER}
    assert kops_output.parse_yaml_documents("---\n---\n") == []


# --------------------------------------------------------------------------------------------
# error_message
# --------------------------------------------------------------------------------------------


def test_error_message_from_real_stderr():
    assert kops_output.error_message(fixture("get_cluster_missing.stderr")) == 'cluster not found "nosuch.example.org"'
    assert kops_output.error_message(fixture("delete_missing.stderr")) == ('error reading cluster configuration: Cluster.kops.k8s.io "%s" not found' % CLUSTER)
    assert kops_output.error_message(fixture("rolling_update_needs_nodes.stderr")).startswith(
        'error listing nodes in cluster: Get "https://api.%s/api/v1/nodes"' % CLUSTER
    )
    # kops validate cluster -o json with no API to reach: nothing on stdout, the error on stderr
    assert fixture("validate_no_api.json") == ""
    assert kops_output.error_message(fixture("validate_no_api.stderr")).startswith(
        "validation failed: unexpected error during validation: unable to resolve Kubernetes cluster API URL dns: lookup api.%s" % CLUSTER
    )


def test_an_unattached_internet_gateway_is_explained():
    """kops v1.36.2's own line after a run killed between CreateInternetGateway and AttachInternetGateway (seen in
    test_interrupted_runs): kops' words kept, what to do added (awstasks/internetgateway.go CheckChanges)."""
    line = (
        "Error: error running tasks: deadline exceeded executing task InternetGateway/mycluster01.kopsclustertest.example.org. "
        "Example error: Field cannot be changed: VPC"
    )
    message = kops_output.error_message("I1202 01:40:00.000000   1 executor.go:1] x\n" + line + "\n")
    assert message.startswith(line[len("Error: ") :] + " (the cluster's Internet gateway exists but is not attached to its VPC")
    assert "aws ec2 attach-internet-gateway" in message
    # another task's CannotChangeField is kops' message alone
    other = "error running tasks: deadline exceeded executing task Subnet/a. Example error: Field cannot be changed: VPC"
    assert kops_output.error_message("Error: %s\n" % other) == other


def test_error_message_skips_klog_lines():
    assert kops_output.error_message("I1130 00:19:04.621661   15314 x.go:1] hi\nError: boom\n") == "boom"
    assert kops_output.error_message("Error: first\nW1130 00:19:04.621661   15314 x.go:1] later\n") == "first"


def test_error_message_without_error_line():
    stderr = "I1130 00:19:04.621661   15314 x.go:1] hi\nsomething went wrong\nW1130 00:19:05.000000   15314 y.go:2] warn\n"
    assert kops_output.error_message(stderr) == "something went wrong"
    assert kops_output.error_message("I1130 00:19:04.621661   15314 x.go:1] hi\nE1130 00:19:04.700000   15314 x.go:9] bad\n") == ""
    assert kops_output.error_message("") == ""


# --------------------------------------------------------------------------------------------
# parse_json_objects / parse_validate
# --------------------------------------------------------------------------------------------

NODE_CP_A = {"name": "i-0971c937674caacf5", "zone": "us-east-1a", "role": "control-plane", "hostname": "i-0971c937674caacf5", "status": "True"}
FAILURE = {
    "type": "InstanceGroup",
    "name": "nodes-us-east-1a",
    "message": 'InstanceGroup "nodes-us-east-1a" did not have enough nodes 0 vs 1',
    "instanceGroup": {"metadata": {"name": "nodes-us-east-1a"}},
}
# what parse_validate returns for it: the attached InstanceGroup object reduced to its name
PARSED = {
    "type": "InstanceGroup",
    "name": "nodes-us-east-1a",
    "message": 'InstanceGroup "nodes-us-east-1a" did not have enough nodes 0 vs 1',
    "instance_group": "nodes-us-east-1a",
}


def test_json_objects_concatenated():
    first, second = {"failures": [FAILURE]}, {"nodes": [NODE_CP_A]}
    assert kops_output.parse_json_objects(json.dumps(first) + json.dumps(second)) == [first, second]
    assert kops_output.parse_json_objects(" \n%s\n %s \n" % (json.dumps(first), json.dumps(second))) == [first, second]
    assert kops_output.parse_json_objects("{}[1, 2]3") == [{}, [1, 2], 3]
    assert kops_output.parse_json_objects("") == []
    assert kops_output.parse_json_objects("  \n") == []


def test_validate_success():
    result = kops_output.parse_validate(json.dumps({"nodes": [NODE_CP_A]}))
    assert result == {"failures": [], "nodes": [NODE_CP_A], "ok": True, "attempts": 1}


def test_validate_failure_keys_omitted():
    result = kops_output.parse_validate(json.dumps({"failures": [FAILURE]}))
    assert result == {"failures": [PARSED], "nodes": [], "ok": False, "attempts": 1}
    assert kops_output.parse_validate("{}") == {"failures": [], "nodes": [], "ok": True, "attempts": 1}


def test_validate_wait_keeps_last_attempt():
    # kops validate --wait -o json writes one object per attempt, with no separator.
    stdout = json.dumps({"failures": [FAILURE], "nodes": [NODE_CP_A]}) + json.dumps({"nodes": [NODE_CP_A]})
    assert kops_output.parse_validate(stdout) == {"failures": [], "nodes": [NODE_CP_A], "ok": True, "attempts": 2}
    stdout = json.dumps({"nodes": [NODE_CP_A]}) + json.dumps({"failures": [FAILURE]})
    assert kops_output.parse_validate(stdout) == {"failures": [PARSED], "nodes": [], "ok": False, "attempts": 2}


@pytest.mark.parametrize("stdout", ["", "   \n", fixture("validate_no_api.json"), "[]"])
def test_validate_without_object_raises(stdout):
    with pytest.raises(ValueError) as err:
        kops_output.parse_validate(stdout)
    assert "no JSON result" in str(err.value)


# --------------------------------------------------------------------------------------------
# check_placement
# --------------------------------------------------------------------------------------------

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def node(name, zone, role):
    return {"name": name, "zone": zone, "role": role, "hostname": name, "status": "True"}


def test_topology_ha_ok():
    nodes = [node("cp-%s" % z, z, "control-plane") for z in ZONES] + [node("n-%s" % z, z, "node") for z in ZONES]
    assert kops_output.check_placement(nodes, ZONES, ZONES) == {"control_plane_zones": ZONES, "node_zones": ZONES, "problems": []}


def test_topology_control_plane_in_one_zone_of_three():
    nodes = [node("cp-%d" % i, "us-east-1a", "control-plane") for i in range(3)] + [node("n-%s" % z, z, "node") for z in ZONES]
    result = kops_output.check_placement(nodes, ZONES, ZONES)
    assert result["control_plane_zones"] == ["us-east-1a"]
    assert result["problems"] == ["control-plane nodes run in 1 zone(s) (us-east-1a), expected 3 (us-east-1a, us-east-1b, us-east-1c)"]


def test_topology_no_control_plane_nodes():
    result = kops_output.check_placement([node("n-a", "us-east-1a", "node"), node("n-b", "us-east-1b", "node")], ZONES, ZONES)
    assert result["problems"] == ["control-plane nodes run in 0 zone(s) (none), expected 3 (us-east-1a, us-east-1b, us-east-1c)"]


def test_topology_workers_in_one_zone_of_three():
    nodes = [node("cp-%s" % z, z, "control-plane") for z in ZONES] + [node("n-%d" % i, "us-east-1b", "node") for i in range(3)]
    result = kops_output.check_placement(nodes, ZONES, ZONES)
    assert result["node_zones"] == ["us-east-1b"]
    assert result["problems"] == ["worker nodes run in 1 zone(s) (us-east-1b); expected at least 2 of us-east-1a, us-east-1b, us-east-1c"]


def test_topology_workers_in_two_zones_of_three_is_enough():
    nodes = [node("cp-%s" % z, z, "control-plane") for z in ZONES] + [node("n-a", "us-east-1a", "node"), node("n-b", "us-east-1b", "node")]
    assert kops_output.check_placement(nodes, ZONES, ZONES)["problems"] == []


def test_topology_one_worker_asked_for_needs_one_zone():
    """Guide 001: --node-count 1 over three zones; kops puts the one node in the first zone's group."""
    nodes = [node("cp-%s" % z, z, "control-plane") for z in ZONES] + [node("n-a", "us-east-1a", "node")]
    assert kops_output.check_placement(nodes, ZONES, ZONES, node_count=1)["problems"] == []
    two = nodes + [node("n-a2", "us-east-1a", "node")]
    assert kops_output.check_placement(two, ZONES, ZONES, node_count=2)["problems"] == [
        "worker nodes run in 1 zone(s) (us-east-1a); expected at least 2 of us-east-1a, us-east-1b, us-east-1c"
    ]


def test_topology_single_zone_cluster():
    nodes = [node("cp", "us-east-1a", "control-plane"), node("n-1", "us-east-1a", "node"), node("n-2", "us-east-1a", "node")]
    result = kops_output.check_placement(nodes, ["us-east-1a"], ["us-east-1a"])
    assert result == {"control_plane_zones": ["us-east-1a"], "node_zones": ["us-east-1a"], "problems": []}
    # Without control_plane_zones only the workers are checked.
    assert kops_output.check_placement(nodes, [], ["us-east-1a"])["problems"] == []


def test_topology_role_spellings():
    nodes = [
        node("m", "us-east-1a", "master"),
        node("c", "us-east-1b", "ControlPlane"),
        node("n", "us-east-1a", "Node"),
        node("n2", "us-east-1b", "node"),
        node("api", "us-east-1c", "apiserver"),
    ]
    result = kops_output.check_placement(nodes, ["us-east-1a", "us-east-1b"], ZONES)
    assert result == {"control_plane_zones": ["us-east-1a", "us-east-1b"], "node_zones": ["us-east-1a", "us-east-1b"], "problems": []}


def test_eventbridge_tag_change_is_never_applied_by_kops_so_it_is_ignored():
    """kops v1.36.2 EventBridgeRule.RenderAWS only creates rules: a Tags change stays in every plan."""
    text = (
        "Will modify resources:\n"
        "  EventBridgeRule/c.example.org-ASGLifecycle\n"
        "  \tTags                \t {Name: c-ASGLifecycle, KubernetesCluster: c.example.org} -> "
        "{Name: c-ASGLifecycle, KubernetesCluster: c.example.org, environment: test}\n\n"
        "  AutoscalingGroup/nodes.c.example.org\n"
        "  \tMaxSize             \t 2 -> 3\n\n"
        "Must specify --yes to apply changes\n"
    )
    plan = update_plan.parse_update_plan(text)
    assert [i["resource"] for i in plan["modify"]] == ["AutoscalingGroup/nodes.c.example.org"]
    assert [i["resource"] for i in plan["ignored"]] == ["EventBridgeRule/c.example.org-ASGLifecycle"]
    assert plan["changed"] is True
    only_tags = update_plan.parse_update_plan(text.split("\n\n  AutoscalingGroup")[0] + "\n\nMust specify --yes to apply changes\n")
    assert only_tags["changed"] is False and len(only_tags["ignored"]) == 1


def test_overrides_to_nil_of_an_instance_requirements_group_are_never_applied():
    """Guide 003's requirements group: kops plans MixedInstanceOverrides [] -> <nil> in every dry run and
    RenderAWS sends overrides only for a non-nil list (awstasks/autoscalinggroup.go:551-566): ignored. A real
    overrides change (to a list) is kept."""
    text = (
        "Will modify resources:\n"
        "  AutoscalingGroup/requirements-workers.demo.k8s.local\n"
        "  \tMixedInstanceOverrides\t [] -> <nil>\n\n"
        "Must specify --yes to apply changes\n"
    )
    plan = update_plan.parse_update_plan(text)
    assert plan["changed"] is False and [i["resource"] for i in plan["ignored"]] == ["AutoscalingGroup/requirements-workers.demo.k8s.local"]
    real = update_plan.parse_update_plan(text.replace("[] -> <nil>", "[t3.medium] -> [t3.medium, t3a.medium]"))
    assert real["changed"] is True and real["ignored"] == []


SPOT_PLAN = (
    "Will modify resources:\n"
    "  AutoscalingGroup/spot-workers.demo.k8s.local\n"
    "  \tCapacityRebalance   \t <nil> -> true\n\n"
    "  AutoscalingGroup/warm-workers.demo.k8s.local\n"
    "  \tWarmPool            \t <nil> -> name:warm-workers.demo.k8s.local id:warm-workers.demo.k8s.local\n\n"
    "Must specify --yes to apply changes\n"
)


def test_group_fields_kops_never_reads_back_are_settled_against_aws():
    """kops v1.36.2 AutoscalingGroup.Find reads neither CapacityRebalance nor WarmPool: every plan lists them.
    WarmPool (never applied by that task) is always ignored; CapacityRebalance only when AWS already holds it."""
    plan = update_plan.parse_update_plan(SPOT_PLAN)
    assert [i["resource"] for i in plan["ignored"]] == ["AutoscalingGroup/warm-workers.demo.k8s.local"]
    assert plan["changed"] is True
    asked = []

    def holds(value):
        def describe(name):
            asked.append(name)
            return {"AutoScalingGroupName": name, "CapacityRebalance": value}

        return describe

    settled = update_plan.settle_unread_fields(update_plan.parse_update_plan(SPOT_PLAN), holds(True))
    assert settled["changed"] is False and settled["modify"] == [] and len(settled["ignored"]) == 2
    assert asked == ["spot-workers.demo.k8s.local"]
    # AWS holds another value (or no such group): a real change, kept.
    for describe in (holds(False), lambda name: None):
        kept = update_plan.settle_unread_fields(update_plan.parse_update_plan(SPOT_PLAN), describe)
        assert kept["changed"] is True and [i["resource"] for i in kept["modify"]] == ["AutoscalingGroup/spot-workers.demo.k8s.local"]
    # With another change on the same group, the item stays whatever AWS holds.
    mixed = SPOT_PLAN.replace("<nil> -> true\n", "<nil> -> true\n  \tMinSize             \t 1 -> 2\n")
    assert update_plan.settle_unread_fields(update_plan.parse_update_plan(mixed), holds(True))["changed"] is True
