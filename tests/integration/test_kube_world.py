"""The Kubernetes half of the local world: a real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler v1.35.4) behind every applied kops cluster, and the node agent
standing in for its kubelets. `kops validate cluster` runs unchanged through `kops_cluster validate: true`
and must pass, or fail naming kops' own failure; the exported admin kubeconfig reaches the API through
DNS; the PodDisruptionBudget gate of `rolling_update` reads a budget filled by the real disruption
controller. One applied HA cluster is shared by the tests of this file (created once)."""

import time
import types

import pytest
import yaml

from conftest import BUCKET, CLUSTER, UBUNTU_AMI, KopsWorld
from harness.emulator import SECRET_KEY
from harness.kubeworld_runner import wait_for
from harness.store_factory import run_kops
from kubeworld.node_agent import StoreView
from kubeworld.world import CA_SUFFIX, SA_SUFFIX, Cluster, KubeWorld

pytestmark = pytest.mark.kops
VALIDATE = dict(name=CLUSTER, validate=True)


@pytest.fixture(scope="module")
def live(emulator_session, kops_dns, ssh_public_key, kube_world):
    """The guide's HA cluster, applied once; its control plane started by the kube world."""
    emulator_session.reset()
    world = KopsWorld(emulator_session, kops_dns, ssh_public_key)
    world.kube = kube_world
    world.play = lambda tasks, **kw: _play(world, tasks, **kw)
    created = world.play([{"name": "c", "kopsible.kops.kops_cluster": world.cluster_options(apply=True)}]).result("c")
    assert not created.get("failed"), created.get("msg")
    world.info = kube_world.wait_cluster(CLUSTER, timeout=120, nodes=5)
    yield world
    emulator_session.reset()


def _play(world, tasks, **kwargs):
    from harness.playbook import run_playbook

    kwargs.setdefault("resolv_conf", world.dns.resolv_conf)
    return run_playbook(tasks, emulator=world.emulator, kops=world.kops, **kwargs)


def running_instances(world, tag="kops.k8s.io/instancegroup"):
    """``{instance id: value of ``tag`` or None}`` of the cluster's running instances (default: their group), read from
    the emulator."""
    ec2 = world.emulator.client("ec2")
    found = {}
    for reservation in ec2.describe_instances(
        Filters=[{"Name": "tag:KubernetesCluster", "Values": [CLUSTER]}, {"Name": "instance-state-name", "Values": ["running"]}]
    )["Reservations"]:
        for inst in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
            found[inst["InstanceId"]] = tags.get(tag)
    return found


def control_plane_ips(world):
    """Sorted private addresses of the cluster's running control-plane instances, read from the emulator."""
    ec2 = world.emulator.client("ec2")
    return sorted(
        inst["PrivateIpAddress"]
        for r in ec2.describe_instances(
            Filters=[{"Name": "tag:KubernetesCluster", "Values": [CLUSTER]}, {"Name": "instance-state-name", "Values": ["running"]}]
        )["Reservations"]
        for inst in r["Instances"]
        if {t["Key"]: t["Value"] for t in inst.get("Tags", [])}.get("kops.k8s.io/instancegroup", "").startswith("control-plane-")
    )


def validate(world, timeout="0s", **extra):
    task = {"name": "v", "kopsible.kops.kops_cluster": dict(VALIDATE, validation_timeout=timeout, **extra), "ignore_errors": True}
    return world.play([task]).result("v")


def test_world_finds_state_stores_and_private_zones_of_every_partition(emulator, tmp_path):
    """The AWS China guide's shape without kops: a state store in cn-north-1 (S3 of the aws-cn partition, which a
    us-east-1 client does not list), the private hosted zone kops.internal (Route53 of aws-cn) holding kops'
    placeholder for api.internal, and an internal API load balancer. The world finds the store next to one of the
    aws partition, points the placeholder at the API endpoint of the control-plane instance once there is one (and leaves the same name in a zone of the
    aws partition alone), and lists the internal load balancer's DNS name for the DNS face."""
    name, china = "beijing.kops.internal", "cn-north-1"
    spec = {"spec": {"networking": {"subnets": [{"name": "cn-north-1a", "zone": "cn-north-1a"}]}}}
    for bucket, region, cluster in (("kopsible-cn-state", china, name), ("kopsible-state", "us-east-1", "c.example.org")):
        s3 = emulator.client("s3", region)
        s3.create_bucket(Bucket=bucket, **({"CreateBucketConfiguration": {"LocationConstraint": region}} if region != "us-east-1" else {}))
        for key in ("/config", CA_SUFFIX, SA_SUFFIX):
            s3.put_object(Bucket=bucket, Key=cluster + key, Body=yaml.safe_dump(spec).encode())
    assert [b["Name"] for b in emulator.client("s3").list_buckets()["Buckets"]] == ["kopsible-state"]  # partitions apart, as in AWS

    def placeholder_zone(region, private):
        r53 = emulator.client("route53", region)
        extra = {"HostedZoneConfig": {"PrivateZone": True}, "VPC": {"VPCRegion": region, "VPCId": vpc}} if private else {}
        zone = r53.create_hosted_zone(Name="kops.internal.", CallerReference="zone-" + region, **extra)["HostedZone"]["Id"]
        record = {"Name": "api.internal.%s." % name, "Type": "A", "TTL": 10, "ResourceRecords": [{"Value": "203.0.113.123"}]}
        r53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": [{"Action": "CREATE", "ResourceRecordSet": record}]})
        return lambda: [r["ResourceRecords"][0]["Value"] for r in r53.list_resource_record_sets(HostedZoneId=zone)["ResourceRecordSets"] if r["Type"] == "A"]

    ec2 = emulator.client("ec2", china)
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.32.0/19", AvailabilityZone="cn-north-1a")["Subnet"]["SubnetId"]
    china_record, global_record = placeholder_zone(china, private=True), placeholder_zone("us-east-1", private=False)
    balancer = emulator.client("elbv2", china).create_load_balancer(
        Name="api-beijing-kops-internal-abc", Subnets=[subnet], Scheme="internal", Type="network", Tags=[{"Key": "KubernetesCluster", "Value": name}]
    )["LoadBalancers"][0]

    world = KubeWorld(emulator.client, "127.250.0", str(tmp_path))
    found = world.discover()
    assert found == {("kopsible-cn-state", name): (name, china), ("kopsible-state", "c.example.org"): ("c.example.org", "us-east-1")}
    store = StoreView(lambda: emulator.client("s3", china), "kopsible-cn-state", name)
    store.refresh()
    cluster = Cluster(name, "kopsible-cn-state", name, "127.250.0.1", None, None, store, china)
    assert world.play_dns_controller(cluster) == []  # no control-plane instance serves the API yet: the placeholder stays
    cluster.endpoints = {"i-0123456789abcdef0": types.SimpleNamespace(address="127.250.0.2")}  # one registered (play_endpoints)
    assert world.play_dns_controller(cluster) == ["api.internal.%s." % name]
    assert china_record() == ["127.250.0.2"] and global_record() == ["203.0.113.123"]
    assert cluster.lb_names == [balancer["DNSName"].lower()]


def test_control_plane_start_and_memory(live):
    """Started in under 10 s, under 0.6 GB, API records at its endpoints, one per control-plane instance
    (dns-controller's job)."""
    info = live.info
    assert info["started_seconds"] < 10, info
    assert info["rss_bytes"] < 0.6 * 2**30, info
    r53 = live.emulator.client("route53")
    values = {
        r["Name"]: [v["Value"] for v in r.get("ResourceRecords", [])] for r in r53.list_resource_record_sets(HostedZoneId=live.zone_id)["ResourceRecordSets"]
    }
    # one API endpoint per control-plane instance, as dns-controller lists the instances running kube-apiserver
    endpoints = info["api_endpoints"]
    assert sorted(endpoints) == sorted(i for i, g in running_instances(live).items() if g.startswith("control-plane-")), endpoints
    assert len(set(endpoints.values())) == 3 and info["address"] not in endpoints.values()
    assert sorted(values["api.%s." % CLUSTER]) == sorted(endpoints.values())
    assert sorted(values["api.internal.%s." % CLUSTER]) == sorted(endpoints.values())
    assert values["kops-controller.internal.%s." % CLUSTER] == control_plane_ips(live), values
    import kubernetes

    assert kubernetes.client.VersionApi(live.kube.api_client(CLUSTER)).get_code().git_version == "v1.35.4"


def test_validate_passes_on_fresh_ha_cluster(live):
    result = validate(live, timeout="3m")
    assert not result.get("failed"), result.get("msg")
    validation = result["validation"]
    assert validation["ok"] is True and validation["failures"] == []
    instances = running_instances(live)
    assert len(instances) == 5
    nodes = validation["nodes"]
    assert sorted(n["name"] for n in nodes) == sorted(n.metadata.name for n in live.kube.core(CLUSTER).list_node().items)
    assert sorted(n["role"] for n in nodes) == ["control-plane"] * 3 + ["node"] * 2
    assert all(n["status"] == "True" for n in nodes)
    assert sorted(n["zone"] for n in nodes if n["role"] == "control-plane") == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert validation["placement"]["problems"] == []


def test_exported_kubeconfig_lists_running_instances_as_ready_nodes(live, tmp_path):
    """The admin kubeconfig kops exports, used as written (server https://api.<cluster>, resolved through
    DNS), lists exactly the running instances as Ready nodes."""
    path = str(tmp_path / "kubeconfig")
    result = live.play(
        [
            {"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": path}},
            {"name": "nodes", "kubernetes.core.k8s_info": {"kind": "Node", "kubeconfig": path}},
        ]
    )
    assert not result.failed, result.stdout[-3000:]
    nodes = result.result("nodes")["resources"]
    ids = {n["spec"]["providerID"].rsplit("/", 1)[-1]: n for n in nodes}
    assert set(ids) == set(running_instances(live))
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True", node["metadata"]["name"]
        assert node["metadata"]["labels"]["kops.k8s.io/instancegroup"] == running_instances(live)[node["spec"]["providerID"].rsplit("/", 1)[-1]]
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.1"


def test_validate_fails_closed_on_not_ready_node(live):
    core = live.kube.core(CLUSTER)
    worker = next(n for n in core.list_node().items if "node-role.kubernetes.io/node" in n.metadata.labels)
    live.kube.knobs(CLUSTER, not_ready_nodes=[worker.metadata.name])
    try:
        wait_for(lambda: not node_ready(core, worker.metadata.name))
        result = validate(live)
        assert result.get("failed")
        failures = result["validation"]["failures"]
        assert any(f["type"] == "Node" and f["name"] == worker.metadata.name for f in failures), failures
        assert worker.metadata.name in result["msg"]
    finally:
        live.kube.knobs(CLUSTER)
    wait_for(lambda: node_ready(core, worker.metadata.name))


def test_cluster_role_leaves_a_diagnostics_dump_without_secrets_when_validation_fails(live, tmp_path):
    """Issue 34 item 5: the cluster role's validation fails (a worker NotReady); its rescue runs kops_toolbox_dump,
    and the failure names the file. The file holds kops' cloud dump (the running instances), the stored spec and the
    cluster's Kubernetes objects (the NotReady node among them), and no key material: not a Secret's value, not a
    PEM private key in a ConfigMap, not the admin credential of the kubeconfig, not the AWS secret key."""
    import base64
    import os
    import subprocess

    import kubernetes

    core = live.kube.core(CLUSTER)
    key_file = tmp_path / "tls.key"
    subprocess.run(["openssl", "genrsa", "-out", str(key_file), "2048"], check=True, capture_output=True)
    key = key_file.read_text()
    body = key.split("\n")[1]  # a line of the key's base64 body
    meta = kubernetes.client.V1ObjectMeta
    core.create_namespaced_secret(
        "default", kubernetes.client.V1Secret(metadata=meta(name="app-tls"), type="kubernetes.io/tls", string_data={"tls.key": key, "tls.crt": "x"})
    )
    core.create_namespaced_config_map("default", kubernetes.client.V1ConfigMap(metadata=meta(name="app-bundle"), data={"bundle.pem": "a key\n" + key}))
    worker = next(n for n in core.list_node().items if "node-role.kubernetes.io/node" in n.metadata.labels)
    kubeconfig, diagnostics = str(tmp_path / "kubeconfig"), tmp_path / "diagnostics"
    options = live.cluster_options()
    role_vars = {
        "cluster_name": CLUSTER,
        "cluster_zones": options["zones"],
        "cluster_control_plane_zones": options["control_plane_zones"],
        "cluster_kubernetes_version": options["kubernetes_version"],
        "cluster_dns_zone": options["dns_zone"],
        "cluster_image": options["image"],
        "cluster_channel": options["channel"],
        "cluster_ssh_public_key": options["ssh_public_key"],
        "cluster_export_kubeconfig": True,
        "cluster_kubeconfig": kubeconfig,
        "cluster_validate": True,
        "cluster_validation_timeout": "0s",
        "cluster_diagnostics_dir": str(diagnostics),
    }
    live.kube.knobs(CLUSTER, not_ready_nodes=[worker.metadata.name])
    try:
        wait_for(lambda: not node_ready(core, worker.metadata.name))
        run = live.play([{"name": "cluster", "ansible.builtin.include_role": {"name": "kopsible.kops.cluster"}, "vars": role_vars}])
    finally:
        live.kube.knobs(CLUSTER)
        core.delete_namespaced_secret("app-tls", "default")
        core.delete_namespaced_config_map("app-bundle", "default")
    assert run.failed
    validated = run.result("kopsible.kops.cluster : Cluster %s is present" % CLUSTER)
    assert validated.get("failed") and worker.metadata.name in validated["msg"], validated.get("msg")
    dump = run.result("kopsible.kops.cluster : Diagnostics - kops toolbox dump, secrets redacted, of %s" % CLUSTER)
    files = sorted(diagnostics.iterdir())
    assert [f.name for f in files] == [os.path.basename(dump["dump_file"])] and dump["written"] is True, dump
    assert files[0].name.startswith(CLUSTER + "-") and files[0].suffix == ".yaml"
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"
    failure = run.result("kopsible.kops.cluster : The failure of Cluster %s is present" % CLUSTER)
    assert failure["msg"] == "%s (diagnostics: %s)" % (validated["msg"], dump["dump_file"]), failure["msg"]

    text = files[0].read_text()
    document = yaml.safe_load(text)
    assert worker.metadata.name in document["dump"]["reason"] and document["dump"]["cluster"] == CLUSTER
    assert document["cluster"]["metadata"]["name"] == CLUSTER
    assert sorted(i["name"] for i in document["cloud"]["instances"]) == sorted(running_instances(live))
    assert sorted(i["name"] for i in dump["instances"]) == sorted(running_instances(live))
    nodes = {n["metadata"]["name"]: n for n in document["kubernetes"]["v1/nodes"]}
    assert set(nodes) == {n.metadata.name for n in core.list_node().items}
    ready = [c["status"] for c in nodes[worker.metadata.name]["status"]["conditions"] if c["type"] == "Ready"]
    assert ready != ["True"], ready
    secret = next(s for s in document["kubernetes"]["v1/secrets"] if s["metadata"]["name"] == "app-tls")
    assert sorted(secret["data"]) == ["tls.crt", "tls.key"] and all(v.startswith("<redacted: ") for v in secret["data"].values())
    bundle = next(c for c in document["kubernetes"]["v1/configmaps"] if c["metadata"]["name"] == "app-bundle")
    assert bundle["data"]["bundle.pem"].startswith("a key\n<redacted: "), bundle["data"]
    assert dump["kubernetes_objects"]["v1/nodes"] == len(nodes) and dump["errors"] == [], dump
    assert any(p.endswith(".data.tls.key") for p in dump["redacted"]) and any(p.endswith(".bundle.pem") for p in dump["redacted"])
    # no key material anywhere in the file
    admin = yaml.safe_load(open(kubeconfig))["users"][0]["user"]
    for material in (body, base64.b64encode(key.encode()).decode()[:40], admin["client-key-data"][:40], SECRET_KEY):
        assert material not in text
    assert "PRIVATE KEY-----" not in text
    wait_for(lambda: node_ready(core, worker.metadata.name))


def test_validate_fails_closed_on_not_ready_critical_pod(live):
    core = live.kube.core(CLUSTER)
    worker = next(n for n in core.list_node().items if "node-role.kubernetes.io/node" in n.metadata.labels)
    name = "kube-proxy-" + worker.metadata.name
    core.create_namespaced_pod(
        "kube-system",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"k8s-app": "kube-proxy"}},
            "spec": {
                "nodeName": worker.metadata.name,
                "priorityClassName": "system-node-critical",
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.34.1"}],
            },
        },
    )
    live.kube.knobs(CLUSTER, not_ready_pods=["kube-system/" + name])
    try:
        wait_for(lambda: core.read_namespaced_pod(name, "kube-system").status.phase == "Running")
        result = validate(live)
        assert result.get("failed")
        failures = result["validation"]["failures"]
        assert any(f["type"] == "Pod" and f["name"] == "kube-system/" + name for f in failures), failures
        assert name in result["msg"]
    finally:
        live.kube.knobs(CLUSTER)
        core.delete_namespaced_pod(name, "kube-system", grace_period_seconds=0)


def test_validate_fails_closed_on_group_missing_a_node_then_waits_for_scale_up(live):
    """nodes-us-east-1c scaled 0 -> 1 with the new node's joining delayed: validation without waiting fails
    naming the group's machine that has not joined (kops' "Machine" failure, pkg/validation/validate_cluster.go);
    with --wait it waits for the third node and passes."""
    live.kube.knobs(CLUSTER, join_delay={"nodes-us-east-1c": 25})
    try:
        scaled = live.play(
            [{"name": "s", "kopsible.kops.kops_instancegroup": {"cluster": CLUSTER, "name": "nodes-us-east-1c", "min_size": 1, "max_size": 1, "apply": True}}]
        ).result("s")
        assert not scaled.get("failed"), scaled.get("msg")
        missing = validate(live)
        assert missing.get("failed")
        new = [i for i, g in running_instances(live).items() if g == "nodes-us-east-1c"]
        assert len(new) == 1
        assert missing["validation"]["failures"] == [
            {"type": "Machine", "name": new[0], "instance_group": "nodes-us-east-1c", "message": 'machine "%s" has not yet joined cluster' % new[0]}
        ]
        assert "nodes-us-east-1c" in missing["msg"] and new[0] in missing["msg"]
        started = time.monotonic()
        waited = validate(live, timeout="3m")
        assert not waited.get("failed"), waited.get("msg")
        assert waited["validation"]["ok"] is True
        assert waited["validation"]["attempts"] >= 2
        assert time.monotonic() - started > 5
        assert sum(1 for n in waited["validation"]["nodes"] if n["role"] == "node") == 3
    finally:
        live.kube.knobs(CLUSTER)


def test_system_pods_run_as_on_a_kops_cluster(live):
    """Issue 30: the world creates kops' system addons (tools/kubeworld/addons.py): kops-controller's DaemonSet on the
    control-plane nodes, cilium's (the cluster's networking) on every node, CoreDNS on a worker, all Ready and with the
    priority classes kops validate checks; kube-proxy is off, as kops sets it for cilium."""
    core = live.kube.core(CLUSTER)
    nodes = core.list_node().items
    control_plane = sorted(n.metadata.name for n in nodes if "node-role.kubernetes.io/control-plane" in n.metadata.labels)
    workers = sorted(n.metadata.name for n in nodes if "node-role.kubernetes.io/node" in n.metadata.labels)
    pods = core.list_namespaced_pod("kube-system").items

    def on(app):
        return sorted(p.spec.node_name for p in pods if (p.metadata.labels or {}).get("k8s-app") == app and p.status.phase == "Running")

    assert on("kops-controller") == control_plane
    assert on("cilium") == sorted(control_plane + workers)
    assert len(on("kube-dns")) == 1 and on("kube-dns")[0] in workers
    assert on("kube-proxy") == []
    critical = {
        p.metadata.name: p.spec.priority_class_name for p in pods if (p.metadata.labels or {}).get("k8s-app") in ("cilium", "kops-controller", "kube-dns")
    }
    assert {n: c for n, c in critical.items() if n.startswith("cilium-")} == {n: "system-node-critical" for n in critical if n.startswith("cilium-")}
    assert {c for n, c in critical.items() if not n.startswith("cilium-")} == {"system-cluster-critical"}
    for pod in pods:
        if (pod.metadata.labels or {}).get("k8s-app") in ("cilium", "kops-controller"):
            assert [(r.kind, r.controller) for r in pod.metadata.owner_references] == [("DaemonSet", True)]


def test_validate_fails_while_a_daemonset_pod_on_a_new_node_is_not_ready(live):
    """Issue 30: a node added to nodes-us-east-1c registers, and cilium's DaemonSet pod on it runs but is not Ready for
    30 s (a readiness probe's delay, knob ``pod_ready_delay``): kops validate fails naming that pod (kops'
    pkg/validation/validate_cluster.go collectPodFailures: a system-node-critical pod that is not ready), and passes
    once it is Ready."""
    core = live.kube.core(CLUSTER)
    before = [i for i, g in running_instances(live).items() if g == "nodes-us-east-1c"]
    live.kube.knobs(CLUSTER, pod_ready_delay={"kube-system/cilium-*": 30})
    try:
        count = len(before) + 1
        scaled = live.play(
            [
                {
                    "name": "s",
                    "kopsible.kops.kops_instancegroup": {"cluster": CLUSTER, "name": "nodes-us-east-1c", "min_size": count, "max_size": count, "apply": True},
                }
            ]
        ).result("s")
        assert not scaled.get("failed"), scaled.get("msg")
        [new] = wait_for(lambda: [i for i, g in running_instances(live).items() if g == "nodes-us-east-1c" and i not in before] or None)
        node = wait_for(lambda: next((n.metadata.name for n in core.list_node().items if n.spec.provider_id.endswith("/" + new)), None))
        assert wait_for(lambda: node_ready(core, node))

        def agent_pod():
            found = core.list_namespaced_pod("kube-system", label_selector="k8s-app=cilium", field_selector="spec.nodeName=" + node).items
            return found[0] if found and found[0].status.phase == "Running" else None

        pod = wait_for(agent_pod)
        assert not any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)
        failing = validate(live)
        assert failing.get("failed")
        failures = failing["validation"]["failures"]
        assert {"type": "Pod", "name": "kube-system/" + pod.metadata.name} in [{k: f[k] for k in ("type", "name")} for f in failures], failures
        assert pod.metadata.name in failing["msg"]
        waited = validate(live, timeout="2m")
        assert not waited.get("failed"), waited.get("msg")
        ready = core.read_namespaced_pod(pod.metadata.name, "kube-system")
        assert any(c.type == "Ready" and c.status == "True" for c in ready.status.conditions)
    finally:
        live.kube.knobs(CLUSTER)


def pods_for_node(core, node):
    """Names of the kube-system pods bound to ``node`` or pinned to it by a DaemonSet's node affinity (the
    ``metadata.name`` match field the DaemonSet controller sets, pkg/controller/daemon/util ReplaceDaemonSetPodNodeNameNodeAffinity)."""
    found = []
    for pod in core.list_namespaced_pod("kube-system").items:
        terms = []
        affinity = pod.spec.affinity and pod.spec.affinity.node_affinity
        if affinity and affinity.required_during_scheduling_ignored_during_execution:
            terms = affinity.required_during_scheduling_ignored_during_execution.node_selector_terms or []
        pinned = any(f.key == "metadata.name" and node in (f.values or []) for t in terms for f in (t.match_fields or []))
        if pod.spec.node_name == node or pinned:
            found.append(pod.metadata.name)
    return sorted(found)


def test_a_terminated_instance_leaves_no_daemonset_pod_behind(live):
    """A worker's instance terminated (as a rolling update or a scale-down does): its Node goes, then its pods, in a
    real cluster's order (the cloud node-lifecycle controller, then the pod garbage collector), so the DaemonSet
    controller does not recreate cilium's pod for the Node that is going, left Pending where kops validate counts it
    ("system-node-critical pod ... is pending", pkg/validation/validate_cluster.go) until the pod garbage collector's
    quarantine ends. Seen in every roll: each replaced instance cost kops one or two 30 s validation retries."""
    core = live.kube.core(CLUSTER)
    ec2 = live.emulator.client("ec2")
    workers = sorted(i for i, g in running_instances(live).items() if g and g.startswith("nodes-"))
    victim = workers[0]
    node = wait_for(lambda: next((n.metadata.name for n in core.list_node().items if n.spec.provider_id.endswith("/" + victim)), None))
    assert pods_for_node(core, node), "no pod on %s before the termination" % node
    ec2.terminate_instances(InstanceIds=[victim])
    wait_for(lambda: node not in {n.metadata.name for n in core.list_node().items})
    # the pod garbage collector's pass right after the Node's deletion (a full run under load saw the pod a moment
    # after the Node had gone, before that pass), then none comes back
    wait_for(lambda: not pods_for_node(core, node), timeout=30)
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:  # the DaemonSet controller reacts within a second; a recreated pod would stay
        assert pods_for_node(core, node) == [], "pods for the removed node %s: %s" % (node, pods_for_node(core, node))
        time.sleep(0.5)
    waited = validate(live, timeout="2m")
    assert not waited.get("failed"), waited.get("msg")
    assert victim not in running_instances(live)


def test_kubernetes_refuses_the_node_of_a_group_whose_taints_repeat_a_key_and_effect(live, tmp_path):
    """Issue 30: kops stores a group whose taints share a key and an effect (it refuses only exact duplicates,
    pkg/apis/kops/validation/instancegroup.go), but the API server refuses its Node ("taints must be unique by key and
    effect pair", pkg/apis/core/validation/validation.go validateNodeTaints), so its instance never joins and kops'
    validation names it. kops_instancegroup refuses the same taints before writing (test_kops_instancegroup.py)."""
    spec = {
        "apiVersion": "kops.k8s.io/v1alpha2",
        "kind": "InstanceGroup",
        "metadata": {"name": "tainted", "labels": {"kops.k8s.io/cluster": CLUSTER}},
        "spec": {
            "role": "Node",
            "image": UBUNTU_AMI,
            "machineType": "t3.medium",
            "minSize": 1,
            "maxSize": 1,
            "subnets": ["us-east-1a"],
            "taints": ["dedicated=special-user-1:NoSchedule", "dedicated=special-user-2:NoSchedule"],  # Kubernetes' own case
        },
    }
    path = tmp_path / "tainted.yaml"
    path.write_text(yaml.safe_dump(spec))
    store = "s3://" + BUCKET
    run_kops(live.emulator, store, ["create", "-f", str(path)])
    try:
        run_kops(live.emulator, store, ["update", "cluster", "--name", CLUSTER, "--yes"], dns=live.dns)
        wait_for(lambda: [i for i, g in running_instances(live).items() if g == "tainted"], timeout=60)
        [instance] = [i for i, g in running_instances(live).items() if g == "tainted"]

        def refusal():
            refusals = live.kube.state()["clusters"][CLUSTER]["agent_registration_refusals"]
            return [m for m in refusals.values() if "taints must be unique by key and effect pair" in m]

        wait_for(refusal, timeout=30)
        assert [n.spec.provider_id for n in live.kube.core(CLUSTER).list_node().items if n.spec.provider_id.endswith(instance)] == []
        refused = validate(live)
        assert (
            refused.get("failed")
            and {"type": "Machine", "name": instance, "instance_group": "tainted", "message": 'machine "%s" has not yet joined cluster' % instance}
            in refused["validation"]["failures"]
        ), refused.get("validation")
    finally:
        run_kops(live.emulator, store, ["delete", "instancegroup", "--name", CLUSTER, "tainted", "--yes"], dns=live.dns)
    wait_for(lambda: not [i for i, g in running_instances(live).items() if g == "tainted"], timeout=60)
    assert validate(live, timeout="1m")["validation"]["ok"] is True


def test_pdb_gate_reads_real_disruption_budget(live, tmp_path):
    """A Deployment whose PDB allows no disruption (filled by the real disruption controller) stops the
    roll before anything rolls, naming the budget; relaxed, the gate lets it through."""
    import kubernetes

    api = live.kube.api_client(CLUSTER)
    apps, policy, core = kubernetes.client.AppsV1Api(api), kubernetes.client.PolicyV1Api(api), kubernetes.client.CoreV1Api(api)
    labels = {"app": "web"}
    apps.create_namespaced_deployment(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}},
            },
        },
    )
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}},
        },
    )
    try:
        wait_for(lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 2)
        status = policy.read_namespaced_pod_disruption_budget("web", "default").status
        assert status.disruptions_allowed == 0 and status.expected_pods == 2
        pods = core.list_namespaced_pod("default", label_selector="app=web").items
        worker_nodes = {p.spec.node_name for p in pods}
        before = running_instances(live)
        path = str(tmp_path / "kubeconfig")
        upgraded = live.play(
            [
                {"name": "k", "kopsible.kops.kops_cluster": {"name": CLUSTER, "export_kubeconfig": True, "kubeconfig": path}},
                {"name": "u", "kopsible.kops.kops_cluster": {"name": CLUSTER, "kubernetes_version": "1.35.0", "apply": True}},
                {
                    "name": "roll",
                    "kopsible.kops.rolling_update": {"cluster": CLUSTER, "kubeconfig": path, "instance_group_roles": ["node"]},
                    "ignore_errors": True,
                },
            ]
        )
        roll = upgraded.result("roll")
        assert roll.get("failed") and "web" in roll["msg"], roll.get("msg")
        assert roll["pdb_check"]["checked"] is True, roll["pdb_check"]
        blocking = roll["pdb_check"]["blocking"]
        assert [b["name"] for b in blocking] == ["web"] and blocking[0]["disruptions_allowed"] == 0
        assert sorted(b.split(" on ")[1] for b in blocking[0]["pods"]) == sorted(p.spec.node_name for p in pods)
        assert worker_nodes <= set(roll["pdb_check"]["nodes"])
        assert running_instances(live) == before  # nothing rolled
    finally:
        policy.delete_namespaced_pod_disruption_budget("web", "default")
        apps.delete_namespaced_deployment("web", "default")


def node_ready(core, name):
    node = core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def test_validate_passes_on_gossip_cluster(live):
    """The second guide's gossip cluster (no DNS zone): kops' kubeconfig and validation reach the API through
    the load balancer's DNS name, which the emulator's DNS face answers with the control plane's address."""
    name = "devops23.k8s.local"
    options = {
        "name": name,
        "zones": ["us-east-1a", "us-east-1b"],
        "control_plane_zones": ["us-east-1a"],
        "node_count": 1,
        "node_size": "t3.medium",
        "control_plane_size": "t3.medium",
        "kubernetes_version": "1.34.1",
        "channel": "none",
        "image": live.cluster_options()["image"],
        "ssh_public_key": live.ssh_public_key,
        "apply": True,
    }
    created = live.play([{"name": "c", "kopsible.kops.kops_cluster": options}]).result("c")
    assert not created.get("failed"), created.get("msg")
    try:
        info = live.kube.wait_cluster(name, timeout=120, nodes=2)
        assert info["lb_names"], info
        result = live.play(
            [{"name": "v", "kopsible.kops.kops_cluster": {"name": name, "validate": True, "validation_timeout": "3m"}, "ignore_errors": True}]
        ).result("v")
        assert not result.get("failed"), result.get("msg")
        assert result["validation"]["ok"] is True
        assert sorted(n["role"] for n in result["validation"]["nodes"]) == ["control-plane", "node"]
    finally:
        deleted = live.play([{"name": "d", "kopsible.kops.kops_cluster": {"name": name, "state": "absent"}}]).result("d")
        assert not deleted.get("failed"), deleted.get("msg")
