"""The rehearsal's pure parts (tools/rehearsal.py): what the local world cannot host, the twin's names, the imported
budgets and pods, what the change would write, and the report read from a playbook's results."""

import pytest
import rehearsal

CLUSTER = "k1.example.org"
STORE = "s3://prod-state/team"


def record(spec=None, groups=None):
    cluster = {
        "apiVersion": "kops.k8s.io/v1alpha2",
        "kind": "Cluster",
        "metadata": {"name": CLUSTER, "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 3},
        "spec": dict({"cloudProvider": "aws", "configBase": STORE + "/" + CLUSTER, "dnsZone": "example.org", "kubernetesVersion": "1.34.1"}, **(spec or {})),
    }
    return {"cluster": cluster, "instance_groups": groups or [group("nodes-us-east-1a", "Node")]}


def group(name, role, **spec):
    return {
        "apiVersion": "kops.k8s.io/v1alpha2",
        "kind": "InstanceGroup",
        "metadata": {"name": name},
        "spec": dict({"role": role, "minSize": 1, "maxSize": 2}, **spec),
    }


def node(name, group_name):
    return {"metadata": {"name": name, "labels": {"kops.k8s.io/instancegroup": group_name}}}


def test_an_aws_cluster_with_its_own_resources_is_hostable():
    assert rehearsal.unhostable(record(spec={"subnets": [{"name": "us-east-1a", "cidr": "172.20.0.0/19", "type": "Public", "egress": "External"}]})) == []


@pytest.mark.parametrize(
    "spec, groups, field",
    [
        # pkg/apis/kops/v1alpha2/cluster.go: the fields that name resources of the source's account
        ({"networkID": "vpc-0abc"}, None, "Cluster.spec.networkID"),
        ({"subnets": [{"name": "a", "id": "subnet-0abc"}]}, None, "Cluster.spec.subnets[0].id"),
        ({"subnets": [{"name": "a", "egress": "nat-0abc"}]}, None, "Cluster.spec.subnets[0].egress"),
        ({"api": {"loadBalancer": {"sslCertificate": "arn:aws:acm:us-east-1:1:certificate/x"}}}, None, "Cluster.spec.api.loadBalancer.sslCertificate"),
        ({"iam": {"permissionsBoundary": "arn:aws:iam::1:policy/b"}}, None, "Cluster.spec.iam.permissionsBoundary"),
        ({"externalPolicies": {"node": ["arn:aws:iam::1:policy/p"]}}, None, "Cluster.spec.externalPolicies"),
        ({"cloudProvider": "gce"}, None, "Cluster.spec.cloudProvider"),
        ({"dnsZone": "Z0123456789ABC"}, None, "Cluster.spec.dnsZone"),
        ({}, [group("nodes", "Node", additionalSecurityGroups=["sg-0abc"])], "InstanceGroup nodes.spec.additionalSecurityGroups"),
        ({}, [group("nodes", "Node", iam={"profile": "arn:aws:iam::1:instance-profile/p"})], "InstanceGroup nodes.spec.iam.profile"),
        ({}, [group("nodes", "Node", externalLoadBalancers=[{"targetGroupArn": "arn:x"}])], "InstanceGroup nodes.spec.externalLoadBalancers"),
    ],
)
def test_what_names_a_resource_of_the_source_account_is_named(spec, groups, field):
    found = rehearsal.unhostable(record(spec=spec, groups=groups))
    assert [f for f, _ in found] == [field]
    message = str(rehearsal.Unhostable(found))
    assert field in message and "nothing was written" in message


def test_the_twin_maps_every_bucket_and_an_unknown_image_and_says_so():
    spec = {"etcdClusters": [{"name": "main", "backups": {"backupStore": STORE + "/" + CLUSTER + "/backups/etcd/main"}}]}
    spec["serviceAccountIssuerDiscovery"] = {"discoveryStore": "s3://oidc-bucket/k1"}
    groups = [group("nodes", "Node", image="ami-0prod"), group("cp", "ControlPlane", image="ami-0twin")]
    cluster, twin_groups, mapped, buckets = rehearsal.twin_objects(record(spec=spec, groups=groups), STORE, images={"ami-0twin"}, twin_image="ami-0twin")
    assert buckets == ["twin-oidc-bucket", "twin-prod-state"]
    assert cluster["spec"]["configBase"] == "s3://twin-prod-state/team/" + CLUSTER
    assert cluster["spec"]["etcdClusters"][0]["backups"]["backupStore"].startswith("s3://twin-prod-state/team/")
    assert cluster["spec"]["serviceAccountIssuerDiscovery"]["discoveryStore"] == "s3://twin-oidc-bucket/k1"
    assert "creationTimestamp" not in cluster["metadata"] and "generation" not in cluster["metadata"]
    assert [g["spec"]["image"] for g in twin_groups] == ["ami-0twin", "ami-0twin"]
    assert all(g["metadata"]["labels"] == {"kops.k8s.io/cluster": CLUSTER} for g in twin_groups)  # kops create -f asks for it
    fields = {m["field"]: (m["source"], m["twin"]) for m in mapped}
    assert fields["InstanceGroup nodes.spec.image"] == ("ami-0prod", "ami-0twin")
    assert fields["Cluster.spec.configBase"] == (STORE + "/" + CLUSTER, "s3://twin-prod-state/team/" + CLUSTER)
    assert "InstanceGroup cp.spec.image" not in fields
    assert len(rehearsal.twin_bucket("b" * 63)) <= 63  # S3's bucket name limit


class _Client(object):
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda **kw: self.calls.append(name)

    def get_paginator(self, operation):
        self.calls.append("paginator " + operation)


def test_the_source_client_refuses_every_call_but_reads_before_sending_it():
    client = _Client()
    source = rehearsal.ReadOnlyS3(client)
    source.get_object(Bucket="b", Key="k")
    source.list_objects_v2(Bucket="b")
    source.get_paginator("list_objects_v2")
    for call in ("put_object", "delete_object", "copy_object", "put_bucket_versioning", "delete_objects"):
        with pytest.raises(rehearsal.RehearsalError, match="read only: S3 %s refused" % call):
            getattr(source, call)(Bucket="b", Key="k")
    with pytest.raises(rehearsal.RehearsalError, match="paginator list_object_versions refused"):
        source.get_paginator("list_object_versions")
    assert client.calls == ["get_object", "list_objects_v2", "paginator list_objects_v2"]


def test_budgets_and_their_pods_land_on_the_twin_nodes_of_the_same_groups():
    live = [node("ip-1", "nodes-a"), node("ip-2", "nodes-a"), node("ip-3", "nodes-b")]
    twin = [node("i-b1", "nodes-b"), node("i-a2", "nodes-a"), node("i-a1", "nodes-a")]
    mapping = rehearsal.node_map(live, twin)
    assert mapping == {"ip-1": "i-a1", "ip-2": "i-a2", "ip-3": "i-b1"}
    assert rehearsal.group_sizes(live) == {"nodes-a": 2, "nodes-b": 1}
    pdbs = [
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}, "status": {}},
        {"metadata": {"name": "kube-dns", "namespace": "kube-system"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}}},
    ]
    pods = [
        {"metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}}, "spec": {"nodeName": "ip-2"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "web-2", "namespace": "shop", "labels": {"app": "web"}}, "spec": {"nodeName": "ip-3"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "web-old", "namespace": "shop", "labels": {"app": "web"}}, "spec": {"nodeName": "ip-3"}, "status": {"phase": "Succeeded"}},
        {"metadata": {"name": "db-1", "namespace": "shop", "labels": {"app": "db"}}, "spec": {"nodeName": "ip-1"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "coredns-x", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}}, "spec": {"nodeName": "ip-1"}},
    ]
    budgets, imported = rehearsal.pods_to_import(pdbs, pods, mapping, present={("kube-system", "kube-dns")})
    assert budgets == [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        }
    ]
    assert [(p["metadata"]["name"], p["spec"]["nodeName"], p["metadata"]["labels"]) for p in imported] == [
        ("web-1", "i-a2", {"app": "web"}),
        ("web-2", "i-b1", {"app": "web"}),
    ]


def test_what_the_change_wrote_is_said_in_the_source_names():
    mapped = [{"field": "Cluster.spec.configBase", "source": STORE + "/" + CLUSTER, "twin": "s3://twin-prod-state/team/" + CLUSTER}]
    before = {"Cluster": record()["cluster"], "InstanceGroup nodes": group("nodes", "Node")}
    after_cluster = dict(before["Cluster"], spec=dict(before["Cluster"]["spec"], kubernetesVersion="1.35.0"))
    after = {"Cluster": after_cluster, "InstanceGroup nodes": group("nodes", "Node", maxSize=3), "InstanceGroup spot": group("spot", "Node")}
    writes = rehearsal.store_writes(before, after, mapped)
    assert writes == [
        {"object": "Cluster", "path": "spec.kubernetesVersion", "before": "1.34.1", "after": "1.35.0"},
        {"object": "InstanceGroup nodes", "path": "spec.maxSize", "before": 2, "after": 3},
        {"object": "InstanceGroup spot", "path": "", "before": "absent", "after": "present"},
    ]
    moved = dict(after_cluster, spec=dict(after_cluster["spec"], configBase="s3://twin-prod-state/team/" + CLUSTER + "/x"))
    [write] = rehearsal.store_writes({"Cluster": after_cluster}, {"Cluster": moved}, mapped)
    assert write["after"] == STORE + "/" + CLUSTER + "/x"  # the source's name, not the twin's


def test_the_report_reads_the_plan_the_order_the_budgets_and_the_roll_times():
    rec = record(groups=[group("control-plane-us-east-1a", "ControlPlane"), group("nodes-a", "Node"), group("nodes-b", "Node")])
    results = [
        {"task": "plan", "action": "kopsible.kops.kops_cluster", "result": {"plan_summary": ["modify LaunchTemplate/nodes-a: ImageID"]}},
        {
            "task": "roll cp",
            "action": "kopsible.kops.rolling_update",
            "result": {
                "roll_order": [
                    {"name": "control-plane-us-east-1a", "role": "ControlPlane"},
                    {"name": "nodes-a", "role": "Node"},
                    {"name": "nodes-b", "role": "Node"},
                ],
                "rolled": [{"name": "control-plane-us-east-1a", "nodes_drained": ["i-cp"], "seconds": 42.0}],
            },
        },
        {
            "task": "roll nodes",
            "action": "kopsible.kops.rolling_update",
            "result": {
                "failed": True,
                "msg": "PodDisruptionBudgets allow no disruption of pods on nodes about to roll: shop/web (protects shop/web-1 on i-a1)",
                "pdb_check": {"blocking": [{"name": "web", "namespace": "shop", "pods": ["shop/web-1 on i-a1"]}]},
            },
        },
    ]
    sizes = {"control-plane-us-east-1a": 1, "nodes-a": 2, "nodes-b": 1}
    out = rehearsal.report(results, rec, sizes, {"ip-1": "i-a1"}, [], [])
    assert out["cloud_plan"] == ["modify LaunchTemplate/nodes-a: ImageID"]
    assert [(g["name"], g["role"], g["nodes"]) for g in out["roll_order"]] == [
        ("control-plane-us-east-1a", "ControlPlane", 1),
        ("nodes-a", "Node", 2),
        ("nodes-b", "Node", 1),
    ]
    assert out["blocking"] == [{"budget": "shop/web", "pods": ["shop/web-1 on ip-1"]}]
    assert out["failed"] == {
        "task": "roll nodes",
        "msg": "PodDisruptionBudgets allow no disruption of pods on nodes about to roll: shop/web (protects shop/web-1 on ip-1)",
    }
    # measured in the twin for the control plane (42 s a node); kops' 15 s interval + 5 s post-drain delay otherwise
    assert out["expected_roll_seconds"] == {"control-plane-us-east-1a": 42.0, "nodes-a": 40, "nodes-b": 20}
    assert out["expected_roll_total_seconds"] == 102.0
    assert out["rolled"] == [{"name": "control-plane-us-east-1a", "nodes": 1, "seconds": 42.0, "seconds_per_node": 42.0}]


def test_the_command_without_a_local_world_says_how_to_start_one(tmp_path):
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    argv = [sys.executable, os.path.join(root, "scripts", "rehearse.py"), "--cluster", CLUSTER, "--source-store", STORE, "--playbook", "change.yml"]
    proc = subprocess.run(argv + ["--twin-vars", str(tmp_path / "sandbox-vars.yml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "start the local world with `make sandbox`" in proc.stderr, proc.stderr
