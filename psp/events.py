"""Webhook events (pure): ids and the exact bytes that are signed and delivered."""

from __future__ import annotations

import json
import secrets
from typing import Any


def new_id(prefix: str) -> str:
    """``pi_`` / ``evt_`` followed by 24 hex digits."""
    return f"{prefix}_{secrets.token_hex(12)}"


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def body(event_id: str, event_type: str, created: int, intent: dict[str, Any]) -> bytes:
    """The event as delivered: the PaymentIntent snapshot at the moment of the change."""
    return dumps({"id": event_id, "object": "event", "type": event_type, "created": created,
                  "data": {"object": intent}})
