"""Admission tokens and queue tickets: pure codecs over itsdangerous with a key list.

Both are signed (HMAC-SHA256), never encrypted: a client may read its own
event, place or expiry, and cannot change any of them. Keys rotate with a
list: the first key signs, every key verifies, so a new key goes in front and
an old one is dropped once every token it signed has expired (docs/edge.md).

The verdicts of an admission check map one-to-one to problem codes; only the
revocation verdict needs I/O and is decided by ``edge.gate``.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from onsale.kernel.signed import Memo, Unsigner

ADMISSION_SALT = "onsale.admission.v1"
TICKET_SALT = "onsale.queue-ticket.v1"


class Verdict(enum.Enum):
    """The outcome of an admission check; ``code`` is the problem code."""

    VALID = "valid"
    MISSING = "admission_required"
    INVALID = "admission_invalid"
    EXPIRED = "admission_expired"
    WRONG_EVENT = "admission_wrong_event"
    WRONG_ACCOUNT = "admission_wrong_account"
    REVOKED = "admission_revoked"

    @property
    def code(self) -> str:
        return self.value


@dataclass(frozen=True)
class Admission:
    """What a valid admission token says: this account may shop this event
    within this session until ``expires_at`` (unix seconds)."""

    event_id: int
    account_id: uuid.UUID
    session_id: str
    expires_at: int
    request_id: str | None = None  # the edge request that admitted (a log field in core)


@dataclass(frozen=True)
class Ticket:
    """A place in one event's queue. ``place`` 0: in the pre-queue of a random
    draw, no place yet. ``device`` tells one browser from another (tabs share
    their cookie, so their device): the second device to enter revokes the first."""

    event_id: int
    account_id: uuid.UUID
    place: int
    device: str


def _serializer(keys: Sequence[str], salt: str) -> URLSafeSerializer:
    if not keys or any(len(k) < 16 for k in keys):
        raise ValueError("at least one signing key of 16 or more characters is required")
    # itsdangerous signs with the last key of the list and verifies with any.
    return URLSafeSerializer(list(reversed(keys)), salt=salt,
                             signer_kwargs={"digest_method": hashlib.sha256})


class AdmissionCodec:
    """Issue and check admission tokens (bound to event, account and session)."""

    def __init__(self, keys: Sequence[str], ttl_seconds: int,
                 clock: Callable[[], float] = time.time, *, memo_entries: int = 32_768) -> None:
        self._s = _serializer(keys, ADMISSION_SALT)
        self._check = Unsigner(self._s)
        self._memo = Memo(memo_entries)  # a shopper sends its token with every request
        self.ttl_seconds = ttl_seconds
        self._clock = clock

    def issue(self, event_id: int, account_id: uuid.UUID, session_id: str,
              request_id: str | None = None) -> str:
        expires = int(self._clock()) + self.ttl_seconds
        fields: list[Any] = [event_id, account_id.hex, session_id, expires]
        if request_id is not None:
            fields.append(request_id)
        token: str = self._s.dumps(fields)
        return token

    def decode(self, token: str | None) -> tuple[Verdict, Admission | None]:
        """Signature and expiry only (MISSING, INVALID, EXPIRED or VALID)."""
        if not token:
            return Verdict.MISSING, None
        admission: Admission | None = self._memo.get(token)
        if admission is None:
            try:
                data: Any = self._check.loads(token)
                # four fields, or five with the admitting request's id (tokens issued
                # before it was added stay valid until they expire)
                event_id, account_hex, session_id, expires, *rest = data
                if (type(event_id) is not int or type(expires) is not int or len(rest) > 1
                        or (rest and not isinstance(rest[0], str))):
                    raise ValueError
                admission = Admission(event_id, uuid.UUID(hex=account_hex), str(session_id),
                                      expires, rest[0] if rest else None)
            except (BadSignature, ValueError, TypeError):
                return Verdict.INVALID, None
            self._memo.put(token, admission)
        if admission.expires_at <= self._clock():
            return Verdict.EXPIRED, admission
        return Verdict.VALID, admission

    def check(self, token: str | None, event_id: int,
              account_id: uuid.UUID) -> tuple[Verdict, Admission | None]:
        """Everything but revocation, in the order the codes are documented."""
        verdict, admission = self.decode(token)
        if verdict is not Verdict.VALID or admission is None:
            return verdict, admission
        if admission.event_id != event_id:
            return Verdict.WRONG_EVENT, admission
        if admission.account_id != account_id:
            return Verdict.WRONG_ACCOUNT, admission
        return Verdict.VALID, admission

    def remaining(self, admission: Admission) -> float:
        return admission.expires_at - self._clock()


class TicketCodec:
    """Issue and read queue tickets. A ticket has no expiry of its own: a place
    not polled for the abandon grace is dropped in Redis, and the ticket then
    only leads back to the end of the queue."""

    def __init__(self, keys: Sequence[str], *, memo_entries: int = 32_768) -> None:
        self._s = _serializer(keys, TICKET_SALT)
        self._check = Unsigner(self._s)
        # A visitor echoes the same ticket on every poll: checked once, then looked up.
        self._memo = Memo(memo_entries)

    def issue(self, ticket: Ticket) -> str:
        token: str = self._s.dumps(
            [ticket.event_id, ticket.account_id.hex, ticket.place, ticket.device])
        return token

    def read(self, token: str | None, event_id: int, account_id: uuid.UUID) -> Ticket | None:
        """The ticket if the signature is good and it is this account's for this event."""
        if not token:
            return None
        ticket: Ticket | None = self._memo.get(token)
        if ticket is None:
            ticket = self._decode(token)
            if ticket is None:
                return None
            self._memo.put(token, ticket)
        if ticket.event_id != event_id or ticket.account_id != account_id:
            return None
        return ticket

    def _decode(self, token: str) -> Ticket | None:
        try:
            data: Any = self._check.loads(token)
            ev, account_hex, place, device = data
            if type(ev) is not int or type(place) is not int or not isinstance(device, str):
                return None
            return Ticket(ev, uuid.UUID(hex=account_hex), place, device)
        except (BadSignature, ValueError, TypeError):
            return None


def admission_keys(explicit: str, secret_key: str) -> tuple[str, ...]:
    """ONSALE_ADMISSION_KEYS (comma-separated, first signs) or one key derived
    from ONSALE_SECRET_KEY, so a deployment works before it rotates anything."""
    keys = tuple(k.strip() for k in explicit.split(",") if k.strip())
    if keys:
        return keys
    derived = hashlib.sha256(b"onsale.admission-key.v1|" + secret_key.encode()).hexdigest()
    return (derived,)


ADMISSION_COOKIE = "onsale_admission_"
TICKET_COOKIE = "onsale_queue_"


def admission_cookie(event_id: int, prefix: str = "") -> str:
    """One cookie per event, so a browser can shop two events without one
    admission overwriting the other. ``prefix``: ``kernel.cookies.cookie_policy``'s
    (``__Host-`` when the site is served over https)."""
    return f"{prefix}{ADMISSION_COOKIE}{event_id}"


@functools.lru_cache(maxsize=4096)  # every queue poll asks
def ticket_cookie(event_id: int, prefix: str = "") -> str:
    return f"{prefix}{TICKET_COOKIE}{event_id}"


ADMISSION_HEADER = "admission-token"

