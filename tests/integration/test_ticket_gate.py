"""A ticket at the gate, end to end (docs/tickets.md): bought through the API, its QR
code fetched from the order page's link and decoded by Debian's ``zbarimg``, verified
by ``onsale ticket verify`` against the event's published keys, then refused once its
order is cancelled and the scanner has synced the revocations."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from onsale.embedded import EmbeddedPostgres
from tests.integration.test_checkout import checkout, held, new_account, new_event, order, settle
from tests.stack import APPROVE, ONSALE, Stack, connected, started_stack


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("stack")) as s:
        yield s


@pytest.fixture
async def db(stack: Stack) -> AsyncIterator[Any]:
    async with connected(stack) as conn:
        yield conn


def zbarimg() -> str:
    found = shutil.which("zbarimg")
    if found is None:
        pytest.fail("zbarimg not found: the QR round trip needs Debian's zbar-tools "
                    "(apt-get install -y zbar-tools; .ci/run installs it)")
    return found


def decode_qr(png: Path) -> str:
    done = subprocess.run([zbarimg(), "--quiet", "--raw", "-Sqrcode.enable", str(png)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n")


def gate(*args: str) -> subprocess.CompletedProcess[str]:
    """``onsale ticket verify ...`` as a gate runs it."""
    return subprocess.run([ONSALE, "ticket", "verify", *args], capture_output=True,
                          text=True, timeout=60, check=False)


async def bought_ticket(stack: Stack, db: Any, seat: int) -> tuple[int, uuid.UUID, str,
                                                                  dict[str, Any]]:
    """An event, an account and its paid order of one seat, its ticket issued."""
    event_id = await new_event(stack, name="Gate night")
    me = await new_account(db)
    async with stack.client(me) as c:
        r = await checkout(c, await held(c, event_id, [seat]), APPROVE)
        assert r.status_code == 201, r.text
        order_id = (await settle(c, r.json(), ("CONFIRMED", "CAPTURED")))["order_id"]
        # what the ticket consumer does on order.confirmed (core/tickets.py)
        assert await db.fetchval("SELECT onsale_issue_tickets($1)",
                                 uuid.UUID(order_id)) == "issued"
        (ticket,) = (await order(c, order_id))["tickets"]
    return event_id, me, order_id, ticket


async def test_a_ticket_scans_verifies_offline_and_is_refused_once_cancelled(
        stack: Stack, db: Any, tmp_path: Path) -> None:
    event_id, me, order_id, ticket = await bought_ticket(stack, db, seat=3)
    assert ticket["value"].startswith("OT1.") and ticket["seat_id"] == 3
    image = f"/orders/{order_id}/tickets/{ticket['ticket_id']}"
    async with stack.client(me) as c:
        page = (await c.get(f"/orders/{order_id}")).text
        assert f'src="{image}.svg"' in page
        assert 'alt="QR code of your ticket for Section ' in page and ', seat ' in page
        assert ticket["value"] in page  # the value in text below its code
        png = await c.get(f"{image}.png")
        svg = await c.get(f"{image}.svg?download")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "attachment" in svg.headers["content-disposition"]
    assert b"<title>Ticket for Section " in svg.content
    async with stack.client(await new_account(db)) as stranger:
        assert (await stranger.get(f"{image}.png")).status_code == 404

    (tmp_path / "ticket.png").write_bytes(png.content)
    value = decode_qr(tmp_path / "ticket.png")
    assert value == ticket["value"]

    async with httpx.AsyncClient(base_url=stack.core_url, timeout=30) as anyone:
        keys = await anyone.get(f"/api/events/{event_id}/ticket-keys")
        assert keys.status_code == 200 and "max-age" in keys.headers["cache-control"]
        assert [k["kid"] for k in keys.json()["keys"]] == [keys.json()["signing_kid"]]
        revocations = await anyone.get(f"/api/events/{event_id}/ticket-revocations")
        assert revocations.status_code == 200 and revocations.json()["revoked"] == []
        etag = revocations.headers["etag"]
        unchanged = await anyone.get(f"/api/events/{event_id}/ticket-revocations",
                                     headers={"If-None-Match": etag})
        assert unchanged.status_code == 304
        assert (await anyone.get(f"/api/events/{event_id}/ticket-revocations",
                                 params={"since": "yesterday"})).json()["code"] == \
            "invalid_request"
        assert (await anyone.get("/api/events/999999/ticket-keys")).json()["code"] == \
            "event_not_found"
    (tmp_path / "keys.json").write_text(keys.text)
    (tmp_path / "revocations.json").write_text(revocations.text)

    valid = gate(value, "--keys", str(tmp_path / "keys.json"),
                 "--revocations", str(tmp_path / "revocations.json"))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert valid.stdout.startswith("valid:") and f"event {event_id}, seat 3" in valid.stdout
    assert gate(value, "--url", stack.core_url).returncode == 0
    head, payload, signature = value.split(".")
    forged = gate(f"{head}.{payload}.{signature[:-2]}{'AA' if signature[-2:] != 'AA' else 'BA'}",
                  "--keys", str(tmp_path / "keys.json"))
    assert forged.returncode == 1 and forged.stdout.startswith("forged:")

    # No refund or cancellation route exists yet (issue 28, part 1): the order is
    # cancelled as such a route would leave it, and the revocations follow its state.
    await db.execute("UPDATE orders SET status = 'CANCELLED', cancel_reason = 'refunded', "
                     "updated_at = clock_timestamp() WHERE order_id = $1",
                     uuid.UUID(order_id))
    async with httpx.AsyncClient(base_url=stack.core_url, timeout=30) as anyone:
        synced = await anyone.get(f"/api/events/{event_id}/ticket-revocations",
                                  headers={"If-None-Match": etag})
        since = await anyone.get(f"/api/events/{event_id}/ticket-revocations",
                                 params={"since": revocations.json()["as_of"]})
    assert synced.status_code == 200 and synced.headers["etag"] != etag
    (revoked,) = synced.json()["revoked"]
    assert (revoked["ticket_id"], revoked["reason"]) == (ticket["ticket_id"], "cancelled")
    assert [r["ticket_id"] for r in since.json()["revoked"]] == [ticket["ticket_id"]]
    (tmp_path / "revocations.json").write_text(synced.text)

    refused = gate(value, "--keys", str(tmp_path / "keys.json"),
                   "--revocations", str(tmp_path / "revocations.json"), "--json")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    verdict = json.loads(refused.stdout)
    assert (verdict["valid"], verdict["reason"]) == (False, "revoked")
    assert verdict["ticket"]["ticket"] == ticket["ticket_id"]
    online = gate(value, "--url", stack.core_url)
    assert online.returncode == 1 and online.stdout.startswith("revoked:")


async def test_the_cli_says_when_it_cannot_read_its_keys(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text('{"not": "keys"}')
    done = gate("OT1.a.b", "--keys", str(tmp_path / "keys.json"))
    assert done.returncode == 2 and "not a ticket-keys document" in done.stderr
    missing = gate("OT1.a.b", "--keys", str(tmp_path / "absent.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
