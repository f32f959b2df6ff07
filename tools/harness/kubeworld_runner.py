"""The Kubernetes half of the local world (tools/kubeworld/, run as ``python -m kubeworld``) as a child process, for tests, the
demo and the sandbox: every kops cluster applied in the emulator gets a real control plane and a
node agent (tools/kubeworld/), found here by cluster name."""

import contextlib
import json
import os
import subprocess
import sys
import time

from .emulator import ROOT
from .process import stop_process


def prefix_for(dns_address):
    """The address block (``127.X.Y``) of the control planes that go with a DNS face on ``dns_address``:
    127.0.0.1 -> 127.1.0, 127.0.0.53 -> 127.53.0, 127.0.20.53 -> 127.53.20 (unique per test worker)."""
    octets = dns_address.split(".")
    return "127.%s.%s" % (octets[3], octets[2])


class KubeWorldProcess(object):
    """`python -m kubeworld` (tools/kubeworld/) watching ``emulator``; control planes on ``prefix``.N:443.

    ``state_dir`` holds world.json, and per cluster its files, logs and knobs.json.
    """

    def __init__(self, emulator, prefix, state_dir=None):
        self.emulator, self.prefix = emulator, prefix
        self.state_dir = state_dir or os.path.join(ROOT, ".cache", "kube-world", prefix)
        self.proc = None

    def start(self, paused=False):
        """Start the watcher (it starts control planes on its own as clusters appear, unless ``paused``:
        see :meth:`pause`); returns self."""
        os.makedirs(self.state_dir, exist_ok=True)
        for name in ("world.json", "paused"):
            try:
                os.unlink(os.path.join(self.state_dir, name))
            except OSError:
                pass
        if paused:
            open(os.path.join(self.state_dir, "paused"), "w").close()
        log = open(os.path.join(self.state_dir, "kube-world.log"), "ab")
        tools = os.path.join(ROOT, "tools")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tools, os.environ.get("PYTHONPATH")) if p), **self.emulator.aws_env())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubeworld",
                "--emulator-url",
                self.emulator.url,
                "--prefix",
                self.prefix,
                "--state-dir",
                self.state_dir,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        log.close()
        return self

    def pause(self, timeout=60):
        """Stop every control plane and start none until :meth:`resume` (returns once world.json says so)."""
        open(os.path.join(self.state_dir, "paused"), "w").close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc is not None and self.proc.poll() is None:
            state = self.state()
            if state.get("paused") and not state.get("clusters"):
                return
            time.sleep(0.3)

    def resume(self):
        """Serve control planes again (see :meth:`pause`)."""
        try:
            os.unlink(os.path.join(self.state_dir, "paused"))
        except OSError:
            pass

    def stop(self):
        """Stop the watcher and every control plane it runs (up to 30 s)."""
        stop_process(self.proc, grace=30)
        self.proc = None

    def state(self):
        """world.json as a dict (``clusters``, ``failed``), or empty lists before the first pass."""
        try:
            with open(os.path.join(self.state_dir, "world.json")) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {"clusters": {}, "failed": {}}

    def errors(self):
        """``{"<cluster>: <loop>: <error>": count}``: every error the world's loops and node agents counted since
        the watcher started (stopped clusters' included, and control planes that did not start)."""
        return dict(self.state().get("errors") or {})

    @contextlib.contextmanager
    def serving(self):
        """Resume for the ``with`` block and pause after it; then raise AssertionError naming each error the
        world counted meanwhile (not when the block itself raised: its error comes first)."""
        before = self.errors()
        self.resume()
        try:
            yield self
        finally:
            self.pause()
        errors = {k: n - before.get(k, 0) for k, n in self.errors().items() if n > before.get(k, 0)}
        assert not errors, "the kube world counted errors meanwhile (see %s):\n%s" % (
            self.log_path(),
            "\n".join("%5d x %s" % (n, k) for k, n in sorted(errors.items())),
        )

    def wait_cluster(self, name, timeout=90, nodes=None):
        """Wait until cluster ``name`` has a running control plane (and, with ``nodes``, that many Nodes, its
        kops-controller record at the control-plane Nodes' addresses, when it has one, and an API endpoint per
        control-plane Node);
        returns its world.json entry. Raises RuntimeError naming what was missing (and the world's errors)."""
        deadline = time.monotonic() + timeout
        info = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError("the kube world exited with %s; see %s" % (self.proc.returncode, self.log_path()))
            state = self.state()
            info = state.get("clusters", {}).get(name)
            if info and info.get("alive"):
                if nodes is None:
                    return info
                found = self.core(name).list_node().items
                # and the dns-controller stand-in has caught up: kops-controller.internal.<cluster> holds the
                # registered control-plane nodes (a check-mode test's snapshots must not see it written meanwhile)
                control_plane = sorted(
                    a.address
                    for n in found
                    if "node-role.kubernetes.io/control-plane" in (n.metadata.labels or {})
                    for a in n.status.addresses or []
                    if a.type == "InternalIP"
                )
                # and every control-plane (or APIServer) Node has its API endpoint, in the API records
                serving = [n for n in found if {"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/api-server"} & set(n.metadata.labels or {})]
                if (
                    len(found) >= nodes
                    and info.get("kops_controller_ips") in (None, control_plane)
                    and len(info.get("api_endpoints") or {}) >= len(serving)
                    and self.system_pods_settled(name, found, info)
                ):
                    return info
            time.sleep(0.3)
        raise RuntimeError(
            "cluster %s: no control plane%s within %ss (world: %s)"
            % (name, "" if nodes is None else " with %s nodes" % nodes, timeout, json.dumps(self.state().get("failed"))[:2000])
        )

    def system_pods_settled(self, name, nodes, info):
        """Whether cluster ``name``'s system addons (tools/kubeworld/addons.py) are in place: created (``addons`` in
        ``info``, its world.json entry), each DaemonSet with a Ready pod on every node it selects (the control-plane
        ``nodes`` for kops-controller, all ``nodes`` for the others: V1Node list) and every critical kube-system pod
        Running and Ready, but for a pod no node can take yet (Pending, unscheduled, while no worker Node is Ready,
        as CoreDNS on a cluster without workers)."""
        if info.get("addons") is None:
            return False
        apps = self.apps(name)
        control_plane = [n for n in nodes if "node-role.kubernetes.io/control-plane" in (n.metadata.labels or {})]
        for ds in apps.list_namespaced_daemon_set("kube-system").items:
            affinity = ds.spec.template.spec.affinity
            expected = len(control_plane) if affinity and affinity.node_affinity else len(nodes)
            status = ds.status
            if (status.desired_number_scheduled or 0) != expected or (status.number_ready or 0) != expected:
                return False

        def ready(obj):
            return any(c.type == "Ready" and c.status == "True" for c in obj.status.conditions or [])

        workers = [n for n in nodes if "node-role.kubernetes.io/node" in (n.metadata.labels or {}) and ready(n)]
        for pod in self.core(name).list_namespaced_pod("kube-system").items:
            if pod.spec.priority_class_name not in ("system-node-critical", "system-cluster-critical") or pod.metadata.deletion_timestamp:
                continue
            if pod.status.phase == "Pending" and not pod.spec.node_name and not workers:
                continue
            if pod.status.phase != "Running" or not ready(pod):
                return False
        return True

    def names(self):
        """``{load balancer DNS name: control plane address}`` for the DNS face (clusters without
        Route53 DNS reach their API through the load balancer's name)."""
        names = {}
        for info in self.state().get("clusters", {}).values():
            for name in info.get("lb_names") or []:
                names[name] = info["address"]
        return names

    def log_path(self):
        return os.path.join(self.state_dir, "kube-world.log")

    def knobs(self, name, **knobs):
        """Set the node agent's knobs for cluster ``name`` (replacing earlier ones): ``not_ready_nodes``,
        ``not_ready_new``, ``not_ready_pods``, ``join_delay`` (tools/kubeworld/node_agent.py)."""
        path = os.path.join(self.state_dir, name, "knobs.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as handle:
            json.dump(knobs, handle)
        os.replace(path + ".tmp", path)

    def admin_kubeconfig(self, name):
        """Path of the node agent's admin kubeconfig for ``name`` (connects by address; test plumbing)."""
        return os.path.join(self.state_dir, name, "admin.kubeconfig")

    def api_client(self, name):
        import kubernetes

        return kubernetes.config.new_client_from_config(config_file=self.admin_kubeconfig(name))

    def core(self, name):
        """A kubernetes ``CoreV1Api`` on cluster ``name``'s API (the harness's own admin credential)."""
        import kubernetes

        return kubernetes.client.CoreV1Api(self.api_client(name))

    def apps(self, name):
        """A kubernetes ``AppsV1Api`` on cluster ``name``'s API (the harness's own admin credential)."""
        import kubernetes

        return kubernetes.client.AppsV1Api(self.api_client(name))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def wait_for(predicate, timeout=90, interval=0.5):
    """Call ``predicate`` until it returns a true value (exceptions count as false) or ``timeout`` seconds pass;
    returns that value, or raises AssertionError (for tests that wait on the API or the emulator)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:
            pass
        time.sleep(interval)
    raise AssertionError("condition not met within %ss" % timeout)
