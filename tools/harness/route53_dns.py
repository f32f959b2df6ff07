"""The emulator's DNS face: an authoritative DNS server on loopback that answers from the emulator's
Route53 hosted zones as they are at the moment of each query, the way Route53's name servers do.

kops resolves the NS records of the cluster's zone for real before it creates anything
(upup/pkg/fi/cloudup/dns.go); against the emulator those zones exist only in it, so kops is pointed
here (tools/kops-with-local-dns). Every emulator zone has the same four name servers, so one server
answering for all of them is faithful to that set-up.
"""

import socketserver
import threading

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

from . import ports


def _norm(name):
    return name.rstrip(".").lower().replace("\\052", "*")


class Route53View:
    """Reads the emulator's public zones through a boto3 Route53 client (``client_factory()``; boto3 clients are
    thread safe, so the factory may hand every query the same one, as ``Emulator.client`` does).

    ``names``: a callable returning ``{dns name: IPv4 address}`` for names outside Route53 that AWS's own
    DNS answers, here the API load balancers of the local world's clusters (their control plane's
    address, tools/kubeworld/world.py); alias records pointing at those names answer with it too.
    """

    def __init__(self, client_factory, names=None):
        self.client_factory = client_factory
        self.names = names or (lambda: {})

    def zones(self, client):
        """The emulator's public hosted zones (list of ListHostedZones items)."""
        zones = []
        for page in client.get_paginator("list_hosted_zones").paginate():
            zones.extend(z for z in page["HostedZones"] if not z.get("Config", {}).get("PrivateZone"))
        return zones

    def records(self, client, zone_id):
        """Every ResourceRecordSet of zone ``zone_id`` (list)."""
        records = []
        for page in client.get_paginator("list_resource_record_sets").paginate(HostedZoneId=zone_id):
            records.extend(page["ResourceRecordSets"])
        return records

    def answer(self, query):
        """A dns.message response to ``query`` (authoritative answer, referral, NODATA or NXDOMAIN)."""
        response = dns.message.make_response(query)
        question = query.question[0]
        qname, qtype = _norm(question.name.to_text()), question.rdtype
        extra = {_norm(k): v for k, v in self.names().items()}
        if qname in extra:
            response.flags |= dns.flags.AA
            if qtype == dns.rdatatype.A:
                response.answer.append(dns.rrset.from_text_list(qname + ".", 60, "IN", "A", [extra[qname]]))
            return response
        client = self.client_factory()
        candidates = [z for z in self.zones(client) if qname == _norm(z["Name"]) or qname.endswith("." + _norm(z["Name"]))]
        if not candidates:
            response.set_rcode(dns.rcode.REFUSED)
            return response
        zone = max(candidates, key=lambda z: len(z["Name"]))
        origin = _norm(zone["Name"])
        # moto's SOA value is not zone-file text (a printed dict): the SOA is synthesised below.
        records = []
        for r in self.records(client, zone["Id"]):
            if r["Type"] == "SOA":
                continue
            if "AliasTarget" in r:  # an alias answers with its target's addresses, as Route53 does
                target = extra.get(_norm(r["AliasTarget"].get("DNSName", "")))
                if not target or r["Type"] != "A":
                    continue
                r = {"Name": r["Name"], "Type": "A", "TTL": 60, "ResourceRecords": [{"Value": target}]}
            records.append(r)
        for rr in records:  # a delegation below this zone: answer with a referral
            name = _norm(rr["Name"])
            if rr["Type"] == "NS" and name != origin and (qname == name or qname.endswith("." + name)):
                response.authority.append(self._rrset(rr))
                return response
        response.flags |= dns.flags.AA
        apex_ns = [r for r in records if r["Type"] == "NS" and _norm(r["Name"]) == origin]
        mname = apex_ns[0]["ResourceRecords"][0]["Value"].rstrip(".") if apex_ns else "ns." + origin
        soa = dns.rrset.from_text(origin + ".", 900, "IN", "SOA", "%s. hostmaster.%s. 1 7200 900 1209600 86400" % (mname, origin))
        if qname == origin and qtype == dns.rdatatype.SOA:
            response.answer.append(soa)
            return response
        matching = [r for r in records if _norm(r["Name"]) == qname and r["Type"] in (dns.rdatatype.to_text(qtype), "CNAME")]
        if matching:
            response.answer.extend(self._rrset(r) for r in matching)
            return response
        if qname != origin and not any(_norm(r["Name"]) == qname for r in records):
            response.set_rcode(dns.rcode.NXDOMAIN)
        response.authority.append(soa)
        return response

    @staticmethod
    def _rrset(rr):
        values = [r["Value"] for r in rr.get("ResourceRecords", [])]
        if rr["Type"] in ("NS", "CNAME"):
            values = [v.rstrip(".") + "." for v in values]
        return dns.rrset.from_text_list(_norm(rr["Name"]) + ".", rr.get("TTL", 300), "IN", rr["Type"], values)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        try:
            query = dns.message.from_wire(data)
            response = self.server.view.answer(query)
        except Exception:  # a malformed packet or an emulator hiccup: SERVFAIL, like a real server
            try:
                response = dns.message.make_response(dns.message.from_wire(data))
                response.set_rcode(dns.rcode.SERVFAIL)
            except Exception:
                return
        sock.sendto(response.to_wire(), self.client_address)


class Route53DNS:
    """UDP DNS server on ``address``:``port`` answering from the emulator's Route53 (a daemon thread)."""

    def __init__(self, emulator, address="127.0.0.1", port=53, names=None):
        self.emulator, self.address, self.port, self.names = emulator, address, port, names
        self.server = None

    def start(self):
        """Bind UDP ``address``:``port`` and serve in a daemon thread; returns self.

        The socket is bound without SO_REUSEADDR: another DNS server on the same address and port makes this
        fail (raises :class:`ports.AddressTaken` naming it) instead of sharing the port, where each query would
        reach one server or the other and the other's answers (REFUSED for the emulator's zones) would win."""
        try:
            self.server = socketserver.ThreadingUDPServer((self.address, self.port), _Handler)
        except OSError as exc:
            raise ports.AddressTaken(ports.taken_message(self.address, self.port, "udp", exc)) from exc
        self.server.daemon_threads = True
        self.server.view = Route53View(lambda: self.emulator.client("route53"), self.names)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
