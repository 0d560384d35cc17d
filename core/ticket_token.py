"""Signed ticket values a gate verifies offline (docs/tickets.md).

A ticket's value is ``OT1.<payload>.<signature>``: ``payload`` is the base64url (no
padding) of canonical JSON (sorted keys, no spaces) ``{v, kid, event, ticket, order,
seat | ga_tier + place, issued_at}``, and ``signature`` the base64url of the Ed25519
signature of the ASCII bytes ``OT1.<payload>``. Ed25519 is deterministic, so a ticket
signed twice with the same key has the same value: it is signed when it is read, never
stored. A scanner holds only the public keys (``GET /api/events/{id}/ticket-keys``) and
the revoked ticket ids (``GET /api/events/{id}/ticket-revocations``).

Pure: no I/O. :func:`verify` returns a :class:`Verdict` with one of the reasons of
``REASONS``; nothing here raises on a bad ticket.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from onsale.kernel.timefmt import parse_utc_iso, utc_iso

PREFIX = "OT1"
VERSION = 1
ALG = "Ed25519"
KID = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_VALUE = 2048  # characters; a real ticket is about 330

# Why a ticket is refused, or "valid" (the CLI prints it; docs/tickets.md).
REASONS = ("valid", "malformed", "unknown_key", "forged", "wrong_event", "expired",
           "revoked")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    """Strict base64url without padding; ValueError otherwise."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---- keys -------------------------------------------------------------------


def public_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private: Ed25519PrivateKey

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()


@dataclass(frozen=True)
class KeyRing:
    """The configured keys: the first signs, every one verifies."""

    keys: tuple[SigningKey, ...]

    @property
    def signer(self) -> SigningKey:
        return self.keys[0]

    def public(self) -> dict[str, Ed25519PublicKey]:
        return {k.kid: k.public for k in self.keys}


def derived_key(secret_key: str) -> SigningKey:
    """The key used while ONSALE_TICKET_SIGNING_KEYS is unset: its seed is
    sha256("onsale.ticket-key.v1|" + ONSALE_SECRET_KEY), its kid ``d-`` and the first 8
    hex digits of the sha256 of its public key, so another secret is another kid."""
    seed = hashlib.sha256(b"onsale.ticket-key.v1|" + secret_key.encode()).digest()
    private = Ed25519PrivateKey.from_private_bytes(seed)
    kid = "d-" + hashlib.sha256(public_raw(private.public_key())).hexdigest()[:8]
    return SigningKey(kid, private)


def parse_key(item: str) -> SigningKey:
    """``kid:base64`` (the 32-byte private key, base64 or base64url); ValueError."""
    kid, sep, encoded = item.strip().partition(":")
    if not sep or not KID.fullmatch(kid):
        raise ValueError("each key is kid:base64, the kid 1-32 of A-Z a-z 0-9 _ -")
    try:
        raw = base64.b64decode(encoded.strip().replace("-", "+").replace("_", "/")
                               + "=" * (-len(encoded.strip()) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"key {kid}: not base64") from None
    if len(raw) != 32:
        raise ValueError(f"key {kid}: an Ed25519 private key is 32 bytes, got {len(raw)}")
    return SigningKey(kid, Ed25519PrivateKey.from_private_bytes(raw))


@functools.lru_cache(maxsize=8)
def key_ring(explicit: str, secret_key: str) -> KeyRing:
    """ONSALE_TICKET_SIGNING_KEYS (comma-separated ``kid:base64``, the first signs) or
    the key derived from ONSALE_SECRET_KEY. Built once per process and pair."""
    items = [i for i in explicit.split(",") if i.strip()]
    if not items:
        return KeyRing((derived_key(secret_key),))
    keys = tuple(parse_key(i) for i in items)
    kids = [k.kid for k in keys]
    if len(set(kids)) != len(kids):
        raise ValueError("two keys have the same kid")
    return KeyRing(keys)


def new_key_line(kid: str) -> str:
    """A fresh ``kid:base64`` for ONSALE_TICKET_SIGNING_KEYS."""
    if not KID.fullmatch(kid):
        raise ValueError("a kid is 1-32 of A-Z a-z 0-9 _ -")
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    raw = Ed25519PrivateKey.generate().private_bytes(Encoding.Raw, PrivateFormat.Raw,
                                                     NoEncryption())
    return f"{kid}:{base64.b64encode(raw).decode()}"


# ---- the value ----------------------------------------------------------------


@dataclass(frozen=True)
class Claims:
    """What a ticket says: a seat, or place ``place`` of GA tier ``ga_tier``."""

    kid: str
    event: int
    ticket: str
    order: str
    issued_at: str
    seat: int | None = None
    ga_tier: int | None = None
    place: int | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"v": VERSION, "kid": self.kid, "event": self.event,
                               "ticket": self.ticket, "order": self.order,
                               "issued_at": self.issued_at}
        if self.seat is not None:
            doc["seat"] = self.seat
        else:
            doc["ga_tier"], doc["place"] = self.ga_tier, self.place
        return doc


def canonical(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(claims: Claims, key: SigningKey) -> str:
    if claims.kid != key.kid:
        raise ValueError("the claims name another key")
    head = f"{PREFIX}.{b64url(canonical(claims.document()))}"
    return f"{head}.{b64url(key.private.sign(head.encode()))}"


def claims_of(ticket: Mapping[str, Any], event_id: int, order_id: str, issued_at: str,
              kid: str) -> Claims:
    """The claims of a ticket as the order document lists it."""
    seat = ticket.get("seat_id")
    return Claims(kid=kid, event=event_id, ticket=str(ticket["ticket_id"]), order=order_id,
                  issued_at=issued_at, seat=None if seat is None else int(seat),
                  ga_tier=ticket.get("ga_tier_id"), place=ticket.get("place"))


def _int(doc: Mapping[str, Any], name: str) -> int:
    value = doc.get(name)
    if type(value) is not int or value < 0:
        raise ValueError(name)
    return value


def _uuid(doc: Mapping[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or str(uuid.UUID(value)) != value:
        raise ValueError(name)
    return value


def _claims_from(doc: Any) -> Claims:
    """The claims of a decoded payload; ValueError on any field out of shape."""
    if not isinstance(doc, dict) or doc.get("v") != VERSION:
        raise ValueError("version")
    kid = doc.get("kid")
    if not isinstance(kid, str) or not KID.fullmatch(kid):
        raise ValueError("kid")
    issued_at = doc.get("issued_at")
    if not isinstance(issued_at, str):
        raise ValueError("issued_at")
    parse_utc_iso(issued_at)
    common = {"kid", "v", "event", "ticket", "order", "issued_at"}
    if "seat" in doc:
        if set(doc) != common | {"seat"}:
            raise ValueError("fields")
        where: dict[str, int | None] = {"seat": _int(doc, "seat")}
    else:
        if set(doc) != common | {"ga_tier", "place"}:
            raise ValueError("fields")
        where = {"ga_tier": _int(doc, "ga_tier"), "place": _int(doc, "place")}
    return Claims(kid=kid, event=_int(doc, "event"), ticket=_uuid(doc, "ticket"),
                  order=_uuid(doc, "order"), issued_at=issued_at, **where)


# ---- verification ---------------------------------------------------------------


@dataclass(frozen=True)
class PublicKey:
    """A verifying key, valid until ``valid_until`` (None: no end given)."""

    kid: str
    key: Ed25519PublicKey
    valid_until: datetime | None = None


@dataclass(frozen=True)
class Verdict:
    reason: str  # one of REASONS
    detail: str
    claims: Claims | None = None

    @property
    def ok(self) -> bool:
        return self.reason == "valid"


def _refused(reason: str, detail: str, claims: Claims | None = None) -> Verdict:
    return Verdict(reason, detail, claims)


def verify(value: str, keys: Mapping[str, PublicKey], *, now: datetime,
           revoked: Collection[str] = (), event: int | None = None) -> Verdict:
    """Whether ``value`` is a ticket signed by one of ``keys`` (by its kid), for
    ``event`` when one is given, not past its key's ``valid_until`` and not in
    ``revoked`` (ticket ids). The signature is checked before any claim is trusted."""
    value = value.strip()
    parts = value.split(".")
    if len(value) > MAX_VALUE or len(parts) != 3 or parts[0] != PREFIX:
        return _refused("malformed", f"not an {PREFIX} ticket value")
    try:
        doc = json.loads(unb64url(parts[1]))
        signature = unb64url(parts[2])
    except ValueError:
        return _refused("malformed", "the payload or the signature is not base64url JSON")
    kid = doc.get("kid") if isinstance(doc, dict) else None
    if not isinstance(kid, str):
        return _refused("malformed", "the payload names no key id")
    key = keys.get(kid)
    if key is None:
        return _refused("unknown_key", f"no key {kid!r} among {sorted(keys)}")
    try:
        key.key.verify(signature, f"{parts[0]}.{parts[1]}".encode())
    except InvalidSignature:
        return _refused("forged", f"the signature does not match key {kid!r}")
    try:
        claims = _claims_from(doc)
    except ValueError as exc:  # signed by our key, so only a bug or another version
        return _refused("malformed", f"a signed payload out of shape ({exc})")
    if event is not None and claims.event != event:
        return _refused("wrong_event", f"a ticket for event {claims.event}, not {event}",
                        claims)
    if key.valid_until is not None and now > key.valid_until:
        return _refused("expired", f"key {kid!r} was valid until {utc_iso(key.valid_until)}",
                        claims)
    if claims.ticket in revoked:
        return _refused("revoked", f"ticket {claims.ticket} was revoked (its order was "
                        "refunded or cancelled)", claims)
    return Verdict("valid", "signed, current and not revoked", claims)


# ---- the documents a scanner syncs -------------------------------------------------


def keys_document(ring: KeyRing, event_id: int, valid_until: datetime) -> dict[str, Any]:
    """``GET /api/events/{id}/ticket-keys``: every configured public key (JWK fields
    ``kty``, ``crv``, ``x``), valid for this event's tickets until it ends."""
    until = utc_iso(valid_until)
    return {"event_id": event_id, "valid_until": until, "signing_kid": ring.signer.kid,
            "keys": [{"kid": k.kid, "alg": ALG, "kty": "OKP", "crv": ALG,
                      "x": b64url(public_raw(k.public)), "valid_until": until}
                     for k in ring.keys]}


def read_keys_document(doc: Any) -> tuple[int, dict[str, PublicKey]]:
    """The event and the keys of a ticket-keys document; ValueError if out of shape."""
    try:
        event = doc["event_id"]
        keys: dict[str, PublicKey] = {}
        for item in doc["keys"]:
            if item["alg"] != ALG or item.get("crv", ALG) != ALG:
                raise ValueError(f"key {item['kid']!r}: not {ALG}")
            key = Ed25519PublicKey.from_public_bytes(unb64url(item["x"]))
            until = item.get("valid_until")
            keys[str(item["kid"])] = PublicKey(str(item["kid"]), key,
                                               None if until is None else parse_utc_iso(until))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a ticket-keys document ({exc})") from None
    if type(event) is not int:
        raise ValueError("not a ticket-keys document (event_id)")
    return event, keys


def read_revocations(doc: Any) -> tuple[int, frozenset[str]]:
    """The event and the revoked ticket ids of a ticket-revocations document."""
    try:
        event = doc["event_id"]
        ids = frozenset(str(item["ticket_id"]) for item in doc["revoked"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a ticket-revocations document ({exc})") from None
    if type(event) is not int:
        raise ValueError("not a ticket-revocations document (event_id)")
    return event, ids


def unverified_event(value: str) -> int | None:
    """The event a value claims, read without checking anything (to know which keys to
    fetch); None when it cannot be read."""
    try:
        doc = json.loads(unb64url(value.strip().split(".")[1]))
        event = doc["event"]
    except (ValueError, IndexError, KeyError, TypeError):
        return None
    return event if type(event) is int else None
