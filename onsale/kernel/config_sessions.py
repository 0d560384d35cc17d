"""Sessions, sign-in and the other security settings
(docs/configuration.md#sessions-and-sign-in, #security)."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from onsale.kernel.origins import parse_origin
from onsale.kernel.settings import ConfigError, Section, setting


def origins(name: str, raw: str) -> tuple[str, ...]:
    found = []
    for part in raw.split(","):
        if not part.strip():
            continue
        origin = parse_origin(part)
        if origin is None:
            raise ConfigError(f"every {name} entry must be an origin like "
                              f"https://shop.example or http://127.0.0.1:8000, got "
                              f"{part.strip()!r}")
        found.append(origin)
    return tuple(dict.fromkeys(found))


_KID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def ticket_signing_keys(name: str, raw: str) -> str:
    """``kid:base64`` items, each a 32-byte Ed25519 private key (core/ticket_token.py
    builds the keys; this checks the shape at start-up)."""
    kids = []
    for item in (i.strip() for i in raw.split(",")):
        if not item:
            continue
        kid, sep, encoded = item.partition(":")
        if not sep or not _KID.fullmatch(kid):
            raise ConfigError(f"{name}: each key is kid:base64, the kid 1-32 of "
                              "A-Z a-z 0-9 _ -")
        encoded = encoded.strip().replace("-", "+").replace("_", "/")
        try:
            size = len(base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True))
        except (binascii.Error, ValueError):
            raise ConfigError(f"{name}: key {kid} is not base64") from None
        if size != 32:
            raise ConfigError(f"{name}: key {kid} is {size} bytes, an Ed25519 private key "
                              "is 32 (onsale ticket new-key KID makes one)")
        kids.append(kid)
    if len(set(kids)) != len(kids):
        raise ConfigError(f"{name}: two keys have the same kid")
    return raw.strip()


@dataclass(frozen=True)
class SessionSettings(Section):
    cookie_secure: bool = setting(
        False,
        "Unset or false: every cookie is `Secure` (and the session cookie is named "
        "`__Host-onsale_session`) unless `ONSALE_PUBLIC_URL` is plain `http://` on loopback "
        "(`onsale dev`). `true` forces `Secure` on even there. The flag can only add "
        "`Secure`, never remove it from an https or non-loopback site "
        "(`onsale.kernel.cookies.cookie_policy`).",
        default_doc="`false` (then derived from `ONSALE_PUBLIC_URL`)")
    session_max_age: int = setting(
        12 * 3600, "Cookie `Max-Age`, the oldest signature the server accepts, and the TTL "
        "of the session's record in Valkey.", lo=60, hi=30 * 86400, unit="s",
        default_doc="`43200` (12 h)")
    session_store_timeout: float = setting(
        0.5, "The longest wait for Valkey on a session check, a sign-in's throttle check or "
        "a session write; past it `503 session_unavailable`", positive=True, hi=10, unit="s")
    signin_window_seconds: int = setting(
        60, "The window of the two attempt limits below (fixed windows)", lo=1, hi=86400,
        unit="s")
    signin_limit_ip: int = setting(
        60, "Sign-ins plus sign-ups per client address (IPv6: per /64) per window, shared by "
        "every core process; past it `429 rate_limited`. Behind an HTTP load balancer every "
        "client has its address: raise it, as for the edge's per-IP limits "
        "([deployment.md](deployment.md#the-load-balancer))", lo=1, hi=10**9)
    signin_limit_email: int = setting(
        10, "Sign-in and sign-up attempts per email per window; past it `429 rate_limited`",
        lo=1, hi=10**9)
    signin_lockout_after: int = setting(
        5, "Failed sign-ins in a row for one email before it is locked", lo=1, hi=1000)
    signin_lockout_seconds: int = setting(
        30, "The first lock; it doubles with each further failure", lo=1, hi=86400,
        unit="s")
    signin_lockout_max_seconds: int = setting(
        900, "The longest lock. A failure streak is forgotten after max(1 h, twice this) "
        "without attempts", lo=1, hi=7 * 86400,
        range_doc="integer 1–604800 (s), at least `ONSALE_SIGNIN_LOCKOUT_SECONDS`")
    password_workers: int = setting(
        2, "Threads per core process that hash and verify passwords (argon2id, about 40 ms "
        "and 19 MiB each)", lo=1, hi=64)
    password_queue: int = setting(
        16, "Hashing jobs that may wait for a worker; past workers + queue a sign-up or "
        "sign-in is answered `503 sign_in_busy` at once", lo=0, hi=10_000)

    def check(self) -> None:
        if self.signin_lockout_max_seconds < self.signin_lockout_seconds:
            raise ConfigError("ONSALE_SIGNIN_LOCKOUT_MAX_SECONDS must be at least "
                              "ONSALE_SIGNIN_LOCKOUT_SECONDS")


@dataclass(frozen=True)
class SecuritySettings(Section):
    allowed_origins: tuple[str, ...] = setting(
        (),
        "Pages on these origins may make POST, PUT, PATCH and DELETE requests, besides the "
        "origin of `ONSALE_PUBLIC_URL` (and, when that is loopback, its `127.0.0.1` / "
        "`localhost` / `[::1]` spellings). Any other `Origin` is `403 cross_site_request` "
        "([security.md](security.md#cross-site-request-forgery)). Core, edge and seatmap.",
        parse=origins, default_doc="empty",
        range_doc="comma-separated origins, each `http(s)://host[:port]` with no path, query "
        "or user; a trailing `/` is dropped, case and default ports are normalized")
    admin_limit_failures: int = setting(
        10, "Failed operator-token attempts (an `Authorization` header with anything but the "
        "right bearer token) per client address (IPv6: per /64) per window, counted by each "
        "process alone; past it every operator request from that address, the right token "
        "too, is `429 rate_limited` with `Retry-After` until the window has room "
        "([security.md](security.md#the-operator-token)). Core and edge.",
        lo=1, hi=10**6)
    admin_limit_window_seconds: int = setting(
        60, "The sliding window of `ONSALE_ADMIN_LIMIT_FAILURES`", lo=1, hi=86400, unit="s")
    ticket_signing_keys: str = setting(
        "",
        "Signs the tickets a gate verifies offline (Ed25519, [tickets.md](tickets.md)). "
        "The **first** key signs, **every** key is published and verifies: rotate by "
        "deploying `new,old` everywhere, and drop `old` only once every event whose "
        "tickets it signed has ended. Every core process must have the same list.",
        parse=ticket_signing_keys,
        default_doc="one key derived from `ONSALE_SECRET_KEY` (kid `d-` and 8 hex digits)",
        range_doc="comma-separated `kid:key`: the kid 1-32 of `A-Z a-z 0-9 _ -`, the key "
        "32 bytes in base64 (`onsale ticket new-key KID`)")
    ticket_valid_hours: int = setting(
        24, "An event ends this long after it starts: until then its tickets, and the keys "
        "that signed them, are valid (`valid_until` of its ticket keys)", lo=1, hi=24 * 30,
        unit="h")
