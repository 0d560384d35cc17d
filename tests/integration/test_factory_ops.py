"""The app factory under plain uvicorn: public paths on uvicorn's port, the ops routes
on ONSALE_OPS_PORT only, and no factory without that port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from onsale.embedded import EmbeddedValkey, free_port
from tests.stack import Process

UVICORN = str(Path(sys.executable).parent / "uvicorn")


def test_the_factory_serves_metrics_on_its_ops_port_only(db_url: str,
                                                         valkey: EmbeddedValkey) -> None:
    port, ops = free_port(), free_port()
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": valkey.url,
           "ONSALE_ROLE": "worker", "ONSALE_OPS_PORT": str(ops)}
    proc = Process([UVICORN, "--factory", "onsale.compose:app_from_env", "--host",
                    "127.0.0.1", "--port", str(port)], env, "ops listener on", "factory")
    try:
        assert httpx.get(f"http://127.0.0.1:{ops}/metrics", timeout=10).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{ops}/healthz", timeout=10).json() == {
            "status": "ok"}
        public = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert (public.status_code, public.json()["code"]) == (404, "not_found")
    finally:
        proc.stop()


def test_the_factory_needs_an_ops_port(db_url: str, valkey: EmbeddedValkey) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ONSALE_OPS_PORT"}
    env.update({"DATABASE_URL": db_url, "REDIS_URL": valkey.url, "ONSALE_ROLE": "worker"})
    done = subprocess.run([UVICORN, "--factory", "onsale.compose:app_from_env", "--port",
                           str(free_port())], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode != 0 and "ONSALE_OPS_PORT" in done.stderr + done.stdout
