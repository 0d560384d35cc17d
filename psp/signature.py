"""Webhook signatures, Stripe's scheme:
``Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(whsec, "t.body")>``.

Pure functions: the simulator signs what it delivers (``sign``); ``verify`` is its own
check, used by its tests and tools. A receiver verifies deliveries with
``stripe.Webhook.construct_event`` (the simulator's tests do), or code of its own.

Several ``v1=`` entries are accepted (secret rotation): one match is enough.
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Stripe-Signature"
SCHEME = "v1"

MALFORMED = "malformed header"
STALE = "stale timestamp"
MISMATCH = "signature mismatch"


class SignatureError(ValueError):
    """The header does not prove the payload came from the simulator."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def compute(secret: str, payload: bytes, timestamp: int) -> str:
    """The hex HMAC-SHA256 of ``f"{timestamp}." + payload`` under ``secret``."""
    signed = str(int(timestamp)).encode() + b"." + payload
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, payload: bytes, timestamp: int | float) -> str:
    """The header value for ``payload`` sent at ``timestamp`` (unix seconds)."""
    t = int(timestamp)
    return f"t={t},{SCHEME}={compute(secret, payload, t)}"


def parse(header: str) -> tuple[int, list[str]]:
    """The timestamp and the ``v1`` signatures of a header; SignatureError(MALFORMED)."""
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep or not key or not value:
            raise SignatureError(MALFORMED)
        if key == "t":
            if (timestamp is not None or len(value) > 15
                    or not (value.isascii() and value.isdigit())):  # int('²') fails
                raise SignatureError(MALFORMED)
            timestamp = int(value)
        elif key == SCHEME:
            signatures.append(value)
    if timestamp is None or not signatures:
        raise SignatureError(MALFORMED)
    return timestamp, signatures


def verify(secret: str, payload: bytes, header: str, *, now: float,
           tolerance: float = 300) -> None:
    """Return if one ``v1`` signature matches and ``t`` is within ``tolerance``
    seconds of ``now`` (either way); raise :class:`SignatureError` otherwise.
    The signature is checked first, so a forged header reports MISMATCH.
    ``tolerance=math.inf`` disables the age check."""
    timestamp, signatures = parse(header)
    expected = compute(secret, payload, timestamp)
    if not any(hmac.compare_digest(expected.encode(), candidate.encode())
               for candidate in signatures):
        raise SignatureError(MISMATCH)
    if abs(now - timestamp) > tolerance:
        raise SignatureError(STALE)
