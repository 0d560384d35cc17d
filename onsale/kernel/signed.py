"""Checking itsdangerous-signed values on the hot path, in one pass (docs/design.md#signed-values).

itsdangerous signs every cookie and token we hand out (sessions, admission tokens,
queue tickets). Its ``loads`` builds a new signer and re-derives the key on every call,
which costs about 25 µs per token on the development machine; a poll checks two tokens
and a hold two more. :class:`Unsigner` checks exactly the same format with the key
derived once: split, one ``hmac.digest``, a constant-time compare, the timestamp, then
the serializer's own ``load_payload``. Signing stays with itsdangerous; a token either
path accepts, the other accepts too (``tests/unit/test_signed.py``).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Hashable
from typing import Any

from itsdangerous import BadSignature, SignatureExpired
from itsdangerous.encoding import base64_decode, bytes_to_int
from itsdangerous.serializer import Serializer
from itsdangerous.timed import TimestampSigner


class Unsigner:
    """``serializer.loads`` for a serializer without fallback signers (ours)."""

    def __init__(self, serializer: Serializer[str],
                 clock: Callable[[], float] | None = None) -> None:
        if serializer.fallback_signers:
            raise ValueError("fallback signers are not supported")
        signer = serializer.make_signer()
        # itsdangerous tries the newest (last) key first; so do we.
        self._keys = tuple(signer.derive_key(k) for k in reversed(signer.secret_keys))
        self._digest: str = signer.digest_method().name
        self._sep = signer.sep
        self._timed = isinstance(signer, TimestampSigner)
        self._load = serializer.load_payload
        self._clock = clock  # None: time.time(), looked up on each call as itsdangerous does

    def loads(self, token: str | bytes, max_age: float | None = None) -> Any:
        """The payload, or ``BadSignature`` (``SignatureExpired`` past ``max_age``)."""
        payload, signed_at = self.loads_stamped(token)
        if max_age is not None and signed_at is not None:
            check_age(signed_at, max_age, (self._clock or time.time)())
        return payload

    def loads_stamped(self, token: str | bytes) -> tuple[Any, int | None]:
        """(the payload, when it was signed: unix seconds, None if untimed), or
        ``BadSignature``; the caller judges the age (``check_age``)."""
        raw = token.encode("utf-8") if isinstance(token, str) else token
        value, sep, sig = raw.rpartition(self._sep)
        if not sep:
            raise BadSignature("no separator")
        try:
            expected = base64_decode(sig)
        except Exception as exc:
            raise BadSignature("malformed signature") from exc
        for key in self._keys:
            if hmac.compare_digest(hmac.digest(key, value, self._digest), expected):
                break
        else:
            raise BadSignature("signature does not match")
        signed_at = None
        if self._timed:
            value, sep, stamp = value.rpartition(self._sep)
            if not sep:
                raise BadSignature("no timestamp")
            try:
                signed_at = bytes_to_int(base64_decode(stamp))
            except Exception as exc:
                raise BadSignature("malformed timestamp") from exc
        return self._load(value), signed_at


def fresh(signed_at: int, max_age: float, now: float) -> bool:
    """Not older than ``max_age`` and not from the future (as itsdangerous judges it)."""
    return 0 <= now - signed_at <= max_age


def check_age(signed_at: int, max_age: float, now: float) -> None:
    """``SignatureExpired`` unless ``fresh``."""
    if not fresh(signed_at, max_age, now):
        raise SignatureExpired("signature expired or from the future")


class Memo:
    """Values already checked, by the exact token (or headers): one seen again costs a
    dictionary lookup instead of a signature check. Bounded: past ``max_entries``
    the oldest entry goes first. Only for values whose validity does not change
    but by their age, which the caller checks on every use."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: dict[Hashable, Any] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, token: Hashable) -> Any:
        return self._entries.get(token)

    def put(self, token: Hashable, value: Any) -> None:
        entries = self._entries
        if len(entries) >= self.max_entries:
            del entries[next(iter(entries))]
        entries[token] = value
