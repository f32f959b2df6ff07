"""tools/harness/ports.py: an occupied address is refused naming the process that holds it (read from /proc)."""

import os
import socket

import pytest

from harness.ports import AddressTaken, _decode, ensure_free, holders


def test_proc_net_addresses_decode():
    assert _decode("0100007F:0035") == ("127.0.0.1", 53)
    assert _decode("00000000000000000000000000000000:1F90") == ("::", 8080)


@pytest.mark.parametrize("proto", ["udp", "tcp"])
def test_a_held_port_is_refused_naming_this_process(proto):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if proto == "udp" else socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        if proto == "tcp":
            sock.listen(1)
        port = sock.getsockname()[1]
        with open("/proc/self/comm") as handle:
            name = handle.read().strip()
        found = holders("127.0.0.1", port, proto)
        assert len(found) == 1 and found[0].startswith("%s (pid %d: " % (name, os.getpid())), found
        with pytest.raises(AddressTaken) as caught:
            ensure_free("127.0.0.1", port, proto, hint="choose another")
        assert str(caught.value).startswith("127.0.0.1:%d/%s is taken by %s (pid %d: " % (port, proto, name, os.getpid()))
        assert str(caught.value).endswith(". choose another")
    finally:
        sock.close()
    ensure_free("127.0.0.1", port, proto)  # free again once closed
