"""A real authoritative DNS server (Debian's bind9 ``named``) on a loopback address, for tests and the demo.

:class:`NamedServer` serves zones given as data; :func:`zones_from_route53` reads the emulator's
public hosted zones so that one server can stand in for Route53's name servers (every emulator zone
has the same four name servers, so one server hosting all of them is faithful to that set-up).
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import dns.message
import dns.query

from .process import stop_process


def named_binary():
    """Path of ``named`` (str). Raises RuntimeError when bind9 is not installed."""
    for path in (shutil.which("named"), "/usr/sbin/named"):
        if path and os.path.exists(path):
            return path
    raise RuntimeError("bind9 'named' is not installed: run scripts/ensure_system_deps.sh")


def free_udp_port(address="127.0.0.1"):
    """A port number (int) free for both UDP and TCP on ``address`` right now."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((address, 0))
            port = udp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((address, port))
                    return port
                except OSError:
                    continue


def _fqdn(name):
    return name.rstrip(".") + "."


def zone_text(origin, records, serial=1):
    """BIND zone file text for ``origin`` (str) from ``records``.

    :param records: list of ``{'name', 'type', 'ttl', 'values'}`` dicts (names absolute, no trailing
        dot needed). A missing SOA is synthesised from the first apex NS value.
    """
    origin = origin.rstrip(".")
    lines = ["$ORIGIN %s" % _fqdn(origin), "$TTL 300"]
    apex_ns = [r for r in records if r["type"] == "NS" and r["name"].rstrip(".") == origin]
    if not any(r["type"] == "SOA" for r in records):
        mname = _fqdn(apex_ns[0]["values"][0]) if apex_ns else "ns." + _fqdn(origin)
        lines.append("@ 900 IN SOA %s hostmaster.%s %d 7200 900 1209600 86400" % (mname, _fqdn(origin), serial))
    for record in records:
        for value in record["values"]:
            if record["type"] in ("NS", "CNAME"):
                value = _fqdn(value)
            elif record["type"] == "TXT" and not value.startswith('"'):
                value = '"%s"' % value
            lines.append("%s %d IN %s %s" % (_fqdn(record["name"]), record.get("ttl") or 300, record["type"], value))
    return "\n".join(lines) + "\n"


class NamedServer:
    """``named`` listening on ``address``:``port`` (UDP and TCP), serving ``zones``.

    :param zones: dict ``{origin: [record dicts]}`` (see :func:`zone_text`).
    Use :meth:`start`, :meth:`reload` (rewrites zones and restarts; ~0.3 s), :meth:`stop`.
    """

    def __init__(self, zones, address="127.0.0.1", port=None):
        self.zones = dict(zones)
        self.address = address
        self.port = port or free_udp_port(address)
        self.dir = tempfile.mkdtemp(prefix="kopsible-named-")
        self.proc = None
        self.serial = 1

    def _write(self):
        conf = [
            "options {",
            '  directory "%s";' % self.dir,
            '  pid-file "%s/named.pid";' % self.dir,
            '  session-keyfile "%s/session.key";' % self.dir,
            "  listen-on port %d { %s; };" % (self.port, self.address),
            "  listen-on-v6 { none; };",
            "  recursion no;",
            "  dnssec-validation no;",
            "  allow-query { any; };",
            "  querylog yes;",
            "};",
            "controls { };",
        ]
        for origin, records in sorted(self.zones.items()):
            path = os.path.join(self.dir, origin.rstrip(".") + ".zone")
            with open(path, "w") as handle:
                handle.write(zone_text(origin, records, self.serial))
            conf.append('zone "%s" { type primary; file "%s"; };' % (origin.rstrip("."), path))
        with open(os.path.join(self.dir, "named.conf"), "w") as handle:
            handle.write("\n".join(conf) + "\n")

    def start(self, timeout=20.0):
        """Start ``named`` in the foreground as a child; wait until it answers. Returns self."""
        self._write()
        self.log = open(os.path.join(self.dir, "named.log"), "ab")
        self.proc = subprocess.Popen(
            [named_binary(), "-g", "-n", "1", "-c", os.path.join(self.dir, "named.conf")], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        origin = next(iter(sorted(self.zones)), "example.org")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("named exited (%s); log: %s" % (self.proc.returncode, self.read_log()[-2000:]))
            try:
                dns.query.udp(dns.message.make_query(origin, "SOA"), self.address, port=self.port, timeout=0.5)
                return self
            except Exception:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("named did not answer on %s:%d" % (self.address, self.port))

    def read_log(self):
        with open(os.path.join(self.dir, "named.log"), "rb") as handle:
            return handle.read().decode(errors="replace")

    def wait_for_query(self, name, timeout=60.0):
        """Block until the query log (``querylog yes``) shows a query for ``name`` (str); True, or False on timeout."""
        needle = "query: %s " % name.rstrip(".").lower()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.read_log().lower():
                return True
            time.sleep(0.05)
        return False

    def reload(self, zones=None):
        """Serve ``zones`` (or the current ones, rewritten) by restarting named."""
        if zones is not None:
            self.zones = dict(zones)
        self.serial += 1
        self.stop()
        return self.start()

    def stop(self):
        stop_process(self.proc)
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()

    def cleanup(self):
        """Remove the server's directory (config, zones, log)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def zones_from_route53(client):
    """Public hosted zones of the emulator as ``{origin: [record dicts]}``.

    The emulator's SOA value is not zone-file text, so SOA is synthesised; alias records are left out.
    """
    zones = {}
    for page in client.get_paginator("list_hosted_zones").paginate():
        for zone in page["HostedZones"]:
            if zone.get("Config", {}).get("PrivateZone"):
                continue
            origin = zone["Name"].rstrip(".").lower()
            records = []
            for rpage in client.get_paginator("list_resource_record_sets").paginate(HostedZoneId=zone["Id"]):
                for rrset in rpage["ResourceRecordSets"]:
                    if rrset["Type"] == "SOA" or "AliasTarget" in rrset:
                        continue
                    records.append(
                        {
                            "name": rrset["Name"].rstrip(".").lower(),
                            "type": rrset["Type"],
                            "ttl": rrset.get("TTL", 300),
                            "values": [r["Value"] for r in rrset.get("ResourceRecords", [])],
                        }
                    )
            zones[origin] = records
    return zones
