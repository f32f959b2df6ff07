"""Pure logic of the kube world (tools/kubeworld): kops keysets, certificates issued by the cluster CA,
the NodeupConfigHash in kops' user data in each of its shapes."""

import base64
import gzip
import hashlib
import json
import os
import sys
import time
from types import SimpleNamespace

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))

from kubeworld import (
    node_agent,  # noqa: E402
    pki,  # noqa: E402
)
from kubeworld.node_agent import user_data_hash  # noqa: E402


def keyset_yaml(pair, key_id="7432109876543210987", extra_old=True):
    """A Keyset document in the shape kops writes (pkg/apis/kops/v1alpha2/keyset.go: primaryId, keys[])."""
    keys = []
    if extra_old:
        old = pki.self_signed_ca("old-ca")
        keys.append({"id": "1111", "publicMaterial": base64.b64encode(old.cert_pem).decode(), "privateMaterial": base64.b64encode(old.key_pem).decode()})
    keys.append({"id": key_id, "publicMaterial": base64.b64encode(pair.cert_pem).decode(), "privateMaterial": base64.b64encode(pair.key_pem).decode()})
    import yaml

    return yaml.safe_dump(
        {
            "apiVersion": "kops.k8s.io/v1alpha2",
            "kind": "Keyset",
            "metadata": {"name": "kubernetes-ca"},
            "spec": {"type": "Keypair", "primaryId": key_id, "keys": keys},
        }
    )


def test_parse_keyset_takes_the_primary_key():
    ca = pki.self_signed_ca("kubernetes-ca")
    parsed = pki.parse_keyset(keyset_yaml(ca))
    assert parsed.cert_pem == ca.cert_pem and parsed.key_pem == ca.key_pem


def test_parse_keyset_without_private_material_is_refused():
    ca = pki.self_signed_ca("kubernetes-ca")
    text = keyset_yaml(ca, extra_old=False).replace("privateMaterial", "otherMaterial")
    with pytest.raises(ValueError, match="kubernetes-ca"):
        pki.parse_keyset(text)


def test_serving_certificate_is_signed_by_the_cluster_ca_with_the_api_names():
    ca = pki.self_signed_ca("kubernetes-ca")
    serving = pki.issue(
        ca, "kubernetes-master", server=True, dns_names=["api.c.example.org", "api.internal.c.example.org"], ip_addresses=["127.1.0.1", "100.64.0.1"]
    )
    ca.cert.public_key().verify(serving.cert.signature, serving.cert.tbs_certificate_bytes, ec.ECDSA(serving.cert.signature_hash_algorithm))
    sans = serving.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["api.c.example.org", "api.internal.c.example.org"]
    assert [str(a) for a in sans.get_values_for_type(x509.IPAddress)] == ["127.1.0.1", "100.64.0.1"]


def test_client_certificate_carries_user_and_groups_and_an_rsa_ca_signs_it():
    # kops' CA keys are RSA (pkg/pki); the issuer must sign with whatever key type the CA has
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = pki.self_signed_ca("kubernetes-ca")
    from cryptography.hazmat.primitives import serialization

    rsa_ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca.cert.subject)
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(ca.cert.not_valid_before_utc)
        .not_valid_after(ca.cert.not_valid_after_utc)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, __import__("cryptography.hazmat.primitives.hashes", fromlist=["SHA256"]).SHA256())
    )
    rsa_ca = pki.Keypair(
        rsa_ca_cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    client = pki.issue(rsa_ca, "kopsible-node-agent", organizations=["system:masters"])
    key.public_key().verify(client.cert.signature, client.cert.tbs_certificate_bytes, padding.PKCS1v15(), client.cert.signature_hash_algorithm)
    subject = {a.oid._name: a.value for a in client.cert.subject}
    assert subject == {"organizationName": "system:masters", "commonName": "kopsible-node-agent"}


KUBE_ENV = "CloudProvider: aws\nClusterName: c.example.org\nInstanceGroupName: nodes-us-east-1a\nInstanceGroupRole: Node\nNodeupConfigHash: %s\n"


def script(kube_env, compress=False):
    """The tail of kops' nodeup script (pkg/model/resources/nodeup.go) in both of its forms."""
    if compress:
        packed = base64.b64encode(gzip.compress(kube_env.encode())).decode()
        return '#!/bin/bash\nset -o errexit\necho "%s" | base64 -d | gzip -d > conf/kube_env.yaml\ndownload-release\n' % packed
    return "#!/bin/bash\ncat > conf/kube_env.yaml << '__EOF_KUBE_ENV'\n%s__EOF_KUBE_ENV\ndownload-release\n" % kube_env


@pytest.mark.parametrize("compress", [False, True])
def test_user_data_hash_plain_and_compressed(compress):
    digest = base64.b64encode(hashlib.sha256(b"KubernetesVersion: 1.34.1\n").digest()).decode()
    data = base64.b64encode(script(KUBE_ENV % digest, compress).encode()).decode()
    assert user_data_hash(data) == digest


def test_user_data_hash_in_a_mime_multipart_with_additional_user_data():
    digest = "q6P1n0v3xY4m2aTq3Zk5d1W7r9s8t0u2v4w6x8y0z1A="
    part = base64.b64encode(script(KUBE_ENV % digest).encode()).decode()
    mime = (
        'Content-Type: multipart/mixed; boundary="MIMEBOUNDARY"\nMIME-Version: 1.0\n\n--MIMEBOUNDARY\n'
        'Content-Disposition: attachment; filename="nodeup.sh"\nContent-Transfer-Encoding: base64\n'
        "Content-Type: text/x-shellscript\nMime-Version: 1.0\n\n%s\n--MIMEBOUNDARY\n"
        'Content-Disposition: attachment; filename="myscript.sh"\nContent-Transfer-Encoding: 7bit\n'
        "Content-Type: text/x-shellscript\n\n#!/bin/sh\necho hello\n--MIMEBOUNDARY--\n" % part
    )
    assert user_data_hash(base64.b64encode(mime.encode()).decode()) == digest


def test_user_data_without_a_hash():
    assert user_data_hash(base64.b64encode(b"#!/bin/sh\necho no kops here\n").decode()) is None
    assert user_data_hash(None) is None


@pytest.mark.parametrize(
    "kubelet, api_servers, refused",
    [
        ("v1.34.1", ["v1.34.1", "v1.34.1", "v1.34.1"], None),
        ("v1.34.1", ["v1.35.0", "v1.34.1", "v1.34.1"], None),  # mid control-plane roll: the oldest decides
        ("v1.34.9", ["v1.34.1"], None),  # the policy is on minor versions
        ("v1.35.0", ["v1.35.0", "v1.34.1", "v1.34.1"], "is newer than kube-apiserver v1.34"),  # the issue's replaced worker
        ("v1.32.4", ["v1.35.0"], None),  # three minors older: allowed
        ("v1.31.0", ["v1.35.0"], "more than 3 minor versions older than kube-apiserver v1.35"),
        ("v1.35.0", [], None),  # no API server registered yet
        ("v0.0.0-unknown", ["v1.34.1"], None),  # untraced: counted apart, not judged
    ],
)
def test_worker_kubelets_follow_the_version_skew_policy(kubelet, api_servers, refused):
    """kubernetes.io/releases/version-skew-policy#kubelet: not newer than kube-apiserver, at most three minors older."""
    problem = node_agent.skew_problem(kubelet, api_servers)
    assert (problem is None) == (refused is None), problem
    if refused:
        assert refused in problem and "version-skew policy" in problem


def test_a_refused_kubelet_is_not_ready_and_says_why():
    agent = node_agent.NodeAgent("c", None, None, None, None)
    inst = {"id": "i-1", "ip": "10.0.0.1", "dns": "ip-10-0-0-1.ec2.internal"}
    status = agent.node_status(inst, True, {}, "v1.35.0", refused="kubelet v1.35.0 is newer than kube-apiserver v1.34")
    ready = [c for c in status["conditions"] if c["type"] == "Ready"][0]
    assert (ready["status"], ready["reason"]) == ("False", node_agent.SKEW_REASON) and "newer than kube-apiserver" in ready["message"]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.35.0"


def answer(items):
    """A list call's answer as the API server sends it and the client returns it with ``_preload_content=False``:
    JSON text in ``.data``; ``items`` are dicts or client models (turned into JSON as the client would send them)."""
    from kubernetes.client import ApiClient

    return SimpleNamespace(data=json.dumps({"kind": "List", "items": [ApiClient().sanitize_for_serialization(i) for i in items]}))


class RecordingCore:
    """The few CoreV1Api calls the node agent's removal and pods passes make, recorded (no cluster)."""

    def __init__(self, nodes):
        self.nodes, self.calls = nodes, []

    def list_node(self, **kw):
        return answer([{"metadata": {"name": n, "uid": "uid-" + n, "annotations": {"kopsible.dev/instance-id": "i-" + n}}} for n in self.nodes])

    def list_pod_for_all_namespaces(self, _preload_content=True, **kw):
        return answer([]) if _preload_content is False else SimpleNamespace(items=[])

    def delete_node(self, name):
        self.calls.append(("delete_node", name))
        self.nodes.remove(name)

    def create_namespaced_pod(self, namespace, body):
        self.calls.append(("create_namespaced_pod", body["metadata"]["name"]))
        meta = SimpleNamespace(name=body["metadata"]["name"], namespace=namespace, uid="uid-" + body["metadata"]["name"])
        return SimpleNamespace(
            metadata=meta, spec=SimpleNamespace(host_network=True, containers=[SimpleNamespace(name="c", image="i")]), status=SimpleNamespace(start_time=None)
        )

    def patch_namespaced_pod_status(self, name, namespace, body):
        self.calls.append(("patch_namespaced_pod_status", name, body["status"]["phase"]))

    def create_node(self, body):
        self.calls.append(("create_node", body))
        self.nodes.append(body["metadata"]["name"])
        return SimpleNamespace(metadata=SimpleNamespace(name=body["metadata"]["name"], uid="uid-" + body["metadata"]["name"]))

    def patch_node_status(self, name, body):
        self.calls.append(("patch_node_status", name))


def test_the_pods_pass_never_recreates_mirror_pods_of_a_node_just_removed():
    """The pods loop works from the Nodes loop's previous `wanted`: a control-plane Node removed in between (its
    instance terminated by a rolling update) must not get its mirror pods back; they stayed Pending, bound to no Node,
    until the pod garbage collector removed them, and kops validate failed on them for a minute (seen in a roll of
    control-plane-us-east-1b: "system-cluster-critical pod kube-apiserver-ip-172-20-64-4... is pending", twice)."""
    name = "ip-172-20-64-4.ec2.internal"
    core = RecordingCore([name])
    agent = node_agent.NodeAgent("c", core, None, None, SimpleNamespace(cluster={}, groups={}))
    agent.store_refreshed = time.time()
    inst = {"id": "i-" + name, "ip": "172.20.64.4", "dns": name, "group": "control-plane-us-east-1b"}
    stale = {name: (inst, "ControlPlane", True)}  # what the pods loop copied before the instance was terminated
    agent.node_uids = {name: "uid-" + name}
    agent.instances = lambda: []  # the instance is terminated: the Nodes loop removes its Node
    assert agent.step_nodes() == {} and ("delete_node", name) in core.calls
    agent.reconcile_pods(stale, {})
    assert [c for c in core.calls if c[0] == "create_namespaced_pod"] == []


def test_mirror_pods_are_created_running_in_one_pass():
    """A control-plane Node just registered gets its three mirror pods and kube-proxy's (the cluster spec leaves it
    on), each Running at once (kops validate looks for them right after a roll's interval; a pass later cost a 30 s
    retry: "control-plane node ... is missing kube-apiserver pod")."""
    name = "ip-172-20-0-7.ec2.internal"
    core = RecordingCore([name])
    agent = node_agent.NodeAgent("c", core, None, None, SimpleNamespace(kubernetes_version=lambda: "1.35.0", cluster={"spec": {}}))
    inst = {"id": "i-7", "ip": "172.20.0.7", "dns": name, "group": "control-plane-us-east-1a"}
    agent.wanted = {name: (inst, "ControlPlane", True)}
    agent.node_uids = {name: "uid-" + name}
    agent.reconcile_pods(dict(agent.wanted), {})
    made = ["%s-%s" % (c, name) for c in node_agent.CONTROL_PLANE_PODS + ("kube-proxy",)]
    assert [c[1] for c in core.calls if c[0] == "create_namespaced_pod"] == made
    assert [c[1:] for c in core.calls if c[0] == "patch_namespaced_pod_status"] == [(m, "Running") for m in made]


def test_a_new_node_registers_with_its_kubelet_version_and_conditions():
    """A kubelet registers its Node with status (pkg/kubelet/kubelet_node_status.go initialNode sets nodeInfo and
    conditions; the Node strategy keeps status on create). Created bare and patched after, a Node was once seen with
    an empty kubeletVersion by a reader between the two calls (the upgrade tests' skew watchers, in CI)."""
    name = "ip-172-20-0-7.ec2.internal"
    core = RecordingCore([])
    leases = SimpleNamespace(patch_namespaced_lease=lambda *a: None)
    store = SimpleNamespace(groups={"nodes-us-east-1a": {"role": "Node"}}, kubernetes_version=lambda: "1.34.1")
    agent = node_agent.NodeAgent("c", core, leases, None, store)
    agent.store_refreshed = time.time()
    agent.knobs = lambda: {}
    inst = {"id": "i-7", "ip": "172.20.0.7", "dns": name, "group": "nodes-us-east-1a", "zone": "us-east-1a", "type": "t3.medium", "launch": None}
    agent.instances = lambda: [inst]
    agent.kubelet_version = lambda inst: "1.34.1"
    assert list(agent.step_nodes()) == [name]
    created = [c[1] for c in core.calls if c[0] == "create_node"]
    assert [b["status"]["nodeInfo"]["kubeletVersion"] for b in created] == ["v1.34.1"]
    assert [c["status"] for c in created[0]["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    assert [c for c in core.calls if c[0] == "patch_node_status"] == []


def test_a_node_the_api_server_refuses_is_left_out_and_the_refusal_kept():
    """The API server validates a Node (pkg/apis/core/validation/validation.go validateNodeTaints: "taints must be
    unique by key and effect pair"); a kubelet whose registration is refused logs it and retries: no Node, no lease,
    no error counted, the message kept."""
    from kubernetes.client.rest import ApiException

    class Refusing(RecordingCore):
        def create_node(self, body):
            exc = ApiException(status=422, reason="Unprocessable Entity")
            exc.body = json.dumps(
                {
                    "message": 'Node "%s" is invalid: spec.taints[1]: Duplicate value: ... taints must be unique by key and effect pair'
                    % body["metadata"]["name"]
                }
            )
            raise exc

    name = "ip-172-20-0-8.ec2.internal"
    leases = SimpleNamespace(patch_namespaced_lease=lambda *a: pytest.fail("a refused Node has no lease"))
    store = SimpleNamespace(
        groups={"nodes-us-east-1a": {"role": "Node", "taints": ["team=a:NoExecute", "team=b:NoExecute"]}}, kubernetes_version=lambda: "1.34.1"
    )
    agent = node_agent.NodeAgent("c", Refusing([]), leases, None, store)
    agent.store_refreshed = time.time()
    agent.knobs = lambda: {}
    agent.instances = lambda: [
        {"id": "i-8", "ip": "172.20.0.8", "dns": name, "group": "nodes-us-east-1a", "zone": "us-east-1a", "type": "t3.medium", "launch": None}
    ]
    agent.kubelet_version = lambda inst: "1.34.1"
    assert agent.step_nodes() == {}
    assert "taints must be unique by key and effect pair" in agent.registration_refusals[name]


@pytest.mark.parametrize("listing", ["list_objects_v2", "list_object_versions"])
def test_a_state_store_deleted_between_its_reads_keeps_what_the_agent_had(listing):
    """A bucket deleted after the cluster spec was read (a teardown, or the emulator reset between tests) answers
    NoSuchBucket to the listings that follow; the agent keeps its groups and versions, as a failed nodeup read is
    retried on the next pass, instead of counting an error of the state-store loop (seen in a full run)."""
    import io

    import boto3
    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    s3 = boto3.session.Session().client("s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    body = b"spec: {kubernetesVersion: 1.35.0}\n"
    view = node_agent.StoreView(lambda: s3, "store", "c.example.org")
    view.groups, view.hash_versions = {"nodes": {"role": "Node"}}, {"h": "1.34.0"}
    with Stubber(s3) as stub:
        stub.add_response("get_object", {"Body": StreamingBody(io.BytesIO(body), len(body))}, {"Bucket": "store", "Key": "c.example.org/config"})
        if listing == "list_object_versions":
            stub.add_response("list_objects_v2", {"Contents": [], "KeyCount": 0}, {"Bucket": "store", "Prefix": "c.example.org/instancegroup/"})
        stub.add_client_error(listing, service_error_code="NoSuchBucket", service_message="The specified bucket does not exist", http_status_code=404)
        view.refresh()
        stub.assert_no_pending_responses()
    assert view.cluster == {"spec": {"kubernetesVersion": "1.35.0"}}
    assert view.groups == {"nodes": {"role": "Node"}} and view.hash_versions == {"h": "1.34.0"}


# a cluster whose spec turns kube-proxy off (kops' default with cilium), so the agent makes no mirror pods on workers
CILIUM_STORE = SimpleNamespace(cluster={"spec": {"networking": {"cilium": {}}, "kubeProxy": {"enabled": False}}}, groups={})


def terminating_pod(grace, containers, name="web-1"):
    """A V1Pod being deleted with ``grace`` seconds (its deletionGracePeriodSeconds), as the API server returns it."""
    import datetime

    from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec

    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=grace)
    meta = V1ObjectMeta(name=name, namespace="default", deletion_timestamp=when, deletion_grace_period_seconds=grace)
    return V1Pod(metadata=meta, spec=V1PodSpec(containers=containers, termination_grace_period_seconds=grace))


@pytest.mark.parametrize(
    "pre_stop, knobs, expected",
    [
        (None, {}, 0.0),  # a process that exits on SIGTERM: the kubelet deletes the pod at once
        ({"sleep": {"seconds": 20}}, {}, 20.0),  # the kubelet's own sleep action
        ({"exec": {"command": ["sleep", "45"]}}, {}, 45.0),
        ({"exec": {"command": ["/bin/sh", "-c", "sleep 15"]}}, {}, 15.0),
        ({"exec": {"command": ["/bin/sh", "-c", "nginx -s quit"]}}, {}, 0.0),  # returns at once here
        ({"sleep": {"seconds": 600}}, {}, 60.0),  # the grace period ends it: SIGKILL
        ({"sleep": {"seconds": 10}}, {"pod_stop_seconds": {"default/web-*": 30}}, 40.0),  # then SIGTERM ignored a while
        (None, {"pod_stop_seconds": {"default/web-*": 600}}, 60.0),
        (None, {"pod_stop_seconds": {"kube-system/*": 600}}, 0.0),
    ],
)
def test_a_terminating_pod_stops_after_its_pre_stop_hook_and_sigterm_within_its_grace_period(pre_stop, knobs, expected):
    """pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer: preStop, SIGTERM, SIGKILL at the grace period's end."""
    from kubernetes import client

    api = client.ApiClient()
    lifecycle = api._ApiClient__deserialize({"preStop": pre_stop}, "V1Lifecycle") if pre_stop else None
    containers = [client.V1Container(name="web", image="registry.k8s.io/pause:3.10", lifecycle=lifecycle), client.V1Container(name="side", image="x")]
    assert node_agent.stop_seconds(terminating_pod(60, containers), knobs) == expected


def test_a_terminating_pod_is_deleted_only_once_its_containers_stopped():
    """The pods pass leaves a pod whose preStop hook still runs, and deletes it with grace 0 once it is over."""
    import datetime

    from kubernetes import client

    lifecycle = client.V1Lifecycle(pre_stop=client.V1LifecycleHandler(sleep=client.V1SleepAction(seconds=30)))
    pod = terminating_pod(60, [client.V1Container(name="web", image="x", lifecycle=lifecycle)])
    pod.spec.node_name = "ip-10-0-0-1.ec2.internal"
    deleted = []
    core = SimpleNamespace(
        list_pod_for_all_namespaces=lambda **kw: answer([pod]),
        delete_namespaced_pod=lambda name, namespace, grace_period_seconds: deleted.append((name, grace_period_seconds)),
    )
    agent = node_agent.NodeAgent("c.k8s.local", core, None, None, CILIUM_STORE)
    wanted = {pod.spec.node_name: ({"ip": "10.0.0.1"}, "Node", True)}
    agent.reconcile_pods(wanted, {})
    assert deleted == []  # evicted just now: its preStop hook runs 30 s
    pod.metadata.deletion_timestamp -= datetime.timedelta(seconds=31)  # 31 s later
    agent.reconcile_pods(wanted, {})
    assert deleted == [("web-1", 0)]


def test_a_new_pod_is_ready_only_after_its_readiness_delay():
    """Knob ``pod_ready_delay``: Running at once, Ready once the delay since its start has passed."""
    import datetime

    from kubernetes import client

    now = datetime.datetime.now(datetime.timezone.utc)
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="cilium-x1", namespace="kube-system", uid="u1"),
        spec=client.V1PodSpec(node_name="n1", containers=[client.V1Container(name="c", image="x")]),
        status=client.V1PodStatus(phase="Running", start_time=now, conditions=[client.V1PodCondition(type="Ready", status="True")]),
    )
    written = []
    core = SimpleNamespace(
        list_pod_for_all_namespaces=lambda **kw: answer([pod]),
        patch_namespaced_pod_status=lambda name, namespace, body: written.append(body["status"]["conditions"][-1]["status"]),
    )
    agent = node_agent.NodeAgent("c.k8s.local", core, None, None, CILIUM_STORE)
    wanted = {"n1": ({"ip": "10.0.0.1"}, "Node", True)}
    knobs = {"pod_ready_delay": {"kube-system/cilium-*": 20}}
    agent.reconcile_pods(wanted, knobs)
    assert written == ["False"]
    pod.status.start_time = now - datetime.timedelta(seconds=21)
    pod.status.conditions = [client.V1PodCondition(type="Ready", status="False")]
    agent.reconcile_pods(wanted, knobs)
    assert written == ["False", "True"]


@pytest.mark.parametrize(
    "spec, on",
    [({}, True), ({"kubeProxy": {"enabled": True}}, True), ({"networking": {"cilium": {"enableNodePort": True}}, "kubeProxy": {"enabled": False}}, False)],
)
def test_workers_run_kube_proxy_unless_the_spec_turns_it_off(spec, on):
    """kops runs kube-proxy as a static pod on every node unless spec.kubeProxy.enabled is false (new_cluster.go sets
    that for cilium); its mirror pod is system-node-critical, the control plane's system-cluster-critical."""
    agent = node_agent.NodeAgent("c", None, None, None, SimpleNamespace(cluster={"spec": spec}, kubernetes_version=lambda: "1.35.0"))
    assert agent.static_pods("Node") == (["kube-proxy"] if on else [])
    assert agent.static_pods("ControlPlane") == list(node_agent.CONTROL_PLANE_PODS) + (["kube-proxy"] if on else [])
    assert agent.static_pod("kube-proxy", "n1", "10.0.0.1")["spec"]["priorityClassName"] == "system-node-critical"
    assert agent.static_pod("kube-apiserver", "n1", "10.0.0.1")["spec"]["priorityClassName"] == "system-cluster-critical"


def test_system_addons_follow_the_cluster_spec():
    """kops-controller's DaemonSet always; the CNI agent of the spec's networking; CoreDNS and its budget unless the
    spec's kubeDNS provider is another; ServiceAccounts before the workloads that use them."""
    from kubeworld import addons

    def names(spec):
        return [(o["kind"], o["metadata"]["name"]) for o in addons.system_objects("c.example.com", spec)]

    cilium = names({"networking": {"cilium": {}}})
    assert cilium == [
        ("ServiceAccount", "kops-controller"),
        ("DaemonSet", "kops-controller"),
        ("ServiceAccount", "cilium"),
        ("DaemonSet", "cilium"),
        ("ServiceAccount", "coredns"),
        ("Deployment", "coredns"),
        ("PodDisruptionBudget", "kube-dns"),
    ]
    assert ("DaemonSet", "aws-node") in names({"networking": {"amazonvpc": {}}})
    assert [n for k, n in names({"networking": {"cni": {}}, "kubeDNS": {"provider": "KubeDNS"}}) if k != "ServiceAccount"] == ["kops-controller"]
    controller = addons.system_objects("c.example.com", {})[1]
    template = controller["spec"]["template"]
    assert template["metadata"]["annotations"] == {"dns.alpha.kubernetes.io/internal": "kops-controller.internal.c.example.com"}
    assert template["spec"]["priorityClassName"] == "system-cluster-critical"


def test_an_api_endpoint_relays_to_the_server_and_closing_it_cuts_and_refuses():
    """Issue 30: the endpoint of a control-plane instance relays TCP to the cluster's one API server; when the
    instance goes, the endpoint's open connections are cut and new ones refused (tools/kubeworld/endpoints.py)."""
    import socket
    import threading

    from kubeworld.endpoints import Forwarder

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def echo():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(1024), b"")], daemon=True).start()

    threading.Thread(target=echo, daemon=True).start()
    forwarder = Forwarder("127.0.0.2", "127.0.0.1", port=port)
    try:
        client = socket.create_connection(("127.0.0.2", port), timeout=5)
        client.sendall(b"GET /healthz")
        assert client.recv(1024) == b"GET /healthz"
        forwarder.close()
        client.settimeout(5)
        try:
            cut = client.recv(1024) == b""
        except OSError:
            cut = True
        assert cut
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", port), timeout=2)
    finally:
        forwarder.close()
        server.close()


def test_a_list_cache_makes_a_model_once_per_version_of_an_object():
    """ListCache: an object the API server answers again with the same uid and resourceVersion is the same model; a
    new resourceVersion (any write) or a new object is read afresh; an object gone is forgotten; an object without a
    resourceVersion is always read afresh."""
    pods = [
        {"metadata": {"name": "a", "namespace": "default", "uid": "u-a", "resourceVersion": "10"}, "status": {"phase": "Pending"}},
        {"metadata": {"name": "b", "namespace": "default", "uid": "u-b", "resourceVersion": "11"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "c", "namespace": "default", "uid": "u-c"}, "status": {"phase": "Running"}},
    ]
    calls = []

    def list_pods(**kwargs):
        calls.append(kwargs)
        return answer(pods)

    cache = node_agent.ListCache(list_pods, "V1Pod")
    first = cache.items()
    assert [(p.metadata.name, p.status.phase) for p in first] == [("a", "Pending"), ("b", "Running"), ("c", "Running")]
    assert calls == [{"_preload_content": False}]
    pods[0] = {"metadata": {"name": "a", "namespace": "default", "uid": "u-a", "resourceVersion": "12"}, "status": {"phase": "Running"}}
    second = cache.items()
    assert second[0] is not first[0] and second[0].status.phase == "Running"  # written since: read afresh
    assert second[1] is first[1]  # unchanged: the same model
    assert second[2] is not first[2] and second[2].status.phase == "Running"  # no resourceVersion: never reused
    del pods[1]
    assert [p.metadata.name for p in cache.items()] == ["a", "c"] and ("u-b", "11") not in cache.models
