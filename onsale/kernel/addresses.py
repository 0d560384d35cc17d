"""What one client address counts as, for the per-address limits (pure): the
sign-in throttle (``core/signin_throttle.py``) and the operator-token throttle
(``kernel.admin_throttle``)."""

from __future__ import annotations

import ipaddress

from starlette.requests import HTTPConnection


def address_bucket(host: str) -> str:
    """What one client address counts as: the address itself for IPv4 (and an
    IPv4-mapped IPv6 address), its /64 for IPv6, the raw text otherwise."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:64] or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_bucket(connection: HTTPConnection) -> str:
    """The bucket of the TCP peer (onsale reads no ``X-Forwarded-For``)."""
    return address_bucket(connection.client.host if connection.client else "")
