"""Idempotency decisions (pure): replay, conflict, in progress, or a new request.

A key is scoped per API key and remembers the fingerprint of its first request
(method, path and the canonical JSON of the body) and, once processed, the
response. A key older than the retention period counts as unused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StoredKey:
    fingerprint: str
    created: float
    status: int | None  # None while the first request is being processed
    body: bytes | None


@dataclass(frozen=True, slots=True)
class New:
    pass


@dataclass(frozen=True, slots=True)
class Replay:
    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Conflict:
    pass


@dataclass(frozen=True, slots=True)
class InProgress:
    pass


Decision = New | Replay | Conflict | InProgress


def canonical_json(body: Any) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(method: str, path: str, body: Any) -> str:
    text = f"{method.upper()} {path}\n{canonical_json(body)}"
    return hashlib.sha256(text.encode()).hexdigest()


def scope(api_key: str) -> str:
    """Keys are stored per API key, under a digest rather than the key itself."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32]


def expired(stored: StoredKey, now: float, retention: float) -> bool:
    return now - stored.created >= retention


def decide(stored: StoredKey | None, fp: str, now: float, retention: float) -> Decision:
    if stored is None or expired(stored, now, retention):
        return New()
    if stored.fingerprint != fp:
        return Conflict()
    if stored.status is None or stored.body is None:
        return InProgress()
    return Replay(stored.status, stored.body)
