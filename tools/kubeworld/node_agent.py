"""The node agent: what the kubelets of an emulated cluster would do, against its real API server.

The emulator's instances never boot, so nothing registers Nodes or runs pods. The agent follows the
cluster's EC2 instances in the emulator and keeps, for each running instance of a control-plane or node
InstanceGroup (bastions never join a cluster):

- one Node named by the instance's private DNS name, ``spec.providerID`` ``aws:///<zone>/<instance-id>``
  (kops validate matches instances to Nodes by the id at its end: pkg/validation/validate_cluster.go),
  the labels kOps nodes carry (``kops.k8s.io/instancegroup``, ``node-role.kubernetes.io/...``, zone,
  region, instance type, hostname; the group's ``nodeLabels``; pkg/nodelabels/builder.go), the group's
  taints, the control-plane taint, addresses = the instance's private IP and DNS name, allocatable
  resources from the instance type, and ``nodeInfo.kubeletVersion`` = the Kubernetes version the
  instance was launched with: its launch template version's user data carries ``NodeupConfigHash``,
  the base64 SHA-256 of the group's ``igconfig/<role>/<group>/nodeupconfig.yaml`` as kops wrote it
  (pkg/model/bootstrapscript.go), whose ``KubernetesVersion`` the agent finds among that object's
  versions in the state store (``v0.0.0-unknown`` when the instance cannot be traced, counted in
  ``untraced``: a test asserts none);
- the Kubernetes version-skew policy (kubernetes.io/releases/version-skew-policy#kubelet), as a real
  kubelet of 1.31+ meets it: a worker whose kubelet is newer than the oldest kube-apiserver (the oldest
  kubelet among the control-plane and API-server nodes: each of them runs the kube-apiserver of its own
  version, and a worker reaches any of them through ``api.internal``), or more than three minor versions
  older than the newest, never becomes Ready; its Ready condition says why (reason
  ``KubeletVersionSkew``), so kops' validation fails on it, naming the node. Control-plane nodes talk to
  their own kube-apiserver and are never refused. Refusals are counted in ``skew_refusals``
  ({node: message});
- a Node the API server refuses to register (HTTP 422, e.g. taints not unique by key and effect:
  pkg/apis/core/validation/validation.go validateNodeTaints) is not there, as with a real kubelet, which
  logs the refusal and retries; why is kept in ``registration_refusals`` ({node: the API server's message});
- its Lease in ``kube-node-lease`` and its Ready condition, renewed (the node-lifecycle controller marks
  a node NotReady about 50 s after the last renewal);
- the pods bound to it: Pending -> Running and Ready with ``hostIP``/``podIP``; a pod being deleted
  (graceful deletion, e.g. an eviction) is finished with a zero-grace delete once its containers have
  stopped, as the kubelet does (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer: the preStop
  hook runs, then SIGTERM, then SIGKILL when the grace period ends; the status manager then deletes the pod
  with grace 0): after its preStop hook (``lifecycle.preStop.sleep.seconds``, or an ``exec`` hook running
  ``sleep N``) and the time its processes take to exit on SIGTERM (0, as a well-behaved process; the knob
  ``pod_stop_seconds`` for one that ignores it), never after ``deletionGracePeriodSeconds``. A drain thus
  waits as long as on a real node, and a short ``drain_timeout`` runs out;
- on control-plane nodes, the static pods kops validate looks for: ``kube-apiserver``,
  ``kube-controller-manager`` and ``kube-scheduler`` in kube-system (``k8s-app`` label, priority class
  ``system-cluster-critical``), with ``hostIP`` = the node's address; on every node ``kube-proxy``
  (``system-node-critical``) unless the cluster spec turns it off (cilium's default);
- control-plane nodes labelled as kops labels them (``kops.k8s.io/kops-controller-pki``, which kops-controller's
  DaemonSet selects), API-server nodes ``node-role.kubernetes.io/api-server``. The DaemonSet and Deployment pods of
  kops' system addons (:mod:`.addons`, created by the world) are run like any other pod.
A Node whose instance is terminated (or gone) is deleted with its pods, as the cloud node-lifecycle
controller does.

Knobs for tests, read on each pass from the JSON file ``knobs_path`` (absent = none):
``not_ready_nodes`` (node names or instance ids, Ready=False), ``not_ready_new`` ({group: epoch
seconds}: instances of the group launched after that time stay NotReady), ``not_ready_pods``
(``namespace/name``, Ready=False), ``join_delay`` ({group or ``*``: seconds after launch before the
Node registers}), ``pod_ready_delay`` ({``namespace/name`` glob: seconds after a pod starts before it is
Ready, as a readiness probe holds it}), ``pod_stop_seconds`` ({``namespace/name`` glob: seconds its
processes take to exit after SIGTERM}).
"""

import base64
import collections
import datetime
import fnmatch
import gzip
import hashlib
import json
import re
import threading
import time
import zlib

import yaml

from .addons import kube_proxy_enabled

CONTROL_PLANE_PODS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
# vCPUs and memory of common instance types (for allocatable; the scheduler needs some); others get 2/4Gi.
INSTANCE_RESOURCES = {
    "t2.micro": (1, "1Gi"),
    "t2.small": (1, "2Gi"),
    "t2.medium": (2, "4Gi"),
    "t3.micro": (2, "1Gi"),
    "t3.small": (2, "2Gi"),
    "t3.medium": (2, "4Gi"),
    "t3.large": (2, "8Gi"),
    "m5.large": (2, "8Gi"),
    "m5.xlarge": (4, "16Gi"),
    "c5.large": (2, "4Gi"),
    "c5.xlarge": (4, "8Gi"),
    "c5a.large": (2, "4Gi"),
    "m6i.large": (2, "8Gi"),
    "m6g.large": (2, "8Gi"),
    "t4g.medium": (2, "4Gi"),
}
UNKNOWN_VERSION = "0.0.0-unknown"  # parseable by kops (pkg/apis/kops/util/versions.go), older than any release
SKEW_REASON = "KubeletVersionSkew"
# kubernetes.io/releases/version-skew-policy#kubelet: never newer than kube-apiserver, at most three minors older.
KUBELET_MAX_MINORS_BEHIND = 3
HASH_RE = re.compile(r"NodeupConfigHash:\s*(\S+)")
GZIP_RE = re.compile(r'echo "([A-Za-z0-9+/=]+)" \| base64 -d \| gzip -d > conf/kube_env.yaml')


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _ts(when=None):
    return (when or _now()).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro(when=None):
    return (when or _now()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _minor(version):
    """``'1.35.0'`` / ``'v1.35.0'`` -> ``(1, 35)``; None for the unknown version or text that is not one."""
    match = re.match(r"v?(\d+)\.(\d+)\.\d+", version or "")
    if not match or version.lstrip("v") == UNKNOWN_VERSION:
        return None
    return int(match.group(1)), int(match.group(2))


def _api_message(exc):
    """The message of a Kubernetes API error (``ApiException``): the Status body's ``message``, else its reason."""
    try:
        return json.loads(exc.body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(exc.reason)


def skew_problem(kubelet, api_servers):
    """Why a worker kubelet of version ``kubelet`` (str) will not run against the kube-apiservers of versions
    ``api_servers`` (list of str), by the version-skew policy on minor versions; None when it may. With no API
    server known (none registered yet) there is nothing to refuse."""
    own = _minor(kubelet)
    servers = [m for m in (_minor(v) for v in api_servers) if m]
    if own is None or not servers:
        return None
    oldest, newest = min(servers), max(servers)
    if own > oldest:
        return (
            "kubelet v%s is newer than kube-apiserver v%d.%d (the oldest control-plane node); "
            "the version-skew policy forbids a kubelet newer than kube-apiserver"
            % (
                kubelet.lstrip("v"),
                oldest[0],
                oldest[1],
            )
        )
    if own[0] != newest[0] or newest[1] - own[1] > KUBELET_MAX_MINORS_BEHIND:
        return "kubelet v%s is more than %d minor versions older than kube-apiserver v%d.%d; the version-skew policy forbids it" % (
            kubelet.lstrip("v"),
            KUBELET_MAX_MINORS_BEHIND,
            newest[0],
            newest[1],
        )
    return None


def _knob_seconds(patterns, pod):
    """The seconds of the first ``namespace/name`` glob of ``patterns`` ({glob: seconds}) that matches ``pod``; 0."""
    key = "%s/%s" % (pod.metadata.namespace, pod.metadata.name)
    for pattern, seconds in (patterns or {}).items():
        if fnmatch.fnmatchcase(key, pattern):
            return float(seconds)
    return 0.0


def _sleep_seconds(handler):
    """How long a preStop ``handler`` (a V1LifecycleHandler, or None) keeps the container before SIGTERM, in seconds:
    ``sleep.seconds`` (the kubelet's sleep action, PodLifecycleSleepAction), or N of an ``exec`` hook whose command is
    ``sleep N`` (directly or through ``sh -c``); 0 for any other hook (an HTTP call returns at once here)."""
    if handler is None:
        return 0.0
    if getattr(handler, "sleep", None) is not None:
        return float(handler.sleep.seconds or 0)
    command = list(getattr(getattr(handler, "_exec", None), "command", None) or [])
    if len(command) >= 3 and command[1] == "-c":
        command = command[2].split()
    if len(command) == 2 and command[0].rsplit("/", 1)[-1] == "sleep":
        try:
            return float(command[1])
        except ValueError:
            return 0.0
    return 0.0


def stop_seconds(pod, knobs):
    """Seconds from a pod's graceful deletion until its kubelet deletes it (float): the slowest container's preStop
    hook plus the time its processes take to exit on SIGTERM (knob ``pod_stop_seconds``), capped by the deletion's
    grace period (``metadata.deletionGracePeriodSeconds``, the pod's ``terminationGracePeriodSeconds`` unless the
    deleter gave one), after which the kubelet kills them."""
    grace = pod.metadata.deletion_grace_period_seconds
    grace = float(grace if grace is not None else (pod.spec.termination_grace_period_seconds or 0))
    hooks = max([_sleep_seconds(getattr(c.lifecycle, "pre_stop", None) if c.lifecycle else None) for c in pod.spec.containers] or [0.0])
    return min(grace, hooks + _knob_seconds(knobs.get("pod_stop_seconds"), pod))


class _Answer(object):
    """A response-like holder of one object's JSON text, for ``ApiClient.deserialize`` (which reads ``.data``)."""

    def __init__(self, data):
        self.data = data


class ListCache(object):
    """A list call's objects as the kubernetes client's models, each made once per version of its object.

    The agent lists every pod of its cluster three times a second and its Nodes twice: turning each answer into
    model objects (``V1Pod``: a class per field, a dateutil parse per timestamp) was two thirds of the kube world's
    CPU in a test run (py-spy, issue 28), though between two passes hardly any object changes. Here the answer is
    read as JSON (``_preload_content=False``), and an object whose ``metadata.uid`` and ``metadata.resourceVersion``
    equal those of an object this cache made a model of last time gets that model again: the API server gives every
    write a new ``resourceVersion`` (the same uid and version are the same object). Objects without both are made
    afresh each time. The models handed out are shared between passes: the agent only reads them.

    :param call: a list method of a kubernetes API (e.g. ``CoreV1Api.list_pod_for_all_namespaces``).
    :param model: the model class name of an item (str, e.g. ``'V1Pod'``).
    :param api_client: the ``kubernetes.client.ApiClient`` whose ``deserialize`` makes the models (a new one when
        None: deserializing needs no connection).
    """

    def __init__(self, call, model, api_client=None):
        self.call, self.model, self.api_client = call, model, api_client
        self.models = {}  # (uid, resourceVersion) -> model, of the last answer only

    def items(self, **kwargs):
        """The objects of one list call with ``kwargs`` (list of models, in the API server's order)."""
        if self.api_client is None:
            import kubernetes

            self.api_client = kubernetes.client.ApiClient()
        answer = self.call(_preload_content=False, **kwargs)
        found, made = [], {}
        for item in json.loads(answer.data).get("items") or []:
            meta = item.get("metadata") or {}
            key = (meta.get("uid"), meta.get("resourceVersion"))
            model = self.models.get(key) if None not in key else None
            if model is None:
                model = self.api_client.deserialize(_Answer(json.dumps(item)), self.model)
            if None not in key:
                made[key] = model
            found.append(model)
        self.models = made
        return found


def user_data_hash(user_data_b64):
    """The ``NodeupConfigHash`` in a launch template's base64 user data (str), or None.

    kops' user data is the nodeup script, plain or gzipped, or a MIME multipart message holding it
    (with additional user data); ``kube_env.yaml`` is inline or gzip+base64 (compressUserData).
    """
    try:
        raw = base64.b64decode(user_data_b64 or "")
    except (ValueError, TypeError):
        return None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", "replace")
    found = HASH_RE.search(text)
    if found:
        return found.group(1)
    if "multipart/" in text[:2000]:  # MIME multipart: the nodeup script is one of the parts
        import email

        for part in email.message_from_string(text).walk():
            payload = part.get_payload(decode=True)
            if payload:
                found = user_data_hash(base64.b64encode(payload).decode())
                if found:
                    return found
    packed = GZIP_RE.search(text)
    if packed:
        inner = zlib.decompress(base64.b64decode(packed.group(1)), 16 + zlib.MAX_WBITS).decode("utf-8", "replace")
        found = HASH_RE.search(inner)
        return found.group(1) if found else None
    return None


def aws_generation(aws):
    """The emulator's write count (``aws.generation()``, GET /moto-api/kopsible/generation; tools/emulator.py), or None
    when ``aws`` cannot tell (then every read is made). A reader notes the number before it reads; while it stands
    still, nothing in AWS changed and what it read last still holds."""
    source = getattr(aws, "generation", None)
    return source() if source is not None else None


class StoreView(object):
    """The cluster's objects in its kops state store (``bucket``, key ``prefix`` ending with the cluster
    name), read through an S3 client factory. Caches by object version; with ``generation`` (a callable,
    :func:`aws_generation`), :meth:`refresh` reads nothing while the emulator saw no write since its last read."""

    def __init__(self, s3_factory, bucket, prefix, generation=None):
        self.s3_factory, self.bucket, self.prefix = s3_factory, bucket, prefix.strip("/")
        self.generation, self.read_at = generation, None
        self.hash_versions = {}
        self.seen_versions = set()
        self.groups = {}
        self.cluster = {}

    def _get(self, s3, key, version_id=None):
        kwargs = {"Bucket": self.bucket, "Key": key}
        if version_id and version_id != "null":
            kwargs["VersionId"] = version_id
        return s3.get_object(**kwargs)["Body"].read()

    def refresh(self):
        """Re-read the cluster spec, the InstanceGroups and every version of each group's nodeup
        config (only versions not read before). With ``generation``, nothing is read while the emulator's write count
        is the one noted at the last pass that read every object (a pass with a failed read is not noted)."""
        now = self.generation() if self.generation is not None else None
        if now is not None and now == self.read_at:
            return
        s3 = self.s3_factory()
        try:
            self.cluster = yaml.safe_load(self._get(s3, self.prefix + "/config")) or {}
        except Exception:  # the cluster was deleted meanwhile: keep what we had
            return
        groups = {}
        versions = []
        whole = True  # every object read: only then is the pass noted, so a failed read is made again next pass
        try:
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix + "/instancegroup/"):
                for obj in page.get("Contents", []):
                    try:
                        doc = yaml.safe_load(self._get(s3, obj["Key"])) or {}
                    except Exception:
                        whole = False
                        continue
                    groups[doc.get("metadata", {}).get("name") or obj["Key"].rsplit("/", 1)[-1]] = doc.get("spec") or {}
            for page in s3.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=self.prefix + "/igconfig/"):
                versions.extend(v for v in page.get("Versions", []) if v["Key"].endswith("/nodeupconfig.yaml"))
        except s3.exceptions.NoSuchBucket:
            return  # the state store was deleted since the config was read (a teardown): keep what we had, as above
        self.groups = groups
        for v in versions:
            ident = (v["Key"], v.get("VersionId"), v.get("ETag"))
            if ident in self.seen_versions:
                continue
            try:
                body = self._get(s3, v["Key"], v.get("VersionId"))
            except Exception:
                whole = False
                continue
            self.seen_versions.add(ident)
            digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
            version = (yaml.safe_load(body) or {}).get("KubernetesVersion")
            if version:
                self.hash_versions[digest] = str(version).lstrip("v")
        if whole:
            self.read_at = now

    def region(self):
        """The cluster's AWS region (str or None), from its first subnet's zone (``spec.networking.subnets``
        in kops >= 1.27, ``spec.subnets`` before)."""
        spec = self.cluster.get("spec") or {}
        subnets = (spec.get("networking") or {}).get("subnets") or spec.get("subnets") or []
        zone = next((s.get("zone") for s in subnets if s.get("zone")), None)
        return zone[:-1] if zone else None

    def kubernetes_version(self):
        """The cluster spec's ``kubernetesVersion`` without a leading ``v`` (str)."""
        return str((self.cluster.get("spec") or {}).get("kubernetesVersion") or "").lstrip("v")


class NodeAgent(object):
    """Stand-in kubelets for cluster ``name``.

    :param core: a kubernetes ``CoreV1Api``; :param coordination: a ``CoordinationV1Api``.
    :param aws: ``aws(service, region)`` -> a boto3 client for the emulator (region None: the default).
    :param store: the cluster's :class:`StoreView`.
    :param knobs_path: the knobs JSON file (module docstring).
    """

    def __init__(self, name, core, coordination, aws, store, knobs_path=None, period=0.5):
        self.name, self.core, self.coordination, self.aws, self.store = name, core, coordination, aws, store
        self._instances, self._instances_at = [], None
        self.knobs_path, self.period = knobs_path, period
        self.userdata_hash = {}
        self.leases = {}
        self.heartbeats = {}
        self.thread = None
        self.wanted = {}
        self.node_uids = {}
        # held while a Node is removed and while a mirror pod is created, so that the pods loop (a pass behind the
        # Nodes loop) never recreates the mirror pods of a Node just deleted: they would stay Pending, bound to no
        # Node, until the pod garbage collector removes them about a minute later, and kops validate fail on them
        self.removal_lock = threading.Lock()
        self.stopping = threading.Event()
        self.last_error = None
        self.error_log = collections.Counter()  # "loop: Type: message" -> how often (world.json ``errors``)
        self.store_refreshed = 0.0
        self.step_seconds = None
        api_client = getattr(core, "api_client", None)
        self.pods = ListCache(getattr(core, "list_pod_for_all_namespaces", None), "V1Pod", api_client)
        self.nodes = ListCache(getattr(core, "list_node", None), "V1Node", api_client)
        self.untraced = set()  # instance ids whose kubelet version could not be traced
        self.skew_refusals = {}  # node name -> why its kubelet is refused (skew_problem)
        # node name -> why the API server refused to register its Node (HTTP 422: e.g. taints not unique by key and
        # effect, pkg/apis/core/validation/validation.go validateNodeTaints); such a kubelet retries, as here
        self.registration_refusals = {}

    @property
    def errors(self):
        """How many passes of the agent's loops failed (int), from :attr:`error_log`."""
        return sum(self.error_log.values())

    # -- knobs ---------------------------------------------------------------------------------------
    def knobs(self):
        if not self.knobs_path:
            return {}
        try:
            with open(self.knobs_path) as handle:
                return json.load(handle) or {}
        except (OSError, ValueError):
            return {}

    # -- instances -----------------------------------------------------------------------------------
    def instances(self):
        """Running/pending instances of the cluster: list of dicts (id, zone, type, ip, dns, group, launch); the list
        read last while the emulator saw no write since (:func:`aws_generation`)."""
        now = aws_generation(self.aws)
        if now is not None and now == self._instances_at:
            return list(self._instances)
        ec2 = self.aws("ec2", self.store.region())
        found = []
        filters = [{"Name": "tag:KubernetesCluster", "Values": [self.name]}, {"Name": "instance-state-name", "Values": ["pending", "running"]}]
        for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for inst in reservation["Instances"]:
                    tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                    group = tags.get("kops.k8s.io/instancegroup")
                    if not group:
                        continue
                    found.append(
                        {
                            "id": inst["InstanceId"],
                            "zone": inst["Placement"]["AvailabilityZone"],
                            "type": inst.get("InstanceType"),
                            "ip": inst.get("PrivateIpAddress"),
                            "dns": inst.get("PrivateDnsName") or "ip-%s.ec2.internal" % inst.get("PrivateIpAddress", "").replace(".", "-"),
                            "group": group,
                            "launch": inst.get("LaunchTime"),
                            "tags": tags,
                            "template": (tags.get("aws:ec2launchtemplate:id"), tags.get("aws:ec2launchtemplate:version")),
                        }
                    )
        self._instances, self._instances_at = found, now
        return list(found)

    def kubelet_version(self, inst):
        """The Kubernetes version ``inst`` was launched with (str, no ``v``), traced through its launch
        template version's ``NodeupConfigHash``; :data:`UNKNOWN_VERSION` when it cannot be traced (the
        instance's id is added to ``untraced``)."""
        template_id, version = inst["template"]
        key = (template_id, version)
        if template_id and key not in self.userdata_hash:
            try:
                data = self.aws("ec2", self.store.region()).describe_launch_template_versions(
                    LaunchTemplateId=template_id, Versions=[str(version or "$Default")]
                )
                versions = data.get("LaunchTemplateVersions") or []
                self.userdata_hash[key] = user_data_hash(versions[0]["LaunchTemplateData"].get("UserData")) if versions else None
            except Exception:
                self.userdata_hash[key] = None
        digest = self.userdata_hash.get(key)
        if digest and digest not in self.store.hash_versions:
            self.store.refresh()
        found = self.store.hash_versions.get(digest)
        if not found:
            self.untraced.add(inst["id"])
            return UNKNOWN_VERSION
        self.untraced.discard(inst["id"])  # traced now (its nodeup config reached the store after the launch)
        return found

    # -- desired objects -------------------------------------------------------------------------------
    def node_object(self, inst, role, ready, version=None, refused=None):
        spec = self.store.groups.get(inst["group"], {})
        region = inst["zone"][:-1]
        labels = {
            "kops.k8s.io/instancegroup": inst["group"],
            "kubernetes.io/hostname": inst["dns"],
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": inst["zone"],
            "topology.kubernetes.io/region": region,
            "node.kubernetes.io/instance-type": inst["type"] or "",
        }
        taints = [
            {"key": t.split("=")[0].split(":")[0], "value": (t.split("=", 1)[1].split(":")[0] if "=" in t else None), "effect": t.rsplit(":", 1)[1]}
            for t in spec.get("taints") or []
            if ":" in t
        ]
        # pkg/nodelabels/builder.go BuildNodeLabels, BuildMandatoryControlPlaneLabels
        if role == "ControlPlane":
            labels["node-role.kubernetes.io/control-plane"] = ""
            labels["kops.k8s.io/kops-controller-pki"] = ""
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
            taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
        elif role == "APIServer":
            labels["node-role.kubernetes.io/api-server"] = ""
        else:
            labels["node-role.kubernetes.io/node"] = ""
        labels.update({k: str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
        cpu, memory = INSTANCE_RESOURCES.get(inst["type"], (2, "4Gi"))
        resources = {"cpu": str(cpu), "memory": memory, "pods": "110", "ephemeral-storage": "64Gi"}
        version = "v" + (version or self.kubelet_version(inst))
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": inst["dns"], "labels": labels, "annotations": {"kopsible.dev/instance-id": inst["id"], "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"providerID": "aws:///%s/%s" % (inst["zone"], inst["id"]), "taints": [t for t in taints if t["effect"]] or None},
            "status": self.node_status(inst, ready, resources, version, refused),
        }

    def node_status(self, inst, ready, resources, version, refused=None):
        """The Node's status; ``refused`` (str): why the kubelet will not run (skew_problem), which makes it
        NotReady with reason ``KubeletVersionSkew``."""
        now = _ts()
        conditions = [
            {"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": now, "lastTransitionTime": now}
            for t, r, m in (
                ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            )
        ]
        if refused:
            reason, message = SKEW_REASON, refused
        elif ready:
            reason, message = "KubeletReady", "kubelet is posting ready status (kopsible node agent)"
        else:
            reason, message = "KubeletNotReady", "container runtime network not ready (kopsible node agent knob)"
        conditions.append(
            {
                "type": "Ready",
                "status": "True" if ready and not refused else "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        )
        return {
            "capacity": resources,
            "allocatable": resources,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": inst["ip"]},
                {"type": "Hostname", "address": inst["dns"]},
                {"type": "InternalDNS", "address": inst["dns"]},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "kubeletVersion": version,
                "kubeProxyVersion": version,
                "machineID": inst["id"],
                "systemUUID": inst["id"],
                "bootID": inst["id"],
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "Ubuntu 24.04 LTS (kopsible node agent)",
                "kernelVersion": "6.8.0",
                "containerRuntimeVersion": "containerd://1.7.28",
            },
        }

    def static_pods(self, role):
        """The static pods a node of ``role`` runs (component names): the control plane's on control-plane nodes
        (nodeup's manifests in /etc/kubernetes/manifests), and ``kube-proxy`` on every node unless the cluster spec
        turns it off (:func:`addons.kube_proxy_enabled`)."""
        pods = list(CONTROL_PLANE_PODS) if role == "ControlPlane" else []
        if kube_proxy_enabled(self.store.cluster.get("spec") or {}):
            pods.append("kube-proxy")
        return pods

    def static_pod(self, component, node, ip, node_uid=None):
        """The mirror pod of a static pod (a control-plane component, or kube-proxy), as the kubelet creates it: annotated
        ``kubernetes.io/config.mirror`` (so that a drain skips it, k8s.io/kubectl/pkg/drain/filters.go) and
        owned by its Node."""
        owner = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}] if node_uid else None
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "%s-%s" % (component, node),
                "namespace": "kube-system",
                "labels": {"k8s-app": component},
                "ownerReferences": owner,
                "annotations": {
                    "kubernetes.io/config.source": "file",
                    "kubernetes.io/config.mirror": hashlib.sha256((component + node).encode()).hexdigest()[:32],
                    "kubernetes.io/config.hash": hashlib.sha256((component + node).encode()).hexdigest()[:32],
                    "kopsible.dev/static-pod": "node agent stand-in for the kubelet's mirror pod",
                },
            },
            "spec": {
                "nodeName": node,
                # kube-proxy runs as system-node-critical, the control plane as system-cluster-critical (nodeup's
                # manifests: nodeup/pkg/model/kube_proxy.go, pkg/model/components/kubeapiserver...)
                "priorityClassName": "system-node-critical" if component == "kube-proxy" else "system-cluster-critical",
                "hostNetwork": True,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": component, "image": "registry.k8s.io/%s:v%s" % (component, self.store.kubernetes_version())}],
            },
        }

    # -- one pass ------------------------------------------------------------------------------------
    def step(self):
        """One reconciliation pass (instances -> Nodes, leases, pods). Returns the number of Nodes kept."""
        wanted = self.step_nodes()
        self.reconcile_pods(wanted, self.knobs())
        return len(wanted)

    def step_nodes(self):
        """Instances -> Nodes, their leases and status; returns ``{node name: (instance, role, ready)}``."""
        from kubernetes.client.rest import ApiException

        knobs = self.knobs()
        now = time.time()
        if now - self.store_refreshed > 5 and self.thread is None:  # a running agent refreshes in its own thread
            self.store.refresh()
            self.store_refreshed = now
        wanted = {}
        for inst in self.instances():
            # the state store keeps v1alpha2, where the control-plane role is still spelled "Master"
            # (pkg/apis/kops/v1alpha2/instancegroup.go)
            role = (self.store.groups.get(inst["group"]) or {}).get("role")
            role = "ControlPlane" if role == "Master" else role
            if role not in ("ControlPlane", "Node", "APIServer"):
                continue
            launched = inst["launch"].timestamp() if hasattr(inst["launch"], "timestamp") else now
            delays = knobs.get("join_delay") or {}
            delay = delays.get(inst["group"], delays.get("*", 0))
            if now - launched < float(delay):
                continue
            new_after = (knobs.get("not_ready_new") or {}).get(inst["group"])
            ready = not (
                inst["dns"] in (knobs.get("not_ready_nodes") or [])
                or inst["id"] in (knobs.get("not_ready_nodes") or [])
                or (new_after is not None and launched > float(new_after))
            )
            wanted[inst["dns"]] = (inst, role, ready)
        versions = {name: self.kubelet_version(inst) for name, (inst, _role, _ready) in wanted.items()}
        api_servers = [versions[name] for name, (_inst, role, _ready) in wanted.items() if role in ("ControlPlane", "APIServer")]
        refused = {}
        for name, (inst, role, _ready) in list(wanted.items()):
            problem = None if role in ("ControlPlane", "APIServer") else skew_problem(versions[name], api_servers)
            if problem:
                refused[name] = problem
                wanted[name] = (inst, role, False)
        self.skew_refusals.update(refused)

        existing = {n.metadata.name: n for n in self.nodes.items()}
        self.node_uids = {name: n.metadata.uid for name, n in existing.items()}
        for name, (inst, role, ready) in list(wanted.items()):  # a Node the API server refuses leaves it
            node = existing.get(name)
            if node is None:
                body = self.node_object(inst, role, ready, versions[name], refused.get(name))
                try:
                    # created with its status, as the kubelet registers (pkg/kubelet/kubelet_node_status.go
                    # initialNode sets nodeInfo and conditions; the Node strategy keeps status on create): no
                    # reader ever sees a Node without a kubelet version
                    created = self.core.create_node(body)
                    # known at once, so that the pods loop makes its mirror pods on its next pass (a kubelet starts
                    # its static pods before it registers and mirrors them as soon as the Node exists)
                    self.node_uids[name] = created.metadata.uid
                    self.registration_refusals.pop(name, None)
                except ApiException as exc:
                    if exc.status == 422:  # the API server's validation refused the Node: the kubelet logs it, retries
                        self.registration_refusals[name] = _api_message(exc)
                        del wanted[name]
                        continue
                    if exc.status != 409:
                        raise
                    self.core.patch_node_status(name, {"status": body["status"]})
                self.heartbeats[name] = (now, ready)
            else:
                last = self.heartbeats.get(name)
                current_ready = any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))
                if last is None or now - last[0] > 20 or current_ready != ready:
                    body = self.node_object(inst, role, ready, versions[name], refused.get(name))
                    self.core.patch_node_status(name, {"status": {"conditions": body["status"]["conditions"], "nodeInfo": body["status"]["nodeInfo"]}})
                    self.heartbeats[name] = (now, ready)
            self.renew_lease(name, now)
        self.wanted = wanted
        for name, node in existing.items():
            if name not in wanted and (node.metadata.annotations or {}).get("kopsible.dev/instance-id"):
                with self.removal_lock:
                    self.node_uids.pop(name, None)
                    self.remove_node(name)
        return wanted

    def renew_lease(self, name, now):
        from kubernetes.client.rest import ApiException

        if now - self.leases.get(name, 0) < 10:
            return
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": _micro()},
        }
        try:
            self.coordination.patch_namespaced_lease(name, "kube-node-lease", {"spec": body["spec"]})
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.coordination.create_namespaced_lease("kube-node-lease", body)
        self.leases[name] = now

    def remove_node(self, name):
        """The Node of a terminated instance goes, then its pods, in the order of a real cluster: the cloud
        node-lifecycle controller deletes the Node (k8s.io/cloud-provider controllers/nodelifecycle), then the pod
        garbage collector deletes the pods bound to a Node that no longer exists (pkg/controller/podgc
        gcOrphaned; at once here, without its 40 s quarantine). Pods deleted first, while the Node still stood, were
        recreated by the DaemonSet controller on that Node and stayed Pending, failing kops' validation for the
        minute the pod garbage collector took to delete them."""
        from kubernetes.client.rest import ApiException

        try:
            self.core.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        for pod in self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=" + name).items:
            try:
                self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
            except ApiException:
                pass
        self.heartbeats.pop(name, None)
        self.leases.pop(name, None)

    def reconcile_pods(self, wanted, knobs):
        from kubernetes.client.rest import ApiException

        pods = self.pods.items()
        present = {(p.metadata.namespace, p.metadata.name) for p in pods}
        not_ready = set(knobs.get("not_ready_pods") or [])

        def pod_ready(pod, node):
            if "%s/%s" % (pod.metadata.namespace, pod.metadata.name) in not_ready or not wanted[node][2]:
                return False
            delay = _knob_seconds(knobs.get("pod_ready_delay"), pod)
            started = pod.status.start_time if pod.status else None
            # a readiness probe holds a new pod: Ready only ``delay`` seconds after it started (not yet started: now)
            return not delay or (started is not None and time.time() - started.timestamp() >= delay)

        for name, (inst, role, _ready) in wanted.items():
            for component in self.static_pods(role):
                if ("kube-system", "%s-%s" % (component, name)) not in present:
                    with self.removal_lock:
                        uid = self.node_uids.get(name)
                        # not registered yet (or by another agent: the next Nodes pass lists it), or removed since
                        if uid is None or name not in self.wanted:
                            continue
                        try:
                            created = self.core.create_namespaced_pod("kube-system", self.static_pod(component, name, inst["ip"], uid))
                        except ApiException as exc:
                            if exc.status != 409:
                                raise
                            continue
                    # the static pod runs already: its status with the mirror pod, not a pass later
                    self.report_pod_status(created, inst, pod_ready(created, name))
        for pod in pods:
            node = pod.spec.node_name
            if node not in wanted:
                continue
            if pod.metadata.deletion_timestamp is not None:
                # the deletion began at deletionTimestamp - its grace period (the API server sets it so: pkg/registry/
                # rest/delete.go BeforeDelete); the kubelet deletes the pod once its containers have stopped
                grace = pod.metadata.deletion_grace_period_seconds or 0
                began = pod.metadata.deletion_timestamp.timestamp() - grace
                if time.time() < began + stop_seconds(pod, knobs):
                    continue
                try:
                    self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
                continue
            ready = pod_ready(pod, node)
            running = pod.status.phase == "Running"
            is_ready = any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
            if running and is_ready == ready:
                continue
            self.report_pod_status(pod, wanted[node][0], ready)

    def report_pod_status(self, pod, inst, ready):
        """Write ``pod``'s status as its kubelet on ``inst`` reports it (:meth:`pod_status`); a pod deleted since it was
        listed (its Node removed, or evicted) has nothing to report."""
        from kubernetes.client.rest import ApiException

        try:
            self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, {"status": self.pod_status(pod, inst, ready)})
        except ApiException as exc:
            if exc.status != 404:
                raise

    def pod_status(self, pod, inst, ready):
        now = _ts()
        host_ip = inst["ip"]
        if pod.spec.host_network:
            pod_ip = host_ip
        else:
            digest = hashlib.sha256(pod.metadata.uid.encode()).digest()
            pod_ip = "100.96.%d.%d" % (digest[0], digest[1] % 254 + 1)
        flag = "True" if ready else "False"
        started = _ts(pod.status.start_time) if pod.status.start_time else now
        return {
            "phase": "Running",
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": started,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
                {"type": "Initialized", "status": "True", "lastTransitionTime": started},
                {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
                {"type": "Ready", "status": flag, "lastTransitionTime": now},
            ],
            "containerStatuses": [
                {
                    "name": c.name,
                    "image": c.image,
                    "imageID": "",
                    "ready": ready,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": started}},
                }
                for c in pod.spec.containers
            ],
        }

    # -- loop ----------------------------------------------------------------------------------------
    def _loop(self, name, work, period, timed=False):
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                work()
                if timed:
                    self.step_seconds = round(time.monotonic() - started, 3)
            except Exception as exc:  # counted and kept (world.json ``errors``; the tests' kube_world asserts none)
                self.last_error = "%s: %s" % (type(exc).__name__, exc)
                self.error_log["%s loop: %s" % (name, self.last_error[:300])] += 1
            self.stopping.wait(period)

    def start(self):
        """Run three loops in daemon threads, so that a slow call in one does not hold the others: instances
        -> Nodes (every 0.5 s), pods (every 0.3 s), the state store (every 3 s). Returns self."""
        self.store.refresh()
        self.store_refreshed = time.time()
        self.wanted = {}
        loops = (
            ("nodes", lambda: self.step_nodes(), self.period, True),
            ("pods", lambda: self.reconcile_pods(dict(self.wanted), self.knobs()), 0.3, False),
            ("state store", self.store.refresh, 3.0, False),
        )
        self.threads = [threading.Thread(target=self._loop, args=loop, name="node-agent-%s-%d" % (self.name, i), daemon=True) for i, loop in enumerate(loops)]
        self.thread = self.threads[0]
        for thread in self.threads:
            thread.start()
        return self

    def stop(self):
        self.stopping.set()
        for thread in getattr(self, "threads", []):
            thread.join(10)
