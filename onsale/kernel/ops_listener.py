"""The ops listener (docs/operations.md#the-ops-listener): ``/metrics``, ``/readyz``,
``/healthz`` and ``/openapi.json`` answer on a second port of each process, on loopback
unless told otherwise, and on no public listener.

One app serves both listeners (the same state, pools and registry); each listener tags
the requests it accepts (``Listener``) and the app answers a path only on the listener
it belongs to (kernel/fast_lane.py), a plain 404 elsewhere. An app called without a tag
(a test's in-process client) serves every path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from onsale.kernel.settings import ConfigError, Section, load, setting

OPS_PATHS = frozenset({"/metrics", "/readyz", "/healthz", "/openapi.json"})
TAG = "onsale.listener"
PUBLIC, OPS = "public", "ops"
OFFSET = 1000  # the ops port, unless set: the public port + 1000


def refused(scope: Scope) -> bool:
    """Whether the listener that accepted ``scope`` does not serve its path."""
    listener = scope.get(TAG)
    if listener is None:
        return False
    if scope["type"] == "websocket":
        return bool(listener == OPS)
    return (scope["path"] in OPS_PATHS) != bool(listener == OPS)


class Listener:
    """The app as one listener sees it: its requests tagged ``public`` or ``ops``."""

    def __init__(self, app: ASGIApp, tag: str) -> None:
        self.app = app
        self.tag = tag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            scope[TAG] = self.tag
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class OpsSettings(Section):
    """Where a process serves its metrics, health and API document."""

    ops_host: str = setting(
        "127.0.0.1", "The ops listener's address: `/metrics`, `/readyz`, `/healthz` and "
        "`/openapi.json`, which no public listener serves. Loopback by default; "
        "`0.0.0.0` for a scraper on another host (keep the port off the public network).")
    ops_port: int = setting(
        0, "The ops listener's port; 0: the public port + 1000 (`onsale serve --port 8000` "
        "serves them on 9000).", lo=0, hi=65535, default_doc="public port + 1000")

    @classmethod
    def from_env(cls, env: Any) -> OpsSettings:
        return load(cls, env)

    def port_for(self, public_port: int) -> int:
        port = self.ops_port or public_port + OFFSET
        if port > 65535 or port == public_port:
            raise ConfigError(f"the ops listener cannot use port {port} (public port "
                              f"{public_port}): set ONSALE_OPS_PORT")
        return port
