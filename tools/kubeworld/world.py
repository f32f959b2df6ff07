"""A real Kubernetes control plane behind every applied kops cluster of one emulator.

:class:`KubeWorld` watches the emulator's S3 buckets for kops state stores. A cluster whose CA keyset
exists (``<store>/<cluster>/pki/private/kubernetes-ca/keyset.yaml``, written by
``kops update cluster --yes``) gets a :class:`control_plane.ControlPlane` on a loopback address of its
own and a :class:`node_agent.NodeAgent`; a cluster whose ``config`` is gone (``kops delete cluster``)
has them stopped. It also plays kOps' dns-controller: the cluster's API records in the emulator's
Route53 (``api.<cluster>``, ``api.internal.<cluster>``), which kops creates with its placeholder
address 203.0.113.123 (pkg/model/dns.go... upup/pkg/fi/cloudup/dns.go), are kept at the addresses of the
cluster's API endpoints, one per registered control-plane instance (:mod:`.endpoints`), as dns-controller keeps
them at the control-plane nodes' addresses in AWS; and
``kops-controller.internal.<cluster>`` (same placeholder) to the private addresses of the registered
control-plane nodes, kept so through a roll, as dns-controller keeps it from kops-controller's pods.

It also plays kops' channels for the system addons that validation and drains see (:mod:`.addons`: kops-controller's
and the CNI's DaemonSets, CoreDNS and its PodDisruptionBudget), created once when the control plane starts.

It also plays etcd-manager's backups (:mod:`.etcd_manager`): when a cluster's control plane starts and then
every ``backupInterval``, a backup of ``main`` and ``events`` in each one's backup store, as etcd-manager
writes them.

For clusters with an API load balancer (gossip ``*.k8s.local``, ``dns: none``, or any cluster with
``api.loadBalancer``, internal ones included) kops' kubeconfig and ``kops validate cluster`` connect to the
load balancer's DNS name (pkg/kubeconfig/create_kubecfg.go, ``GetApiIngressStatus``): the world lists those
names in ``world.json`` and the emulator's DNS face answers them with the control plane's address
(tools/harness/route53_dns.py).

Partitions: S3 and Route53 keep one state per AWS partition (``aws``, ``aws-cn``, ``aws-us-gov``), as in
AWS, where a bucket or hosted zone made with China credentials is not listed with global ones. The world
lists the state stores of every partition through a region of it (``GLOBAL_REGION`` of tools/harness/snapshot.py), reads each
store through its own partition, and plays dns-controller in the hosted zones of the cluster's partition.

State: ``state_dir/world.json`` (clusters, addresses, start times, memory, errors), each cluster's
files and logs under ``state_dir/<cluster>/``, knobs in ``state_dir/<cluster>/knobs.json``.
"""

import collections
import json
import os
import socket
import threading
import time

from harness.snapshot import GLOBAL_REGION, partition_of

from . import addons, pki
from .control_plane import ControlPlane, ControlPlaneError
from .endpoints import Forwarder
from .etcd_manager import EtcdManager
from .node_agent import NodeAgent, StoreView, aws_generation

CA_SUFFIX = "/pki/private/kubernetes-ca/keyset.yaml"
SA_SUFFIX = "/pki/private/service-account/keyset.yaml"
PLACEHOLDER = "203.0.113.123"  # kops' placeholder for API records until dns-controller runs


def partition_region(region):
    """The region through which the global services (S3's bucket list, Route53) of ``region``'s partition are
    reached (str): cn-north-1 for ``cn-*``, us-gov-west-1 for ``us-gov-*``, us-east-1 for any other region or None."""
    return GLOBAL_REGION[partition_of(region or "us-east-1")]


class Cluster(object):
    """A running cluster of the world: its control plane, node agent and store view."""

    def __init__(self, name, bucket, prefix, address, control_plane, agent, store, s3_region="us-east-1"):
        self.name, self.bucket, self.prefix, self.address = name, bucket, prefix, address
        self.s3_region = s3_region
        self.control_plane, self.agent, self.store = control_plane, agent, store
        self.lb_names = []
        self.dns_updates = []
        self.kops_controller_ips = None  # what kops-controller.internal.<cluster> holds after the last pass (None: no such record)
        self.etcd_manager = None
        self.started = time.time()
        self.addons = None  # the system objects created in its API (addons.create), None until they are
        self.dns_read_at = None  # (emulator write count, endpoints, control-plane addresses) of the last dns-controller pass
        self.endpoints = {}  # {instance id: endpoints.Forwarder} of the control-plane instances serving the API


class KubeWorld(object):
    """Control planes for the clusters in the emulator at ``aws`` (``aws(service, region=None)`` -> boto3 client).

    :param prefix: the first three octets of the addresses to use (``127.X.Y``), one per cluster.
    :param state_dir: where files, logs and ``world.json`` go.
    :param partitions: a callable returning the partitions (``aws``, ``aws-cn``...) the emulator holds state in; only
        those are listed for state stores (listing another partition's buckets would make the emulator hold state
        there, which a test's before/after snapshots would see appear). None: every partition.
    """

    def __init__(self, aws, prefix, state_dir, period=1.0, partitions=None):
        self.aws, self.prefix, self.state_dir, self.period = aws, prefix, state_dir, period
        self._found, self._discovered_at = {}, None  # the last discovery and the emulator's write count then
        self.discovery_partial = False
        self.partitions = partitions
        self.clusters = {}
        self.failed = {}
        # every error a node agent or this loop counted since the world started, clusters since stopped included:
        # ``{"<cluster>: <loop>: <error>": count}`` (world.json ``errors``)
        self.errors = collections.Counter()
        self.stopping = threading.Event()
        self.thread = None
        os.makedirs(state_dir, exist_ok=True)

    # -- discovery -------------------------------------------------------------------------------------
    def discover(self):
        """Clusters with a CA keyset and a config in any bucket of any partition:
        ``{(bucket, prefix): (name, region of the bucket's partition)}``. Sets :attr:`discovery_partial` when a
        bucket could not be listed (the next pass discovers again whatever the emulator's write count)."""
        found = {}
        self.discovery_partial = False
        partitions = self.partitions() if self.partitions else sorted(GLOBAL_REGION)
        for region in [GLOBAL_REGION[p] for p in partitions if p in GLOBAL_REGION]:
            s3 = self.aws("s3", region)
            for bucket in s3.list_buckets().get("Buckets", []):
                keys = set()
                try:
                    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"]):
                        keys.update(obj["Key"] for obj in page.get("Contents", []))
                except Exception:
                    self.discovery_partial = True
                    continue
                for key in keys:
                    if key.endswith(CA_SUFFIX):
                        prefix = key[: -len(CA_SUFFIX)]
                        if prefix + "/config" in keys and prefix + SA_SUFFIX in keys:
                            found[(bucket["Name"], prefix)] = (prefix.rsplit("/", 1)[-1], region)
        return found

    def _address(self):
        used = {c.address for c in self.clusters.values()} | {f.address for c in self.clusters.values() for f in c.endpoints.values()}
        for n in range(1, 255):
            address = "%s.%d" % (self.prefix, n)
            if address in used:
                continue
            with socket.socket() as sock:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((address, 443))
                except OSError:
                    continue
            return address
        raise RuntimeError("no free address in %s.0/24" % self.prefix)

    # -- start / stop one cluster --------------------------------------------------------------------
    def start_cluster(self, bucket, prefix, name, s3_region="us-east-1"):
        """Start the control plane and node agent of ``name``, whose state store is ``bucket``/``prefix`` in the
        partition of ``s3_region``; returns the :class:`Cluster`."""
        import kubernetes

        s3 = self.aws("s3", s3_region)
        ca = pki.parse_keyset(s3.get_object(Bucket=bucket, Key=prefix + CA_SUFFIX)["Body"].read())
        sa = pki.parse_keyset(s3.get_object(Bucket=bucket, Key=prefix + SA_SUFFIX)["Body"].read())
        store = StoreView(lambda: self.aws("s3", s3_region), bucket, prefix, generation=lambda: aws_generation(self.aws))
        store.refresh()
        networking = (store.cluster.get("spec") or {}).get("networking") or {}
        service_range = networking.get("serviceClusterIPRange") or (store.cluster.get("spec") or {}).get("serviceClusterIPRange")
        address = self._address()
        workdir = os.path.join(self.state_dir, name)
        control_plane = ControlPlane(name, address, workdir, ca, sa, service_range).start()
        client = kubernetes.config.new_client_from_config(config_file=control_plane.admin_kubeconfig)
        agent = NodeAgent(
            name,
            kubernetes.client.CoreV1Api(client),
            kubernetes.client.CoordinationV1Api(client),
            self.aws,
            store,
            knobs_path=os.path.join(workdir, "knobs.json"),
        ).start()
        cluster = Cluster(name, bucket, prefix, address, control_plane, agent, store, s3_region)
        cluster.etcd_manager = EtcdManager(lambda: self.aws("s3", s3_region), bucket, prefix, "http://%s:2379" % address)
        self.clusters[(bucket, prefix)] = cluster
        self.play_etcd_manager(cluster)  # etcd-manager backs up when its etcd cluster is up, before anyone waits on it
        self.play_channels(cluster)
        return cluster

    def stop_cluster(self, key):
        cluster = self.clusters.pop(key)
        for forwarder in cluster.endpoints.values():
            forwarder.close()
        cluster.agent.stop()
        cluster.control_plane.stop()
        self.errors.update({"%s: %s" % (cluster.name, e): n for e, n in cluster.agent.error_log.items()})

    # -- channels --------------------------------------------------------------------------------------
    def play_channels(self, cluster):
        """Create kops' system addons in the cluster's API once (:mod:`.addons`), as kops' channels apply them when
        the control plane comes up. A refusal is retried on the next pass; one still refused 30 s after the control
        plane started is counted in the world's errors."""
        if cluster.addons is not None:
            return
        try:
            objects = addons.system_objects(cluster.name, cluster.store.cluster.get("spec") or {})
            cluster.addons = addons.create(cluster.agent.core.api_client, objects)
        except Exception as exc:
            if time.time() - cluster.started > 30:
                self.errors["%s: channels: %s: %s" % (cluster.name, type(exc).__name__, str(exc)[:200])] += 1

    # -- etcd-manager ----------------------------------------------------------------------------------
    def play_etcd_manager(self, cluster):
        """Back up the cluster's etcd clusters when one is due (:class:`etcd_manager.EtcdManager`); a failure is
        counted in the world's errors and retried on the next pass, as etcd-manager retries."""
        if not cluster.etcd_manager.due():
            return
        try:
            cluster.etcd_manager.backup()
        except Exception as exc:
            cluster.etcd_manager.last = time.time() - cluster.etcd_manager.interval + 5 * self.period
            self.errors["%s: etcd-manager: backup failed: %s: %s" % (cluster.name, type(exc).__name__, str(exc)[:200])] += 1

    # -- API endpoints -------------------------------------------------------------------------------
    @staticmethod
    def _registered(cluster, roles):
        """The instances (node agent dicts) of ``cluster`` registered as Nodes whose role is in ``roles``."""
        return [inst for inst, role, _ready in dict(getattr(cluster.agent, "wanted", None) or {}).values() if role in roles]

    def play_endpoints(self, cluster):
        """One API endpoint (:class:`.endpoints.Forwarder`, a loopback address of its own) per registered
        control-plane or APIServer instance, each running a kube-apiserver on AWS; the endpoint of an instance no longer
        registered (terminated) is closed. Returns ``{instance id: address}``."""
        serving = {inst["id"] for inst in self._registered(cluster, ("ControlPlane", "APIServer"))}
        for instance_id in [i for i in cluster.endpoints if i not in serving]:
            cluster.endpoints.pop(instance_id).close()
        for instance_id in sorted(serving - set(cluster.endpoints)):
            forwarder = Forwarder(self._address(), cluster.address)
            cluster.endpoints[instance_id] = forwarder
        return {i: f.address for i, f in cluster.endpoints.items()}

    # -- dns-controller --------------------------------------------------------------------------------
    def _ours(self, values):
        """True when every address of ``values`` is in this world's block (``prefix``.0/24): a record the world wrote
        (an endpoint of this or an earlier run of the world, whose state the emulator kept), never one a user set."""
        return all(v.startswith(self.prefix + ".") for v in values)

    def play_dns_controller(self, cluster):
        """Keep the cluster's API records (kops' placeholder, or addresses of its endpoints) at the addresses of its
        API endpoints (:meth:`play_endpoints`; while it has none, a record keeps what it holds, as no dns-controller runs
        to change it: the address of a terminated instance, which refuses connections), and ``kops-controller.internal.<cluster>``
        at the private addresses of its registered control-plane nodes (kept so as they are replaced), in the public
        and private hosted zones of the cluster's partition (its region's, else its state store's); note its API load
        balancers' DNS names. Returns the list of record names changed. Reads nothing while the emulator saw no write
        and the endpoints and control-plane addresses are those of the last pass (:func:`aws_generation`)."""
        controller_ips = sorted(inst["ip"] for inst in self._registered(cluster, ("ControlPlane",)) if inst.get("ip"))
        endpoints = sorted(f.address for f in cluster.endpoints.values())
        read_at = (aws_generation(self.aws), endpoints, controller_ips)
        if read_at[0] is not None and read_at == cluster.dns_read_at:
            return []
        r53 = self.aws("route53", partition_region(cluster.store.region() or cluster.s3_region))
        changed = []
        names = ("api.%s." % cluster.name, "api.internal.%s." % cluster.name)
        # kops-controller runs on every control-plane node with host networking, and its pods carry the annotation
        # dns.alpha.kubernetes.io/internal: kops-controller.internal.<cluster> (kops' kops-controller manifest), so
        # dns-controller keeps that record at the private addresses of the registered control-plane nodes
        controller = "kops-controller.internal.%s." % cluster.name
        found_controller = None
        for zone in r53.list_hosted_zones().get("HostedZones", []):
            zone_name = zone["Name"]
            if not ("." + cluster.name + ".").endswith("." + zone_name):
                continue
            changes = []
            try:
                records = [rr for page in r53.get_paginator("list_resource_record_sets").paginate(HostedZoneId=zone["Id"]) for rr in page["ResourceRecordSets"]]
            except r53.exceptions.NoSuchHostedZone:
                continue  # deleted since it was listed (a teardown): the next pass lists the zones again, as dns-controller retries
            for rr in records:
                if rr["Type"] != "A" or "ResourceRecords" not in rr:
                    continue
                values = sorted(r["Value"] for r in rr["ResourceRecords"])
                if rr["Name"] == controller:
                    found_controller = controller_ips if controller_ips else values
                if rr["Name"] == controller and controller_ips and values != controller_ips:
                    wanted = controller_ips
                elif rr["Name"] in names and endpoints and values != endpoints and (values == [PLACEHOLDER] or self._ours(values)):
                    wanted = endpoints
                else:
                    continue
                record = {"Name": rr["Name"], "Type": "A", "TTL": rr.get("TTL", 60), "ResourceRecords": [{"Value": v} for v in wanted]}
                changes.append({"Action": "UPSERT", "ResourceRecordSet": record})
            if changes:
                try:
                    r53.change_resource_record_sets(
                        HostedZoneId=zone["Id"], ChangeBatch={"Comment": "kopsible local world: dns-controller stand-in", "Changes": changes}
                    )
                except r53.exceptions.NoSuchHostedZone:
                    continue  # deleted since its records were read: the same teardown race as above
                changed.extend(c["ResourceRecordSet"]["Name"] for c in changes)
        cluster.kops_controller_ips = found_controller
        lb_names = []
        whole = True  # every load balancer list read: only then is the pass noted
        for service, key, call in (("elbv2", "LoadBalancers", "describe_load_balancers"), ("elb", "LoadBalancerDescriptions", "describe_load_balancers")):
            try:
                client = self.aws(service, cluster.store.region())
                for lb in getattr(client, call)().get(key, []):
                    arn = lb.get("LoadBalancerArn")
                    tags = {}
                    if arn:
                        for desc in client.describe_tags(ResourceArns=[arn]).get("TagDescriptions", []):
                            tags.update({t["Key"]: t["Value"] for t in desc.get("Tags", [])})
                    else:
                        for desc in client.describe_tags(LoadBalancerNames=[lb["LoadBalancerName"]]).get("TagDescriptions", []):
                            tags.update({t["Key"]: t["Value"] for t in desc.get("Tags", [])})
                    if tags.get("KubernetesCluster") == cluster.name and lb.get("DNSName"):
                        lb_names.append(lb["DNSName"].rstrip(".").lower())
            except Exception:
                whole = False
                continue
        cluster.lb_names = sorted(set(lb_names))
        cluster.dns_updates.extend(changed)
        if whole:  # a failed pass (an exception) or a failed load balancer list reads again next pass
            cluster.dns_read_at = read_at
        return changed

    # -- loop ----------------------------------------------------------------------------------------
    def step(self):
        """One pass: start new clusters, stop deleted ones, play dns-controller, write world.json.
        While ``state_dir/paused`` exists, nothing runs (every control plane is stopped): tests that prove
        "check mode writes nothing" must not see the stand-in dns-controller write records meanwhile."""
        if os.path.exists(os.path.join(self.state_dir, "paused")):
            for key in list(self.clusters):
                self.stop_cluster(key)
            self.failed.clear()
            self.write_state(paused=True)
            return
        now = aws_generation(self.aws)
        if now is None or now != self._discovered_at:  # no write since the last discovery: the same clusters
            self._found = self.discover()
            self._discovered_at = None if self.discovery_partial else now
        found = self._found
        for key in [k for k in self.clusters if k not in found]:
            self.stop_cluster(key)
        for key, (name, s3_region) in found.items():
            if key in self.clusters or key in self.failed:
                continue
            try:
                self.start_cluster(key[0], key[1], name, s3_region)
            except (ControlPlaneError, ValueError, OSError, RuntimeError) as exc:
                self.failed[key] = "%s: %s" % (type(exc).__name__, exc)
                self.errors["%s: control plane did not start: %s" % (name, self.failed[key][:300])] += 1
        for key in [k for k in self.failed if k not in found]:
            self.failed.pop(key)
        for cluster in self.clusters.values():
            self.play_channels(cluster)
            self.play_etcd_manager(cluster)
            self.play_endpoints(cluster)
            self.play_dns_controller(cluster)
        self.write_state()

    def write_state(self, paused=False):
        errors = collections.Counter(self.errors)
        for c in self.clusters.values():
            errors.update({"%s: %s" % (c.name, e): n for e, n in c.agent.error_log.items()})
        state = {
            "clusters": {},
            "failed": {"%s/%s" % k: v for k, v in self.failed.items()},
            "errors": dict(errors),
            "updated": time.time(),
            "paused": paused,
        }
        for (bucket, prefix), c in self.clusters.items():
            state["clusters"][c.name] = {
                "state_store": "s3://%s/%s" % (bucket, prefix.rsplit("/", 1)[0]) if "/" in prefix else "s3://%s" % bucket,
                "address": c.address,
                "api_endpoints": {i: f.address for i, f in c.endpoints.items()},
                "url": c.control_plane.url,
                "alive": c.control_plane.alive(),
                "started_seconds": round(c.control_plane.started_seconds or 0, 2),
                "rss_bytes": c.control_plane.rss_bytes(),
                "lb_names": c.lb_names,
                "addons": c.addons,
                "dns_updates": c.dns_updates,
                "admin_kubeconfig": c.control_plane.admin_kubeconfig,
                "workdir": c.control_plane.workdir,
                "agent_errors": c.agent.errors,
                "agent_last_error": c.agent.last_error,
                "agent_step_seconds": c.agent.step_seconds,
                "agent_untraced": sorted(c.agent.untraced),
                "agent_skew_refusals": dict(c.agent.skew_refusals),
                "agent_registration_refusals": dict(c.agent.registration_refusals),
                "kops_controller_ips": c.kops_controller_ips,
                "etcd_backups": c.etcd_manager.written if c.etcd_manager else [],
            }
        path = os.path.join(self.state_dir, "world.json")
        with open(path + ".tmp", "w") as handle:
            json.dump(state, handle, indent=1, default=str)
        os.replace(path + ".tmp", path)

    def run(self):
        while not self.stopping.is_set():
            try:
                self.step()
            except Exception as exc:  # keep watching; the error is visible in world.json
                self.failed[("world", "step")] = "%s: %s" % (type(exc).__name__, exc)
                self.errors["world: step: %s" % self.failed[("world", "step")][:300]] += 1
                try:
                    self.write_state()
                except Exception:
                    pass
            self.stopping.wait(self.period)

    def stop(self):
        self.stopping.set()
        for key in list(self.clusters):
            self.stop_cluster(key)
