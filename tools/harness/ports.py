"""Is a loopback address and port free, and if not, which process holds it (for the sandbox, the demo and the
tests' DNS face, which refuse an occupied address instead of sharing it).

Linux only: the holder is found through /proc/net/{udp,tcp}[6] (the socket's inode) and /proc/<pid>/fd (which
process has that socket open), the same tables ``ss -lntup`` reads.
"""

import errno
import os
import socket
import struct


class AddressTaken(RuntimeError):
    """``address``:``port``/``proto`` cannot be bound; the message names the process(es) holding it."""


_PROTOS = {"udp": socket.SOCK_DGRAM, "tcp": socket.SOCK_STREAM}
_TCP_LISTEN = "0A"


def _decode(hex_address):
    """``'0100007F:0035'`` -> ``('127.0.0.1', 53)``; IPv6 entries (32 hex digits) -> ``('::...', port)``."""
    host, port = hex_address.split(":")
    if len(host) == 8:
        return socket.inet_ntoa(struct.pack("<I", int(host, 16))), int(port, 16)
    words = [struct.pack("<I", int(host[i : i + 8], 16)) for i in range(0, 32, 8)]
    return socket.inet_ntop(socket.AF_INET6, b"".join(words)), int(port, 16)


def _socket_inodes(address, port, proto):
    """Inodes (set of str) of the sockets bound to ``port`` on ``address`` or on a wildcard address
    (0.0.0.0, ::, or ``address`` mapped into IPv6); TCP sockets only when listening."""
    wanted = {address, "0.0.0.0", "::", "::ffff:" + address}
    inodes = set()
    for table in (proto, proto + "6"):
        try:
            with open("/proc/net/" + table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            host, bound_port = _decode(local)
            if bound_port == port and host in wanted and (proto == "udp" or state == _TCP_LISTEN):
                inodes.add(inode)
    return inodes


def holders(address, port, proto="udp"):
    """The processes holding ``address``:``port`` (``proto`` 'udp' or 'tcp'), as str like
    ``'named (pid 812: /usr/sbin/named -f -u bind)'``; list, empty when none is found (or /proc is not
    readable)."""
    inodes = _socket_inodes(address, port, proto)
    found = []
    if not inodes:
        return found
    targets = {"socket:[%s]" % inode for inode in inodes}
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        if _links("/proc/%s/fd" % pid) & targets:
            found.append(_describe(pid))
    return found


def _links(fd_dir):
    """What the descriptors in ``fd_dir`` point at (set of str); a descriptor closed meanwhile (the listing's own,
    for this process) or a process gone or not readable is left out."""
    links = set()
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return links
    for fd in fds:
        try:
            links.add(os.readlink(os.path.join(fd_dir, fd)))
        except OSError:
            pass
    return links


def _describe(pid):
    try:
        with open("/proc/%s/comm" % pid) as handle:
            name = handle.read().strip()
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "pid %s" % pid
    return "%s (pid %s: %s)" % (name, pid, cmdline[:200])


def ensure_free(address, port, proto="udp", hint=""):
    """Raise :class:`AddressTaken` unless ``address``:``port``/``proto`` can be bound right now (bound and
    released at once, without SO_REUSEADDR for UDP, so that a server that would share the port is found).
    The message names the holders and adds ``hint`` (e.g. how to choose another address). Returns None.
    A refused bind for lack of privilege (port 53 needs root) is raised as AddressTaken too, saying so."""
    sock = socket.socket(socket.AF_INET, _PROTOS[proto])
    try:
        if proto == "tcp":  # a TIME_WAIT connection left by an earlier run does not hold the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
    except OSError as exc:
        raise AddressTaken(taken_message(address, port, proto, exc, hint)) from exc
    finally:
        sock.close()


def taken_message(address, port, proto, exc, hint=""):
    """The refusal text for a failed bind of ``address``:``port``/``proto`` (``exc``: the OSError)."""
    where = "%s:%d/%s" % (address, port, proto)
    if exc.errno == errno.EACCES:
        text = "%s: permission denied (ports below 1024 need root)" % where
    elif exc.errno == errno.EADDRNOTAVAIL:
        text = "%s: no such local address" % where
    elif exc.errno == errno.EADDRINUSE:
        found = holders(address, port, proto)
        text = "%s is taken by %s" % (where, "; ".join(found) if found else "another process (not visible in /proc)")
    else:
        text = "%s cannot be bound: %s" % (where, exc)
    return text + ((". " + hint) if hint else "")
