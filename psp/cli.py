"""``onsale psp``: serve the payment provider simulator (docs/psp.md)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.http_server import uvicorn_config
from onsale.kernel.logs import LogSettings, configure
from onsale.kernel.settings import ConfigError, unknown_names, variable_names
from onsale.psp.config import DEFAULT_PORT, PspConfig

ROLE = "psp"


class _Stopped(Exception):
    """SIGTERM, re-raised by uvicorn after its graceful shutdown."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onsale psp", description="Serve the Stripe-like payment provider simulator. "
        "Settings come from ONSALE_PSP_* variables (docs/psp.md).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--data-dir", dest="data_dir",
                   help="where the SQLite state lives (default: $ONSALE_PSP_DATA_DIR "
                        "or .onsale/psp)")
    return p


def serve(app: Any, host: str, port: int, ready_message: str,
          metrics: tuple[str, int] | None = None) -> None:
    """Run uvicorn until Ctrl-C or SIGTERM; print ``ready_message`` once bound. With
    ``metrics`` (host, port), ``/metrics`` and ``/healthz`` answer there too."""
    import contextlib

    import uvicorn

    from onsale.kernel.ops_server import ops_listener
    from onsale.psp.metrics import metrics_app

    class Server(uvicorn.Server):
        metrics_stack: contextlib.AsyncExitStack | None = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if not self.started:
                return
            if metrics is not None:
                self.metrics_stack = contextlib.AsyncExitStack()
                await self.metrics_stack.enter_async_context(ops_listener(
                    metrics_app(app.state.metrics_registry), *metrics,
                    HttpLimits.from_env(os.environ), serves="/metrics, /healthz"))
            print(ready_message, flush=True)

        async def shutdown(self, sockets: Any = None) -> None:
            if self.metrics_stack is not None:
                await self.metrics_stack.aclose()
            await super().shutdown(sockets=sockets)

    # The stdlib loop, not uvloop: measured with bench/psp.py, uvloop was no faster here
    # while webhooks were flowing, let deliveries fall behind, and held the first
    # request of connections opened under load for over a second (docs/psp.md).
    # The same bounded HTTP protocol and ONSALE_HTTP_* limits as every onsale role
    # (docs/security.md#bounded-http).
    config = uvicorn_config(app, host, port, HttpLimits.from_env(os.environ),
                            log_level="warning", access_log=False, log_config=None,
                            lifespan="on", proxy_headers=False, server_header=False,
                            loop="asyncio", timeout_graceful_shutdown=5)

    def stopped(signum: int, frame: FrameType | None) -> None:
        raise _Stopped

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, stopped) if main_thread else None
    try:
        Server(config).run()
    except (KeyboardInterrupt, _Stopped):  # uvicorn re-raises the signal after shutdown
        pass
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for line in unknown_names(os.environ, variable_names((PspConfig, HttpLimits, LogSettings)),
                              prefixes=("ONSALE_PSP_", "ONSALE_HTTP_", "ONSALE_LOG_",
                                        "ONSALE_ACCESS_LOG")):
        print(f"onsale psp: warning: {line}", file=sys.stderr)
    try:
        configure(ROLE, LogSettings.from_env(os.environ), default_format="json")
        config = PspConfig.from_env(os.environ, port=args.port, data_dir=args.data_dir)
        HttpLimits.from_env(os.environ)
    except ConfigError as exc:
        print(f"onsale psp: {exc}", file=sys.stderr)
        return 2
    from onsale.psp.app import build_psp_app

    serve(build_psp_app(config), args.host, args.port,
          f"onsale psp: serving on http://{args.host}:{args.port}/",
          (config.metrics_host, config.metrics_port) if config.metrics_port else None)
    print("onsale psp: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
