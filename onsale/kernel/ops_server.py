"""The ops listener's server (kernel/ops_listener.py says which paths it serves): a
second uvicorn server on the process's event loop, beside the public one, sharing its
app and state. Started after the app's lifespan (its routes read the state the
lifespan made), stopped before it ends. Signals stay the public server's."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import uvicorn

from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.http_server import uvicorn_config
from onsale.kernel.ops_listener import OPS, Listener


class OpsServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()  # bound, or failed (uvicorn then exits the process)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the public server takes them
        yield

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


@contextlib.asynccontextmanager
async def ops_listener(app: Any, host: str, port: int, limits: HttpLimits,
                       serves: str = "/metrics, /readyz, /healthz, /openapi.json") -> Any:
    """The ops listener for the length of a block; a port that cannot be bound ends the
    process at start-up (uvicorn logs why)."""
    server = OpsServer(uvicorn_config(
        Listener(app, OPS), host, port, limits, counted=False, log_level="warning",
        access_log=False, log_config=None, lifespan="off", proxy_headers=False,
        server_header=False, date_header=False))
    task = asyncio.create_task(server.serve(), name="onsale-ops-listener")
    await server.ready.wait()
    if not server.started:
        raise SystemExit(2)
    print(f"ops listener on http://{host}:{port}/ ({serves})", flush=True)
    try:
        yield server
    finally:
        server.should_exit = True
        await task
