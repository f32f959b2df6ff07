"""The Kubernetes half of the local world: a real control plane per emulated kops cluster.

- :mod:`pki`: the cluster's CA and service-account keys read from the kops state store, and the
  certificates the control plane serves and uses, issued by that CA.
- :mod:`control_plane`: etcd + kube-apiserver + kube-controller-manager + kube-scheduler (real binaries
  built by scripts/ensure_kube.sh) on a loopback address of the cluster's own, port 443.
- :mod:`node_agent`: stands in for the kubelets: one Node per running instance of the cluster in the
  emulator, leases and status, pods run and finished, control-plane static pods.
- :mod:`world`: watches the emulator's state stores and starts/stops a control plane and node agent per
  applied cluster; plays dns-controller for the API records.

Development tooling (tests, demo, sandbox), not part of the collection. See docs/emulator.md.
"""
