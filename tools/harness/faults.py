"""AWS faults in tests: the fault-injecting proxy (tools/fault_proxy.py) in front of the emulator.

::

    with faulty(emulator, rate=0.2, seed=7) as proxied:
        run = run_playbook(tasks, emulator=proxied)     # modules talk to the proxy
        proxied.proxy.stats()["faults"]                 # how many faults were injected
        emulator.client("route53")                      # reads straight from the emulator

With ``rate=0`` the proxy only counts requests (AWS API calls per run).
"""

import contextlib
import os
import sys

_TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)

from fault_proxy import DEFAULT_MIX, FaultProxy  # noqa: E402


class ProxiedEmulator:
    """The emulator as seen through a :class:`FaultProxy`: same credentials and region, the
    proxy's URL as endpoint. It has what :func:`harness.playbook.run_playbook` uses (``url``,
    :meth:`aws_env`) and :meth:`client` for boto3 calls through the proxy; everything else
    (``reset``, ``snapshot``...) goes to the emulator itself.
    """

    def __init__(self, emulator, proxy):
        self.emulator, self.proxy = emulator, proxy
        self.url = proxy.url

    def aws_env(self):
        """The emulator's AWS environment with ``AWS_ENDPOINT_URL`` pointing at the proxy (dict)."""
        env = self.emulator.aws_env()
        env["AWS_ENDPOINT_URL"] = self.url
        return env

    def client(self, service, region="us-east-1", config=None):
        """A boto3 client whose requests go through the proxy (``config``: a botocore Config)."""
        import boto3

        env = self.emulator.aws_env()
        return boto3.session.Session().client(
            service,
            endpoint_url=self.url,
            region_name=region,
            config=config,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        )

    def __getattr__(self, name):
        return getattr(self.emulator, name)


@contextlib.contextmanager
def faulty(emulator, rate=0.0, seed=0, mix=None, services=None, operations=None, max_faults=None, latency=0.0, clients=None):
    """Start a :class:`FaultProxy` in front of ``emulator`` for the ``with`` block.

    :param rate: fault probability per AWS request (0..1); 0 counts requests only.
    :param seed: seed of the fault sequence (int).
    :param mix: ``{kind: weight}`` (kinds ``throttle``, ``server``, ``drop``, ``lost``, ``busy``); default
        ``DEFAULT_MIX``.
    :param services: signing names to fault (e.g. ``['route53']``); default all.
    :param operations: ``service:Operation`` names to fault (e.g. ``['route53:CreateHostedZone']``); default all.
    :param max_faults: at most this many faults in all (e.g. ``1``: one lost response, then every retry answered).
    :param latency: seconds added to every forwarded request (a modelled AWS round trip).
    :param clients: fault only the requests of these clients (``['botocore']``: the modules, not kops).
    :yields: a :class:`ProxiedEmulator` (its ``proxy`` attribute is the FaultProxy).
    :raises ValueError: bad rate or mix.
    """
    proxy = FaultProxy(
        emulator.url,
        rate=rate,
        seed=seed,
        mix=mix or DEFAULT_MIX,
        services=services,
        operations=operations,
        max_faults=max_faults,
        latency=latency,
        clients=clients,
    ).start()
    try:
        yield ProxiedEmulator(emulator, proxy)
    finally:
        proxy.stop()
