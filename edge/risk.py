"""The built-in bot-risk scorer (pure): signals in, a score of 0..100, a band out.

``score`` adds documented weights over ``Signals`` (literal numbers, gathered by the
edge: ``edge/risk_memory.py`` and the request's headers); ``band`` places a score
against an event's ``Thresholds`` (the score at which each band starts; None: that band
is off). The band sets the proof of work a new device must solve to join, or refuses
the join (``edge/pow.py`` ``required_difficulty``, ``edge/routes.py``).

A verdict only ever slows or stops a join at the door. It never admits anyone nor
changes a limit: one place per account is the join script's rule and the ticket limits
are the database's, whatever a scorer says (docs/edge.md#abuse-controls).
"""

from __future__ import annotations

import enum
import itertools
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

MAX_SCORE = 100


class Band(enum.Enum):
    LOW = "low"            # as the event asks (its pow_difficulty)
    RAISED = "raised"      # at least RAISED_RISK_MIN_DIFFICULTY bits of proof of work
    HIGH = "high"          # at least HIGH_RISK_MIN_DIFFICULTY bits
    REFUSED = "refused"    # 403 risk_refused


BANDS = tuple(b.value for b in Band)


@dataclass(frozen=True)
class Thresholds:
    """The score (1..100) at which each band starts, ascending; None: the band is off.
    All None (the default, ``OFF``): every verdict is ``low``."""

    raised: int | None = None
    high: int | None = None
    refused: int | None = None

    def problem(self) -> str | None:
        """What is wrong with these thresholds, or None."""
        set_ = [v for v in (self.raised, self.high, self.refused) if v is not None]
        if any(not 1 <= v <= MAX_SCORE for v in set_):
            return f"risk thresholds must be between 1 and {MAX_SCORE}."
        if any(a >= b for a, b in itertools.pairwise(set_)):
            return "risk thresholds must ascend: raised < high < refused."
        return None


OFF = Thresholds()
# What docs/edge.md suggests as a start; an event uses it only when an operator sets it.
SUGGESTED = Thresholds(raised=30, high=60, refused=90)


@dataclass(frozen=True)
class Signals:
    """What the scorer weighs. Join counts are of new-device joins in the edge process's
    recent window (decaying, so fractional); None: not known."""

    account_age_seconds: float | None = None
    signin_failures: int | None = None   # failed sign-ins of the account, recently
    device_joins: float = 0.0            # by this device (address and browser headers)
    address_joins: float = 0.0           # by this address
    net_joins: float = 0.0               # by this IPv6 /64 (0 for IPv4)
    account_joins: float = 0.0           # by this account, from new devices
    automation_agent: bool = False       # an HTTP library's User-Agent, or none
    header_mismatches: int = 0           # browser headers a browser agent left out
    poll_gaps: tuple[float, ...] = ()    # seconds between the account's recent polls
    page_poll_seconds: float = 2.0       # how often the waiting-room page polls


def _steps(value: float, steps: tuple[tuple[float, int], ...]) -> int:
    """The points of the highest step whose floor ``value`` reaches (0 below them all)."""
    points = 0
    for floor, p in steps:
        if value >= floor:
            points = p
    return points


# The weights (docs/edge.md#the-built-in-risk-scorer): (floor, points) steps.
AGE_POINTS = ((0.0, 20), (3600.0, 10), (86_400.0, 0))  # by age: younger scores more
FAILURE_STEPS = ((1, 5), (3, 10), (10, 20))
DEVICE_STEPS = ((4, 10), (10, 20), (30, 30))
ADDRESS_STEPS = ((20, 5), (100, 15), (500, 25))
NET_STEPS = ((50, 5), (500, 15))
ACCOUNT_STEPS = ((3, 10), (10, 20))
AUTOMATION_POINTS = 30
MISMATCH_POINTS = 10  # each, at most 3
FAST_POLL_POINTS = 15
MIN_POLL_GAPS = 4


def score(s: Signals) -> int:
    """0..100: the sum of each signal's points, capped."""
    age = s.account_age_seconds
    total = 0 if age is None else _steps(max(0.0, age), AGE_POINTS)
    total += _steps(s.signin_failures or 0, FAILURE_STEPS)
    total += _steps(s.device_joins, DEVICE_STEPS)
    total += _steps(s.address_joins, ADDRESS_STEPS)
    total += _steps(s.net_joins, NET_STEPS)
    total += _steps(s.account_joins, ACCOUNT_STEPS)
    if s.automation_agent:
        total += AUTOMATION_POINTS
    total += MISMATCH_POINTS * min(3, max(0, s.header_mismatches))
    if (len(s.poll_gaps) >= MIN_POLL_GAPS
            and statistics.median(s.poll_gaps) * 4 < s.page_poll_seconds):
        total += FAST_POLL_POINTS  # faster than four tabs of the page together
    return min(MAX_SCORE, total)


def band(points: int, thresholds: Thresholds) -> Band:
    """The band ``points`` falls in: the highest one whose start it reaches."""
    found = Band.LOW
    for start, b in ((thresholds.raised, Band.RAISED), (thresholds.high, Band.HIGH),
                     (thresholds.refused, Band.REFUSED)):
        if start is not None and points >= start:
            found = b
    return found


_AUTOMATION = re.compile(
    r"curl|wget|python|httpx|aiohttp|requests|go-http-client|okhttp|java/|axios|"
    r"node-fetch|undici|libwww|scrapy|headless|phantomjs|selenium|puppeteer|playwright",
    re.IGNORECASE)
_CHROMIUM = re.compile(r"Chrome/(\d+)")
_FIREFOX = re.compile(r"Firefox/(\d+)")


def header_signals(headers: Mapping[str, str]) -> tuple[bool, int]:
    """(automation agent, mismatches) of a request's headers (names in lower case).

    An automation agent: no User-Agent, or one an HTTP library or a headless browser
    sends. Mismatches, for an agent that claims a browser (``Mozilla/``): no
    ``Accept-Language``; no ``Sec-Fetch-Mode`` from Chrome 80+ or Firefox 90+ (both
    send it on every fetch); no ``sec-ch-ua`` from Chrome 90+ (a Chromium browser sends
    its client hints; a spoofed Chrome agent usually does not)."""
    agent = headers.get("user-agent", "")
    if not agent or _AUTOMATION.search(agent):
        return True, 0
    if not agent.startswith("Mozilla/"):
        return False, 0
    mismatches = 0 if headers.get("accept-language") else 1
    chrome, firefox = _CHROMIUM.search(agent), _FIREFOX.search(agent)
    if ((chrome and int(chrome.group(1)) >= 80) or (firefox and int(firefox.group(1)) >= 90)) \
            and not headers.get("sec-fetch-mode"):
        mismatches += 1
    if chrome and int(chrome.group(1)) >= 90 and not headers.get("sec-ch-ua"):
        mismatches += 1
    return False, mismatches


@dataclass(frozen=True)
class RiskVerdict:
    """A hook's answer: the band, and the score when the hook has one (counted)."""

    band: Band
    score: int | None = None


def verdict_of(answer: object) -> RiskVerdict:
    """A hook's answer as a verdict: a bool (the hook's first contract: True is high
    risk), a ``Band`` or a ``RiskVerdict``. Anything else is a faulty hook: high."""
    if isinstance(answer, RiskVerdict):
        return answer
    if isinstance(answer, Band):
        return RiskVerdict(answer)
    if isinstance(answer, bool):
        return RiskVerdict(Band.HIGH if answer else Band.LOW)
    return RiskVerdict(Band.HIGH)
