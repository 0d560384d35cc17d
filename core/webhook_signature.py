"""Checking a payment provider's webhook signature (pure).

``Psp-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "t.body")>``; several ``v1=``
entries are accepted (secret rotation), one match is enough. Core verifies what the
provider signs: the two sides share a test vector (tests/fixtures/webhook_signature.json),
not code.
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Psp-Signature"
SCHEME = "v1"

MALFORMED = "malformed header"
STALE = "stale timestamp"
MISMATCH = "signature mismatch"


class SignatureError(ValueError):
    """The header does not prove the payload came from the provider."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
    seconds of ``now`` (either way); raise :class:`SignatureError` otherwise. The
    signature is checked first, so a forged header reports MISMATCH."""
    timestamp, signatures = parse(header)
    signed = str(timestamp).encode() + b"." + payload
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected.encode(), candidate.encode())
               for candidate in signatures):
        raise SignatureError(MISMATCH)
    if abs(now - timestamp) > tolerance:
        raise SignatureError(STALE)
