"""Where a server listens: whether an address is this machine's alone, a socket bound to it,
and the base URL clients use. No uvicorn here: the window asks `is_loopback` as the user types
a host, and binds on the server's own thread.
"""

from __future__ import annotations

import ipaddress
import socket


def is_loopback(host: str) -> bool:
    """Whether `host` can be reached only from this machine. A name other than localhost
    counts as the network's: what it resolves to is not ours to promise."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; OSError says why not (taken, not this machine's)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def url(sock: socket.socket) -> str:
    """The base URL clients use: http://host:port/v1 (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"
