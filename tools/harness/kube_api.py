"""A read-only Kubernetes API that serves recorded objects, for the PodDisruptionBudget check.

It answers the three list calls the check makes (``GET /api/v1/nodes``, ``GET /api/v1/pods``,
``GET /apis/policy/v1/poddisruptionbudgets``) with ``{"kind": "...List", "items": [...]}`` in the API's
JSON shape, over plain HTTP on a free loopback port, and records the paths asked. Anything else is a
404 Status object. It is not a Kubernetes API server: it exists so that the kubernetes Python client
code path is exercised end to end against objects recorded from a cluster.
"""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

LISTS = {"/api/v1/nodes": ("NodeList", "v1", "nodes"), "/api/v1/pods": ("PodList", "v1", "pods"),
         "/apis/policy/v1/poddisruptionbudgets": ("PodDisruptionBudgetList", "policy/v1", "pdbs")}


class KubeAPI(object):
    """Serve ``objects`` (dict with lists ``nodes``, ``pods``, ``pdbs``) until :meth:`stop`.

    ``url`` is ``http://127.0.0.1:PORT``; ``requests`` lists the paths asked (str).
    """

    def __init__(self, objects):
        self.objects = objects
        self.requests = []
        self.server = None
        self.url = None

    def start(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                api.requests.append(self.path)
                if path in LISTS:
                    kind, version, key = LISTS[path]
                    body = {"kind": kind, "apiVersion": version, "metadata": {"resourceVersion": "1"},
                            "items": api.objects.get(key, [])}
                    code = 200
                else:
                    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
                    code = 404
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def kubeconfig(self, path, context):
        """Write a kubeconfig for this server with one context named ``context`` (its current context);
        the user carries a recognisable token so that tests can look for leaks. Returns ``path``."""
        config = {"apiVersion": "v1", "kind": "Config", "current-context": context,
                  "clusters": [{"name": context, "cluster": {"server": self.url}}],
                  "users": [{"name": context, "user": {"token": "kopsible-test-bearer-token-do-not-leak"}}],
                  "contexts": [{"name": context, "context": {"cluster": context, "user": context}}]}
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        os.chmod(path, 0o600)
        return path

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def node(name, instance_group, instance_id, zone="us-east-1a", role="node"):
    """A Node object as kops' nodes carry it (labels from pkg/nodelabels/builder.go)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kops.k8s.io/instancegroup": instance_group,
                                                  "topology.kubernetes.io/zone": zone,
                                                  "node-role.kubernetes.io/%s" % role: ""}},
            "spec": {"providerID": "aws:///%s/%s" % (zone, instance_id)},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def pod(namespace, name, node_name, labels, phase="Running"):
    """A Pod object scheduled on ``node_name``."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
            "status": {"phase": phase}}


def pdb(namespace, name, selector, disruptions_allowed, min_available=None):
    """A policy/v1 PodDisruptionBudget with its status as the disruption controller writes it."""
    spec = {"selector": selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"disruptionsAllowed": disruptions_allowed, "currentHealthy": 1,
                                     "desiredHealthy": 1, "expectedPods": 1, "observedGeneration": 1}}
