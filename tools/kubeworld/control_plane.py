"""One cluster's real control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler.

The binaries are the ones scripts/ensure_kube.sh builds from the Go modules (Kubernetes v1.35.4, etcd
v3.6.16) into .cache/bin. Everything listens on the cluster's own loopback ``address`` (etcd on 2379,
the API on 443, the other two serve no port), so several clusters run side by side.

Flags that matter (measured; see the shared reference kube-control-plane-notes.md):
- the API trusts the cluster's own CA from the state store for clients and serves a certificate issued
  by it for ``api.<cluster>``, ``api.internal.<cluster>``, the address and the first service address;
- ``--use-service-account-credentials=true`` for the controller manager, as kOps runs it: without it
  RBAC keeps the disruption controller from writing PodDisruptionBudget status;
- a front-proxy (requestheader) CA, or the controller manager floods its log;
- ``--endpoint-reconciler-type=none``: the advertised address is the loopback one, which the default
  reconciler refuses to publish every 10 s.
"""

import ipaddress
import os
import shutil
import ssl
import subprocess
import time
import urllib.request

from . import pki

KUBE_VERSION = "1.35.4"
DEFAULT_SERVICE_RANGE = "100.64.0.0/13"  # kops' default serviceClusterIPRange (pkg/model/components)


def bin_dir():
    """Where scripts/ensure_kube.sh put the binaries (str): ``KOPSIBLE_KUBE_BIN`` or .cache/bin."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("KOPSIBLE_KUBE_BIN") or os.path.join(root, ".cache", "bin")


class ControlPlaneError(RuntimeError):
    """A component did not start; the message names it and the tail of its log."""


class ControlPlane(object):
    """The control plane of cluster ``name`` on ``address`` (a 127.x.y.z string), state under ``workdir``.

    :param ca: the cluster's CA (:class:`pki.Keypair`, from ``kubernetes-ca``).
    :param service_account: the service-account signing key (:class:`pki.Keypair`).
    :param service_range: the cluster's ``serviceClusterIPRange`` (CIDR str).
    After :meth:`start`: ``url`` (``https://address``), ``admin_kubeconfig`` (a kubeconfig with a
    ``system:masters`` client certificate for the node agent), ``started_seconds`` (float).
    """

    def __init__(self, name, address, workdir, ca, service_account, service_range=DEFAULT_SERVICE_RANGE):
        self.name, self.address, self.workdir = name, address, workdir
        self.ca, self.service_account = ca, service_account
        self.service_range = service_range or DEFAULT_SERVICE_RANGE
        self.url = "https://%s" % address
        self.procs = {}
        self.admin_kubeconfig = None
        self.started_seconds = None

    # -- files -------------------------------------------------------------------------------------
    def _prepare(self):
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(os.path.join(self.workdir, "pki"))
        d = os.path.join(self.workdir, "pki")
        files = {}
        with open(os.path.join(d, "ca.crt"), "wb") as handle:
            handle.write(self.ca.cert_pem)
        files["ca"] = os.path.join(d, "ca.crt")
        first_service_ip = str(next(ipaddress.ip_network(self.service_range, strict=False).hosts()))
        serving = pki.issue(
            self.ca,
            "kubernetes-master",
            server=True,
            dns_names=[
                "api." + self.name,
                "api.internal." + self.name,
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
            ],
            ip_addresses=[self.address, first_service_ip],
        )
        files["serving"] = pki.write(d, "apiserver", serving)
        with open(os.path.join(d, "sa.pub"), "wb") as handle:
            handle.write(self.service_account.public_key_pem())
        files["sa_pub"] = os.path.join(d, "sa.pub")
        files["sa_key"] = pki.write(d, "sa", self.service_account)[1]
        front_ca = pki.self_signed_ca("kopsible-front-proxy-ca")
        files["front_ca"] = pki.write(d, "front-proxy-ca", front_ca)[0]
        files["front_client"] = pki.write(d, "front-proxy-client", pki.issue(front_ca, "front-proxy-client"))
        for user, cn, orgs in (
            ("controller-manager", "system:kube-controller-manager", ()),
            ("scheduler", "system:kube-scheduler", ()),
            ("admin", "kopsible-node-agent", ("system:masters",)),
        ):
            files[user] = pki.kubeconfig(
                os.path.join(self.workdir, user + ".kubeconfig"), self.url, self.ca.cert_pem, pki.issue(self.ca, cn, organizations=orgs)
            )
        self.admin_kubeconfig = files["admin"]
        return files

    # -- processes ---------------------------------------------------------------------------------
    def _spawn(self, component, argv):
        log = open(os.path.join(self.workdir, component + ".log"), "ab")
        env = dict(os.environ, GOMAXPROCS=os.environ.get("KOPSIBLE_KUBE_GOMAXPROCS", "2"))
        self.procs[component] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()

    def _log_tail(self, component, lines=15):
        try:
            with open(os.path.join(self.workdir, component + ".log"), errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def _wait(self, component, probe, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.procs[component]
            if proc.poll() is not None:
                raise ControlPlaneError("%s of %s exited with %s:\n%s" % (component, self.name, proc.returncode, self._log_tail(component)))
            if probe():
                return
            time.sleep(0.1)
        raise ControlPlaneError("%s of %s not ready within %ss:\n%s" % (component, self.name, timeout, self._log_tail(component)))

    def _get(self, url, context=None):
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return response.status == 200
        except (OSError, ValueError):
            return False

    def start(self, timeout=60):
        """Start the four components and wait for the API's ``/readyz``; returns self.

        Raises :class:`ControlPlaneError` naming the component that failed (its log tail included).
        """
        started = time.monotonic()
        files = self._prepare()
        b = bin_dir()
        etcd_url = "http://%s:2379" % self.address
        self._spawn(
            "etcd",
            [
                os.path.join(b, "etcd"),
                "--name",
                "kopsible",
                "--data-dir",
                os.path.join(self.workdir, "etcd"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                "http://%s:2380" % self.address,
                "--initial-advertise-peer-urls",
                "http://%s:2380" % self.address,
                "--initial-cluster",
                "kopsible=http://%s:2380" % self.address,
                "--listen-metrics-urls",
                "",
                "--log-level",
                "warn",
                "--quota-backend-bytes",
                str(512 << 20),
            ],
        )
        self._wait("etcd", lambda: self._get(etcd_url + "/health"), 30)
        self._spawn(
            "kube-apiserver",
            [
                os.path.join(b, "kube-apiserver"),
                "--etcd-servers",
                etcd_url,
                "--bind-address",
                self.address,
                "--secure-port",
                "443",
                "--advertise-address",
                self.address,
                "--endpoint-reconciler-type",
                "none",
                "--tls-cert-file",
                files["serving"][0],
                "--tls-private-key-file",
                files["serving"][1],
                "--client-ca-file",
                files["ca"],
                "--authorization-mode",
                "Node,RBAC",
                "--allow-privileged=true",
                "--service-cluster-ip-range",
                self.service_range,
                "--service-account-key-file",
                files["sa_pub"],
                "--service-account-signing-key-file",
                files["sa_key"],
                "--service-account-issuer",
                "https://api.internal." + self.name,
                "--requestheader-client-ca-file",
                files["front_ca"],
                "--requestheader-allowed-names",
                "front-proxy-client",
                "--requestheader-username-headers",
                "X-Remote-User",
                "--requestheader-group-headers",
                "X-Remote-Group",
                "--requestheader-extra-headers-prefix",
                "X-Remote-Extra-",
                "--proxy-client-cert-file",
                files["front_client"][0],
                "--proxy-client-key-file",
                files["front_client"][1],
                "--profiling=false",
                "--v",
                "1",
            ],
        )
        context = ssl.create_default_context(cafile=files["ca"])
        self._wait("kube-apiserver", lambda: self._get(self.url + "/readyz", context), timeout)
        self._spawn(
            "kube-controller-manager",
            [
                os.path.join(b, "kube-controller-manager"),
                "--kubeconfig",
                files["controller-manager"],
                "--use-service-account-credentials=true",
                "--service-account-private-key-file",
                files["sa_key"],
                "--root-ca-file",
                files["ca"],
                "--cluster-name",
                self.name,
                "--leader-elect=false",
                "--secure-port",
                "0",
                "--profiling=false",
                "--v",
                "1",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                os.path.join(b, "kube-scheduler"),
                "--kubeconfig",
                files["scheduler"],
                "--leader-elect=false",
                "--secure-port",
                "0",
                "--profiling=false",
                "--v",
                "1",
            ],
        )
        time.sleep(0.2)
        for component in ("kube-controller-manager", "kube-scheduler"):
            if self.procs[component].poll() is not None:
                raise ControlPlaneError("%s of %s exited with %s:\n%s" % (component, self.name, self.procs[component].returncode, self._log_tail(component)))
        self.started_seconds = time.monotonic() - started
        return self

    def alive(self):
        """True while every component runs."""
        return bool(self.procs) and all(p.poll() is None for p in self.procs.values())

    def rss_bytes(self):
        """Resident memory of the four components together (int, bytes, from /proc)."""
        total = 0
        for proc in self.procs.values():
            try:
                with open("/proc/%d/status" % proc.pid) as handle:
                    for line in handle:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total

    def stop(self, keep=False):
        """Stop every component (scheduler and controller manager first, etcd last); remove the state
        directory unless ``keep``."""
        for component in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            proc = self.procs.get(component)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs = {}
        if not keep:
            shutil.rmtree(os.path.join(self.workdir, "etcd"), ignore_errors=True)
