"""One API endpoint per control-plane instance, in front of the cluster's one real kube-apiserver.

On AWS each control-plane (or APIServer) instance runs its own kube-apiserver, and dns-controller keeps
``api.<cluster>`` and ``api.internal.<cluster>`` at the addresses of the instances that run one (kops'
``dns.alpha.kubernetes.io/external``/``internal`` annotations on the kube-apiserver pods, nodeup's manifest). So an
instance being replaced takes its endpoint away, and a cluster with a single control-plane instance has no API at all
while that instance is replaced: the record still names the old address, which refuses connections, until the new
instance's dns-controller writes its own.

The world keeps one real kube-apiserver per cluster. :class:`Forwarder` gives each serving instance a loopback
address of its own (port 443) that relays TCP to that server (TLS stays end to end: clients check the server's
certificate against ``api.<cluster>``, which the address does not change); closing it refuses new connections and
cuts the open ones, as an instance that is terminated does.
"""

import socket
import threading


class Forwarder:
    """A TCP relay from ``address``:``port`` to ``target``:``port`` (loopback addresses, str; port int).

    Started listening by the constructor (raises OSError when the address cannot be bound); :meth:`close` stops
    listening and closes every relayed connection. A connection the target refuses is closed at once."""

    def __init__(self, address, target, port=443):
        self.address, self.target, self.port = address, target, port
        self.lock = threading.Lock()
        self.connections = set()
        self.closed = False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((address, port))
            self.sock.listen(64)
        except OSError:
            self.sock.close()
            raise
        threading.Thread(target=self._accept, name="api-endpoint-%s" % address, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _peer = self.sock.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection((self.target, self.port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.closed:
                    client.close()
                    upstream.close()
                    return
                self.connections.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                self._drop(sock)

    def _drop(self, sock):
        with self.lock:
            self.connections.discard(sock)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

    def close(self):
        """Stop listening and cut every relayed connection (idempotent)."""
        with self.lock:
            self.closed = True
            connections = list(self.connections)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the listening thread
        except OSError:
            pass
        self.sock.close()
        for sock in connections:
            self._drop(sock)
