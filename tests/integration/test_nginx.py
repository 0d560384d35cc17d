"""deploy/nginx in Debian's real nginx, in front of ``onsale dev``: a whole purchase goes
through it (sign-up, the queue, the seat map's WebSocket, a hold, the checkout), the ops
paths are not public, a client's X-Request-ID is replaced by nginx's, and an oversized
body is refused at the door. Only the listen address and the certificate's paths differ
from the shipped files (this test cannot bind 443 or use the deployment's certificate);
the upstreams point at the one dev process, which serves every role."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect

from onsale.embedded import free_port
from tests.integration.test_cli import ONSALE, _wait_for
from tests.unit.test_deploy import named_metrics

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def self_signed(directory: Path) -> tuple[Path, Path]:
    chain, private = directory / "fullchain.pem", directory / "privkey.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(private), "-out", str(chain)],
                   check=True, capture_output=True)
    return chain, private


def replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r} in the shipped file"
    return text.replace(old, new)


def nginx_config(work: Path, upstream_port: int, port: int) -> Path:
    """The shipped files, with the listen address and certificate paths of this test."""
    chain, private = self_signed(work)
    upstreams = re.sub(r"server (edge|seatmap|core):8000;", f"server 127.0.0.1:{upstream_port};",
                       (ROOT / "deploy/nginx/upstreams.conf").read_text())
    assert upstreams.count("127.0.0.1") == 3
    site = (ROOT / "deploy/nginx/onsale.conf").read_text()
    site = replaced(site, "listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    site = replaced(site, "/etc/nginx/tls/fullchain.pem", str(chain))
    site = replaced(site, "/etc/nginx/tls/privkey.pem", str(private))
    (work / "upstreams.conf").write_text(upstreams)
    (work / "onsale.conf").write_text(site)
    temp = "\n".join(f"    {kind}_temp_path {work / kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = work / "nginx.conf"
    main.write_text(f"""pid {work / 'nginx.pid'};
error_log {work / 'error.log'} info;
events {{ worker_connections 256; }}
http {{
    access_log {work / 'access.log'};
{temp}
    include {work / 'upstreams.conf'};
    include {work / 'onsale.conf'};
}}
""")
    return main


@pytest.fixture(scope="module")
def dev_behind_nginx() -> Iterator[tuple[str, int, str]]:
    """(nginx's https base URL, the demo event, the dev process's ops listener)."""
    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed (apt-get install -y nginx; .ci/run does)")
    work = Path(tempfile.mkdtemp(prefix="onsale-test-nginx-"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "ONSALE_SEATMAP_SLOT")}
    env["ONSALE_DATA_DIR"] = str(work / "state")
    dev_port, port = free_port(), free_port()
    ops_port = free_port()
    env["ONSALE_OPS_PORT"] = str(ops_port)
    dev = subprocess.Popen([ONSALE, "dev", "--port", str(dev_port), "--seats", "60"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    nginx = None
    try:
        out = _wait_for(dev, "serving on", 180)
        event = re.search(r"demo event (\d+)", out)
        assert event is not None, out
        config = nginx_config(work, dev_port, port)
        checked = subprocess.run([NGINX, "-t", "-c", str(config)], capture_output=True,
                                 text=True)
        assert checked.returncode == 0, checked.stderr
        nginx = subprocess.Popen([NGINX, "-c", str(config), "-g", "daemon off;"],
                                 stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and nginx.poll() is None, "nginx did not start"
                time.sleep(0.1)
        yield f"https://127.0.0.1:{port}", int(event[1]), f"http://127.0.0.1:{ops_port}"
    finally:
        if nginx is not None:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(15)
        dev.send_signal(signal.SIGINT)
        dev.communicate(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


async def test_a_purchase_goes_through_nginx(dev_behind_nginx: tuple[str, int, str]) -> None:
    base, event_id, _ = dev_behind_nginx
    async with httpx.AsyncClient(base_url=base, verify=False, timeout=30) as c:
        for path in ("/metrics", "/healthz", "/readyz", "/openapi.json"):
            assert (await c.get(path)).status_code == 404, path
        too_big = await c.post("/api/accounts", content=b"x" * (2 * 1024 * 1024),
                               headers={"Content-Type": "application/json"})
        assert too_big.status_code == 413 and "nginx" in too_big.text  # refused at the door

        signed = await c.post("/api/accounts", json={"email": "nginx@example.com",
                                                     "password": "correct horse battery"},
                              headers={"X-Request-ID": "chosen-by-the-client"})
        assert signed.status_code == 201, signed.text
        rid = signed.headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", rid), rid  # nginx's $request_id, not the client's

        joined = await c.post(f"/api/events/{event_id}/queue")
        assert joined.status_code == 200, joined.text
        state, deadline = joined.json(), time.monotonic() + 90
        while state["state"] != "admitted":
            assert time.monotonic() < deadline, state
            await asyncio.sleep(min(float(state.get("poll_after_seconds") or 1), 1.0))
            polled = await c.get(f"/api/events/{event_id}/queue")
            assert polled.status_code == 200, polled.text
            state = polled.json()
        token = state["admission_token"]

        # The seat map's WebSocket, upgraded through nginx.
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
        cookies = "; ".join(f"{k}={v}" for k, v in c.cookies.items())
        ws_url = base.replace("https://", "wss://") + f"/ws/events/{event_id}/seatmap"
        async with ws_connect(ws_url, ssl=tls, additional_headers={
                "Cookie": cookies, "Admission-Token": token}) as ws:
            first = await asyncio.wait_for(ws.recv(), 15)
        assert first, "the seat map sent nothing"

        admitted = {"Admission-Token": token}
        held = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [1, 2]},
                            headers={**admitted, "Idempotency-Key": "nginx-hold"})
        assert held.status_code == 201, held.text
        paid = await c.post(f"/api/holds/{held.json()['hold_id']}/checkout",
                            json={"payment_method": "pm_card_visa"},
                            headers={**admitted, "Idempotency-Key": "nginx-pay"})
        assert paid.status_code == 201, paid.text
        order_id, deadline = paid.json()["order_id"], time.monotonic() + 60
        while True:
            order = (await c.get(f"/api/orders/{order_id}")).json()
            if (order["order_status"], order["payment_status"]) == ("CONFIRMED", "CAPTURED"):
                break
            assert time.monotonic() < deadline, json.dumps(order)
            await asyncio.sleep(0.2)


async def test_every_metric_the_rules_and_the_dashboard_name_is_exported(
        dev_behind_nginx: tuple[str, int, str]) -> None:
    """deploy/prometheus/rules.yml and deploy/grafana/onsale.json name only metrics a
    running onsale exports (dev runs every role, so it exports every family)."""
    _, _, ops = dev_behind_nginx
    async with httpx.AsyncClient(base_url=ops, timeout=30) as c:
        scraped = await c.get("/metrics")
    assert scraped.status_code == 200
    families = set(re.findall(r"^# TYPE (\w+) ", scraped.text, re.M))
    families |= {re.sub(r"_total$", "", f) for f in families}
    named = named_metrics()
    assert len(named) >= 20
    assert sorted(named - families) == []
