"""The seed of a pre-queue's random draw and its published commitment (pure).

Core makes the seed when an event with a pre-queue is created and publishes only
``commitment = sha256(seed)`` (hex of the seed's ASCII bytes) until the draw; the
waiting room draws with it (``onsale.edge.draw``) and then reveals it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_seed() -> str:
    """256 random bits, hex."""
    return secrets.token_hex(32)


def commitment(seed: str) -> str:
    return hashlib.sha256(seed.encode("ascii")).hexdigest()


def verify_commitment(seed: str, published: str) -> bool:
    return hmac.compare_digest(commitment(seed), published)
