"""The whole local world started as one: the emulator (the AWS half), its DNS face on port 53 and the kube world
(a real control plane per applied cluster). The one launcher of `make demo` (scripts/demo.py) and `make sandbox`
(scripts/sandbox.py); the tests start the same parts as session fixtures (tests/conftest.py) because they pause
the kube world between files.
"""

import os

from . import ports
from .emulator import Emulator
from .kops_env import KopsDNS, module_options
from .kubeworld_runner import KubeWorldProcess, prefix_for

DNS_PORT = 53


class LocalWorld(object):
    """The emulator on 127.0.0.1:``port`` (0: any free port), its DNS face on ``dns_address``:53, and the kube
    world with its control planes on ``prefix_for(dns_address)``.N:443.

    :param log_dir: where the emulator's log and the kube world's state and logs go (default: the system's temp
        directory for the emulator, .cache/kube-world/<prefix> for the world).
    :param hint: added to the refusal when an address is taken (how to choose another).
    Attributes once started: ``emulator`` (:class:`Emulator`), ``dns`` (:class:`KopsDNS`), ``world``
    (:class:`KubeWorldProcess`). :meth:`start` raises :class:`ports.AddressTaken` naming the process that holds the
    DNS address or the emulator's port, before anything is started.
    """

    def __init__(self, dns_address="127.0.0.1", port=0, log_dir=None, hint=""):
        self.dns_address, self.port, self.log_dir, self.hint = dns_address, port, log_dir, hint
        self.emulator = self.dns = self.world = None

    def check_free(self):
        """Raise :class:`ports.AddressTaken` if the DNS address (UDP 53) or the emulator's port (TCP) is taken."""
        ports.ensure_free(self.dns_address, DNS_PORT, "udp", self.hint)
        if self.port:
            ports.ensure_free("127.0.0.1", self.port, "tcp", self.hint)

    def start(self):
        """Check the addresses, then start the emulator, the kube world and the DNS face; returns self. On a
        failure, what was started is stopped again and the error raised."""
        self.check_free()
        log_dir = self.log_dir
        self.emulator = Emulator(log_path=os.path.join(log_dir, "emulator.log") if log_dir else None, port=self.port)
        try:
            self.emulator.start()
            self.world = KubeWorldProcess(
                self.emulator, prefix_for(self.dns_address), state_dir=os.path.join(log_dir, "kube-world") if log_dir else None
            ).start()
            self.dns = KopsDNS(self.emulator, address=self.dns_address, names=self.world.names).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Stop the DNS face, the kube world (and every control plane it runs) and the emulator."""
        if self.dns is not None:
            self.dns.stop()
        if self.world is not None:
            self.world.stop()
        if self.emulator is not None:
            self.emulator.stop()
        self.dns = self.world = self.emulator = None

    def create_parent_zone(self, name):
        """Create the public hosted zone ``name`` (the zone a user already has); returns its id (str)."""
        r53 = self.emulator.client("route53")
        return r53.create_hosted_zone(Name=name.rstrip(".") + ".", CallerReference="parent-" + name)["HostedZone"]["Id"]

    def kops_options(self):
        """``kops_binary`` and ``kops_env`` for the kops modules (dict; :func:`kops_env.module_options`)."""
        return module_options(self.dns)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
