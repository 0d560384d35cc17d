"""Webhook events (pure): ids and the exact bytes that are signed and delivered."""

from __future__ import annotations

import json
import re
import secrets
import string
from typing import Any

# The version this simulator's objects follow (stripe-python 16.x's default); events
# carry it, and an API request's ``Stripe-Version`` header is answered with it.
API_VERSION = "2026-10-28.endive"


def new_id(prefix: str) -> str:
    """``pi_`` / ``evt_`` / ``req_`` followed by 24 hex digits."""
    return f"{prefix}_{secrets.token_hex(12)}"


_BASE62 = string.digits + string.ascii_letters


def new_payment_method_id() -> str:
    """``pm_`` and 24 letters and digits, as Stripe's ids look. Never a run of twelve
    digits: a page sends this id to the shop, which refuses anything that looks like
    a card number (hex ids would, about once in twenty)."""
    while True:
        tail = "".join(secrets.choice(_BASE62) for _ in range(24))
        if not re.search(r"\d{12}", tail):
            return f"pm_{tail}"


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def body(event_id: str, event_type: str, created: int, intent: dict[str, Any], *,
         request_id: str | None = None, idempotency_key: str | None = None,
         api_version: str = API_VERSION) -> bytes:
    """Stripe's Event as delivered: the PaymentIntent snapshot at the moment of the
    change; ``request`` names the API request that caused it (none for the shopper's
    3-D Secure answer or a lapse)."""
    return dumps({"id": event_id, "object": "event", "api_version": api_version,
                  "created": created, "data": {"object": intent}, "livemode": False,
                  "pending_webhooks": 1,
                  "request": {"id": request_id, "idempotency_key": idempotency_key},
                  "type": event_type})
