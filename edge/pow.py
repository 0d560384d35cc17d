"""Proof of work before joining (pure): hashcash over SHA-256.

The edge issues a signed challenge bound to the event, the account, a
difficulty and an expiry. The client finds any ``solution`` (a string of at
most 64 characters) such that ``sha256(challenge + ":" + solution)`` starts
with ``difficulty`` zero bits, and sends both back when joining. Verifying
costs one hash; solving costs about ``2 ** difficulty`` hashes (20 bits: about
a million, a second or two in a browser).

A verified solution is good for one join: ``check`` hands back its ``Work``
(the challenge's id and expiry), and the join's own Redis script marks that
challenge spent (``SET NX`` for ``remember_ms``) in the same step as the join,
refusing a second join with it (``pow_replayed``, edge/queue_store.lua).

Proof of work slows bulk joins by one machine; it does not prove a human.
Which visitors must solve one, and how hard, is decided by the event's difficulty and
by ``RiskHook``'s band (docs/edge.md#abuse-controls).
"""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from onsale.edge.risk import (
    OFF,
    Band,
    RiskVerdict,
    Signals,
    Thresholds,
    band,
    header_signals,
    score,
)
from onsale.edge.risk_memory import QUIET, Recent

SALT = "onsale.pow.v1"
MAX_DIFFICULTY = 32
MAX_SOLUTION = 64
_NONCE = re.compile(r"[0-9a-f]{16}")  # secrets.token_hex(8): a challenge's id


class PowVerdict(enum.Enum):
    OK = "ok"
    MISSING = "pow_required"
    INVALID = "pow_invalid"
    REPLAYED = "pow_replayed"  # verified, but its challenge already admitted a join


# A spent challenge is remembered past its expiry by this much, for the edge
# processes whose clocks run behind the one that recorded it.
SPENT_SLACK_SECONDS = 60


@dataclass(frozen=True)
class Challenge:
    token: str
    difficulty: int
    expires_at: int


@dataclass(frozen=True)
class Work:
    """A verified solution, not yet spent: ``challenge_id`` names its challenge
    (one join per challenge), ``difficulty`` is what the join required."""

    challenge_id: str
    expires_at: int
    difficulty: int


@dataclass(frozen=True)
class RiskFacts:
    """What the edge knows about a join request from a new device, for a bot-risk hook:
    the request, the event's risk thresholds, and what this process counted recently
    (``edge/risk_memory.py``, this join included)."""

    event_id: int
    account_id: uuid.UUID
    ip: str
    user_agent: str
    headers: dict[str, str]
    thresholds: Thresholds = OFF
    recent: Recent = QUIET
    page_poll_seconds: float = 2.0


# A bot-detection system plugs in here. It runs on every join from a new device, inline:
# keep it fast. It answers a ``Band`` (low, raised, high, refused), a ``RiskVerdict``
# (a band and its score), or a bool (True: high). Raising, or any other answer, counts
# as high: a failing detector slows visitors down, never lets more in.
RiskHook = Callable[[RiskFacts], bool | Band | RiskVerdict]

RAISED_RISK_MIN_DIFFICULTY = 14
HIGH_RISK_MIN_DIFFICULTY = 18


def no_risk(facts: RiskFacts) -> bool:
    """A hook that flags nobody."""
    return False


def signals(facts: RiskFacts) -> Signals:
    """The built-in scorer's signals of a join. The account's age and its failed
    sign-ins are not known to the edge without a database or Valkey read: None."""
    automation, mismatches = header_signals(facts.headers)
    r = facts.recent
    return Signals(device_joins=r.device_joins, address_joins=r.address_joins,
                   net_joins=r.net_joins, account_joins=r.account_joins,
                   automation_agent=automation, header_mismatches=mismatches,
                   poll_gaps=r.poll_gaps, page_poll_seconds=facts.page_poll_seconds)


def builtin_risk(facts: RiskFacts) -> RiskVerdict:
    """The built-in scorer (edge/risk.py) against the event's thresholds; the default
    hook. With no thresholds set on the event every verdict is low."""
    points = score(signals(facts))
    return RiskVerdict(band(points, facts.thresholds), points)


def required_difficulty(event_difficulty: int, risk: bool | Band) -> int:
    """The proof of work a join must show: the event's, raised by the risk band (a
    bool is the hook's first contract: True is high). A refused join is refused before
    this; it asks for the high band's in case."""
    if risk is True:
        risk = Band.HIGH
    if risk is Band.RAISED:
        return max(event_difficulty, RAISED_RISK_MIN_DIFFICULTY)
    if risk in (Band.HIGH, Band.REFUSED):
        return max(event_difficulty, HIGH_RISK_MIN_DIFFICULTY)
    return event_difficulty


def leading_zero_bits(digest: bytes) -> int:
    bits = 0
    for byte in digest:
        if byte == 0:
            bits += 8
            continue
        return bits + 8 - byte.bit_length()
    return bits


def work(challenge: str, solution: str) -> int:
    return leading_zero_bits(hashlib.sha256(f"{challenge}:{solution}".encode()).digest())


def solve(challenge: str, difficulty: int) -> str:
    """A client's solver (tests, benches, and the reference for browsers)."""
    n = 0
    while work(challenge, format(n, "x")) < difficulty:
        n += 1
    return format(n, "x")


class PowCodec:
    def __init__(self, keys: Sequence[str], ttl_seconds: int = 300,
                 clock: Callable[[], float] = time.time) -> None:
        self._s = URLSafeSerializer(list(reversed(keys)), salt=SALT,
                                    signer_kwargs={"digest_method": hashlib.sha256})
        self.ttl_seconds = ttl_seconds
        self._clock = clock

    def issue(self, event_id: int, account_id: uuid.UUID, difficulty: int) -> Challenge:
        expires = int(self._clock()) + self.ttl_seconds
        token: str = self._s.dumps(
            [event_id, account_id.hex, difficulty, secrets.token_hex(8), expires])
        return Challenge(token, difficulty, expires)

    def verify(self, proof: Any, event_id: int, account_id: uuid.UUID,
               difficulty: int) -> PowVerdict:
        """``proof`` is the join body's ``pow`` member: {challenge, solution}.
        Stateless: whether it was spent is the join script's to say."""
        return self.check(proof, event_id, account_id, difficulty)[0]

    def check(self, proof: Any, event_id: int, account_id: uuid.UUID,
              difficulty: int) -> tuple[PowVerdict, Work | None]:
        """The verdict, and for ``OK`` the ``Work`` the join must spend."""
        if not isinstance(proof, dict):
            return PowVerdict.MISSING, None
        token, solution = proof.get("challenge"), proof.get("solution")
        if (not isinstance(token, str) or not isinstance(solution, str)
                or not 0 < len(solution) <= MAX_SOLUTION or len(token) > 512):
            return PowVerdict.INVALID, None
        try:
            ev, account_hex, issued_difficulty, nonce, expires = self._s.loads(token)
        except (BadSignature, ValueError, TypeError):
            return PowVerdict.INVALID, None
        if (ev != event_id or account_hex != account_id.hex
                or not isinstance(issued_difficulty, int) or issued_difficulty < difficulty
                or not isinstance(nonce, str) or not _NONCE.fullmatch(nonce)
                or not isinstance(expires, int) or expires <= self._clock()):
            return PowVerdict.INVALID, None
        if work(token, solution) < issued_difficulty:
            return PowVerdict.INVALID, None
        return PowVerdict.OK, Work(nonce, expires, difficulty)

    def remember_ms(self, spent: Work) -> int:
        """How long a spent challenge must be remembered: the rest of its life
        (verify refuses it after that) and ``SPENT_SLACK_SECONDS``."""
        left = max(0.0, spent.expires_at - self._clock())
        return int((left + SPENT_SLACK_SECONDS) * 1000)
