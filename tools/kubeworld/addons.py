"""The system workloads of a kOps cluster, as kops' channels would apply them: what the kube world creates in every
cluster's real API when its control plane starts, so that ``kops validate cluster`` checks real system pods and a
drain meets the DaemonSet pods kops' drain leaves alone.

kops applies its addons from the state store (``<cluster>/addons/bootstrap-channel.yaml``, by the channels tool on
the control plane); the world does not run them, it creates the part of them that validation and drains see, each
from kops' own manifest (upup/models/cloudup/resources/addons/):

- ``kops-controller``: a DaemonSet on control-plane nodes (node affinity on ``node-role.kubernetes.io/control-plane``
  and ``kops.k8s.io/kops-controller-pki``), priority class ``system-cluster-critical``, host networking, the
  annotation ``dns.alpha.kubernetes.io/internal: kops-controller.internal.<cluster>``
  (kops-controller.addons.k8s.io/k8s-1.16.yaml.template);
- the CNI's agent DaemonSet on every node (tolerates every taint), priority class ``system-node-critical``: ``cilium``
  (networking.cilium.io), ``calico-node``, ``kube-flannel-ds``, ``canal``, ``kindnet``, ``aws-node`` (amazonvpc),
  ``kube-router``, ``kopeio-networking-agent``, by the key of the v1alpha2 cluster spec's ``networking``
  (pkg/apis/kops/v1alpha2/networking.go); none for ``cni``/``external``/``kubenet`` (the user's, or none);
- CoreDNS (kubeDNS provider ``CoreDNS``, kops' default): the ``coredns`` Deployment in kube-system (label
  ``k8s-app: kube-dns``, priority class ``system-cluster-critical``, the toleration ``CriticalAddonsOnly``, so on
  workers only; one replica, the manifest's own default: the coredns-autoscaler that raises it is not modelled) and
  its PodDisruptionBudget ``kube-dns`` (maxUnavailable 50%) (coredns.addons.k8s.io/k8s-1.12.yaml.template).

kube-proxy, a static pod on every node unless ``kubeProxy.enabled: false`` (kops sets that for cilium and kube-router:
upup/pkg/fi/cloudup/new_cluster.go), is a mirror pod of the node agent, like the control plane's static pods.
"""

# spec.networking key -> (DaemonSet name, k8s-app label, image) of the CNI agent kops installs for it
CNI_AGENTS = {
    "cilium": ("cilium", "cilium", "quay.io/cilium/cilium:v1.18.4"),
    "calico": ("calico-node", "calico-node", "docker.io/calico/node:v3.30.4"),
    "flannel": ("kube-flannel-ds", "flannel", "docker.io/flannel/flannel:v0.27.4"),
    "canal": ("canal", "canal", "docker.io/calico/node:v3.30.4"),
    "kindnet": ("kindnet", "kindnet", "docker.io/kindest/kindnetd:v20251031"),
    "amazonvpc": ("aws-node", "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.4"),
    "kuberouter": ("kube-router", "kube-router", "docker.io/cloudnativelabs/kube-router:v2.6.2"),
    "kopeio": ("kopeio-networking-agent", "kopeio-networking-agent", "ghcr.io/kopeio/networking-agent:1.0.20181028"),
}


def _daemonset(name, app, image, priority, tolerations, affinity=None, annotations=None):
    template = {
        "metadata": {"labels": {"k8s-app": app}, "annotations": annotations or {}},
        "spec": {
            "priorityClassName": priority,
            "hostNetwork": True,
            "serviceAccountName": name,
            "tolerations": tolerations,
            "containers": [{"name": name, "image": image}],
        },
    }
    if affinity:
        template["spec"]["affinity"] = affinity
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "labels": {"k8s-app": app}},
        "spec": {"selector": {"matchLabels": {"k8s-app": app}}, "template": template},
    }


def _service_account(name):
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "kube-system"}}


def system_objects(cluster_name, spec):
    """The objects of kops' system addons the world creates for a cluster named ``cluster_name`` (str) with the
    cluster ``spec`` (dict, v1alpha2 as stored): a list of manifests (dicts), ServiceAccounts before the workloads
    that use them (the ServiceAccount admission plugin refuses a pod whose account does not exist)."""
    objects = []
    controller = _daemonset(
        "kops-controller",
        "kops-controller",
        "registry.k8s.io/kops/kops-controller:1.36.2",
        "system-cluster-critical",
        [
            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
            {"key": "node-role.kubernetes.io/master", "operator": "Exists"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
        ],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
                                {"key": "kops.k8s.io/kops-controller-pki", "operator": "Exists"},
                            ]
                        }
                    ]
                }
            }
        },
        annotations={"dns.alpha.kubernetes.io/internal": "kops-controller.internal." + cluster_name},
    )
    objects += [_service_account("kops-controller"), controller]
    networking = spec.get("networking") or {}
    for key, (name, app, image) in CNI_AGENTS.items():
        if key in networking:
            objects += [_service_account(name), _daemonset(name, app, image, "system-node-critical", [{"operator": "Exists"}])]
            break
    provider = ((spec.get("kubeDNS") or {}).get("provider")) or "CoreDNS"
    if provider == "CoreDNS":
        objects += [
            _service_account("coredns"),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
                "spec": {
                    "replicas": 1,
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}},
                    "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    "template": {
                        "metadata": {"labels": {"k8s-app": "kube-dns"}},
                        "spec": {
                            "priorityClassName": "system-cluster-critical",
                            "serviceAccountName": "coredns",
                            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                            "nodeSelector": {"kubernetes.io/os": "linux"},
                            "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.4"}],
                        },
                    },
                },
            },
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "kube-dns", "namespace": "kube-system"},
                "spec": {"selector": {"matchLabels": {"k8s-app": "kube-dns"}}, "maxUnavailable": "50%"},
            },
        ]
    return objects


def kube_proxy_enabled(spec):
    """Whether kops runs kube-proxy (a static pod on every node) for the cluster ``spec`` (dict): unless
    ``kubeProxy.enabled`` is false (pkg/model/components/kubeproxy.go; new_cluster.go sets it so for cilium)."""
    return (spec.get("kubeProxy") or {}).get("enabled") is not False


def create(api_client, objects):
    """Create each of ``objects`` (manifests) through ``api_client`` (a kubernetes ApiClient); one that exists
    already is left as it is. Returns the ``kind/name`` of those created. Raises ApiException on any other refusal."""
    from kubernetes import client

    calls = {
        "ServiceAccount": client.CoreV1Api(api_client).create_namespaced_service_account,
        "DaemonSet": client.AppsV1Api(api_client).create_namespaced_daemon_set,
        "Deployment": client.AppsV1Api(api_client).create_namespaced_deployment,
        "PodDisruptionBudget": client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget,
    }
    created = []
    for obj in objects:
        kind, meta = obj["kind"], obj["metadata"]
        if kind not in calls:
            raise ValueError("no create call for kind %s" % kind)
        try:
            calls[kind](meta.get("namespace", "kube-system"), obj)
            created.append("%s/%s" % (kind, meta["name"]))
        except client.ApiException as exc:
            if exc.status != 409:
                raise
    return created
