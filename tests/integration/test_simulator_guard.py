"""The payment simulator never takes real money by accident
(docs/security.md#the-payment-simulator-never-takes-real-money): every simulator
response says ``Onsale-Simulator: 1``; ``onsale serve --role core`` (and worker)
refuse to start against it unless ONSALE_ALLOW_SIMULATOR=true; an unreachable
provider does not stop startup, and an answer or a webhook from the simulator is
not trusted without the setting. Real processes, as tests/stack.py runs them."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from onsale.compose import Tiers, app_for
from onsale.core.psp_client import SIMULATOR_HEADER
from onsale.core.stripe_provider import StripeProvider
from onsale.embedded import free_port
from tests.conftest import make_settings
from tests.stack import ONSALE, PSP_KEY, PSP_PUBLISHABLE, WEBHOOK_SECRET, Process, Stack


@pytest.fixture
async def simulator(db_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    stack = Stack(db_url, tmp_path)
    stack.start_psp()
    try:
        yield stack
    finally:
        stack.stop()


def serve(role: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ONSALE, "serve", "--role", role, "--port", str(free_port())],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


async def test_every_simulator_response_says_so(simulator: Stack) -> None:
    async with httpx.AsyncClient(base_url=simulator.psp_url) as c:
        for response in (await c.get("/healthz"), await c.get("/"),
                         await c.get("/v1/payment_intents/pi_x"),
                         await c.get("/v1/payment_intents/pi_x",
                                     headers={"Authorization": f"Bearer {PSP_KEY}"})):
            assert response.headers.get(SIMULATOR_HEADER) == "1", response


@pytest.mark.parametrize("role", ["core", "worker"])
async def test_serve_refuses_the_simulator_without_the_setting(
        simulator: Stack, role: str) -> None:
    env = simulator.core_env()
    env.pop("ONSALE_ALLOW_SIMULATOR")
    refused = serve(role, env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "ONSALE_ALLOW_SIMULATOR" in refused.stderr and "simulator" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_serve_starts_with_the_setting_or_an_unreachable_provider(
        simulator: Stack) -> None:
    allowed = Process([ONSALE, "serve", "--role", "core", "--port", str(free_port())],
                      simulator.core_env(), "serving on", "core")
    allowed.stop()
    env = simulator.core_env(ONSALE_STRIPE_API_BASE=f"http://127.0.0.1:{free_port()}")
    env.pop("ONSALE_ALLOW_SIMULATOR")
    down = Process([ONSALE, "serve", "--role", "core", "--port", str(free_port())],
                   env, "serving on", "core")
    try:
        assert any("did not answer" in line for line in down.output), down.output
    finally:
        down.stop()


async def test_an_answer_from_the_simulator_is_no_answer_without_the_setting(
        simulator: Stack) -> None:
    guarded = StripeProvider(simulator.psp_url, PSP_KEY, 2.0)
    allowed = StripeProvider(simulator.psp_url, PSP_KEY, 2.0, allow_simulator=True)
    try:
        refused = await guarded.retrieve("pi_missing")
        assert refused.status_code is None and refused.error is not None
        assert "simulator" in refused.error  # UNKNOWN: nothing is sold on its word
        assert (await allowed.retrieve("pi_missing")).status_code == 404
    finally:
        await guarded.close()
        await allowed.close()


async def test_a_webhook_from_the_simulator_is_refused_without_the_setting(
        db_url: str) -> None:
    settings = make_settings(db_url, stripe_api_base=f"http://127.0.0.1:{free_port()}",
                             stripe_secret_key=PSP_KEY, stripe_publishable_key=PSP_PUBLISHABLE,
                             stripe_webhook_secret=WEBHOOK_SECRET, allow_simulator=False)
    app = app_for(Tiers(core=True), settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        r = await c.post("/api/webhooks/payments", content=b"{}",
                         headers={"Content-Type": "application/json", SIMULATOR_HEADER: "1"})
    assert r.status_code == 503 and r.json()["code"] == "payments_unavailable", r.text
