# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Delegation checks through real DNS queries (dnspython), the way ``dig`` is used in the kOps guide.

A delegation of ``name`` is verified when
1. every parent name server answers an NS query for ``name`` with exactly the expected set (as a
   referral in the authority section, or in the answer when it is also authoritative), and
2. every child name server answers an SOA query for ``name`` authoritatively (AA flag set).
"""

import time

try:
    import dns.flags
    import dns.message
    import dns.query
    import dns.rdatatype
    import dns.resolver

    HAS_DNSPYTHON = True
except ImportError:  # reported by the module through missing_required_lib
    HAS_DNSPYTHON = False


def _norm(value):
    return str(value).lower().rstrip(".")


def split_server(entry, default_port=53):
    """Split a server given as ``IP``, ``IP:PORT`` or ``[IPv6]:PORT`` into ``(ip, port)``.

    :raises ValueError: a port that is not a number in 1..65535.
    """
    entry = entry.strip()
    host, port = entry, default_port
    if entry.startswith("["):
        host, dummy, rest = entry[1:].partition("]")
        if rest.startswith(":"):
            port = rest[1:]
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    try:
        port = int(port)
    except ValueError:
        raise ValueError("%r: the port must be a number" % entry) from None
    if not 1 <= port <= 65535:
        raise ValueError("%r: the port must be between 1 and 65535" % entry)
    return host, port


def resolve_addresses(hosts, timeout=5.0):
    """Map name-server host names to IP addresses with the system resolver.

    :param hosts: list of host names or IP literals (IP literals are kept as they are).
    :returns: ``(addresses, errors)``: list of str, and list of ``'host: reason'`` str.
    """
    addresses, errors = [], []
    resolver = dns.resolver.Resolver()
    resolver.lifetime = timeout
    for host in hosts:
        if all(part.isdigit() for part in host.split(".")) or ":" in host:
            addresses.append(host)
            continue
        try:
            addresses.extend(str(r) for r in resolver.resolve(host, "A"))
        except Exception as exc:  # dnspython raises many types; each is a reason to report
            errors.append("%s: %s" % (host, exc))
    return addresses, errors


def _ask(server, port, qname, rdtype, timeout):
    query = dns.message.make_query(qname, rdtype)
    query.flags &= ~dns.flags.RD  # ask the authoritative server itself, as dig +norec does
    response = dns.query.udp(query, server, port=port, timeout=timeout)
    if response.flags & dns.flags.TC:
        response = dns.query.tcp(query, server, port=port, timeout=timeout)
    return response


def ns_from_parent(server, port, name, timeout):
    """NS host names (sorted list of str) that ``server`` hands out for ``name``, from answer or authority."""
    response = _ask(server, port, name, "NS", timeout)
    found = set()
    for section in (response.answer, response.authority):
        for rrset in section:
            if rrset.rdtype == dns.rdatatype.NS and _norm(rrset.name) == name:
                found.update(_norm(r.target) for r in rrset)
    return sorted(found)


def soa_from_child(server, port, name, timeout):
    """The SOA ``{'mname', 'serial'}`` that ``server`` answers authoritatively for ``name``, or None."""
    response = _ask(server, port, name, "SOA", timeout)
    if not response.flags & dns.flags.AA:
        return None
    for rrset in response.answer:
        if rrset.rdtype == dns.rdatatype.SOA and _norm(rrset.name) == name:
            soa = rrset[0]
            return {"mname": _norm(soa.mname), "serial": soa.serial}
    return None


_FAILED = object()


def _ask_each(result, side, address, port, query):
    """Run ``query()``; record its answer (or the error, as a problem) under ``result[side]['ip:port']``."""
    server = "%s:%d" % (address, port)
    try:
        answer = query()
    except Exception as exc:  # dnspython raises many types (timeout, refused, malformed): each is a reason
        result[side][server] = "error: %s" % exc
        result["problems"].append("%s server %s: %s" % (side, server, exc))
        return _FAILED
    result[side][server] = answer
    return answer


def check_once(name, expected_ns, parent_servers, child_servers, timeout=3.0):
    """One pass of both checks.

    :param name: the delegated subdomain (normalised str).
    :param expected_ns: the child zone's name servers (list of str, normalised).
    :param parent_servers / child_servers: servers to query (list of ``(ip, port)`` tuples).
    :returns: dict ``{'ok': bool, 'parent': {ip: [ns...] | 'error'}, 'child': {ip: soa | 'error'},
        'problems': [str]}``.
    """
    result = {"ok": False, "parent": {}, "child": {}, "problems": []}
    expected = sorted(_norm(n) for n in expected_ns)
    if not parent_servers:
        result["problems"].append("no parent name server address to query")
    if not child_servers:
        result["problems"].append("no child name server address to query")
    for address, port in parent_servers:
        got = _ask_each(result, "parent", address, port, lambda a=address, p=port: ns_from_parent(a, p, name, timeout))
        if got is _FAILED:
            continue
        if not got:
            result["problems"].append("parent server %s:%d has no NS delegation for %s" % (address, port, name))
        elif got != expected:
            result["problems"].append("parent server %s:%d delegates %s to %s, expected %s" % (address, port, name, ", ".join(got), ", ".join(expected)))
    for address, port in child_servers:
        soa = _ask_each(result, "child", address, port, lambda a=address, p=port: soa_from_child(a, p, name, timeout))
        if soa is None:
            result["problems"].append("child server %s:%d gives no authoritative SOA for %s" % (address, port, name))
    result["ok"] = not result["problems"]
    return result


def verify_delegation(name, expected_ns, parent_servers, child_servers, timeout=60.0, interval=1.0):
    """Repeat :func:`check_once` until it passes or ``timeout`` seconds pass (a fresh delegation often
    fails at first while the change propagates).

    :returns: the last :func:`check_once` dict plus ``'attempts'`` (int) and ``'seconds'`` (float).
    """
    start = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        result = check_once(name, expected_ns, parent_servers, child_servers, timeout=min(3.0, max(timeout, 0.5)))
        elapsed = time.monotonic() - start
        if result["ok"] or elapsed + interval > timeout:
            result["attempts"] = attempts
            result["seconds"] = round(elapsed, 3)
            return result
        time.sleep(interval)
