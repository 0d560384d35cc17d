"""edge.risk: the built-in scorer's weights and bands (literal inputs), the headers it
reads, the hook's answers as verdicts; edge.risk_memory: bounded, decaying counts."""

from __future__ import annotations

import uuid

import pytest

from onsale.edge.pow import (
    HIGH_RISK_MIN_DIFFICULTY,
    RAISED_RISK_MIN_DIFFICULTY,
    RiskFacts,
    builtin_risk,
    required_difficulty,
    signals,
)
from onsale.edge.risk import (
    OFF,
    SUGGESTED,
    Band,
    RiskVerdict,
    Signals,
    Thresholds,
    band,
    header_signals,
    score,
    verdict_of,
)
from onsale.edge.risk_memory import DecayingCounts, Recent, RiskMemory, device_key

ALICE = uuid.UUID(int=1)
BOB = uuid.UUID(int=2)
CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/124.0.0.0 Safari/537.36")
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
BROWSER = {"user-agent": CHROME, "accept-language": "en-GB", "sec-fetch-mode": "cors",
           "sec-ch-ua": '"Chromium";v="124"'}


def test_a_quiet_browser_scores_nothing() -> None:
    assert score(Signals()) == 0
    assert score(Signals(account_age_seconds=30 * 86_400, signin_failures=0,
                         device_joins=1, address_joins=1, account_joins=1,
                         poll_gaps=(2.0, 2.0, 2.0, 2.0))) == 0


@pytest.mark.parametrize(("age", "points"), [
    (None, 0), (0.0, 20), (3599.0, 20), (3600.0, 10), (86_399.0, 10), (86_400.0, 0),
    (-5.0, 20)])
def test_account_age(age: float | None, points: int) -> None:
    assert score(Signals(account_age_seconds=age)) == points


@pytest.mark.parametrize(("failures", "points"), [
    (None, 0), (0, 0), (1, 5), (2, 5), (3, 10), (9, 10), (10, 20), (500, 20)])
def test_sign_in_failures(failures: int | None, points: int) -> None:
    assert score(Signals(signin_failures=failures)) == points


@pytest.mark.parametrize(("field", "steps"), [
    ("device_joins", [(3.9, 0), (4.0, 10), (9.9, 10), (10.0, 20), (30.0, 30)]),
    ("address_joins", [(19.9, 0), (20.0, 5), (100.0, 15), (499.0, 15), (500.0, 25)]),
    ("net_joins", [(49.0, 0), (50.0, 5), (500.0, 15)]),
    ("account_joins", [(2.9, 0), (3.0, 10), (10.0, 20)]),
])
def test_join_counts(field: str, steps: list[tuple[float, int]]) -> None:
    for value, points in steps:
        assert score(Signals(**{field: value})) == points, (field, value)


def test_headers_and_polls() -> None:
    assert score(Signals(automation_agent=True)) == 30
    assert [score(Signals(header_mismatches=n)) for n in (0, 1, 2, 3, 4)] == [
        0, 10, 20, 30, 30]
    # Polls: only when at least 4 gaps are known and their median is under a quarter of
    # the page's interval (four tabs of one account poll four times as often).
    assert score(Signals(poll_gaps=(0.1, 0.1, 0.1), page_poll_seconds=2.0)) == 0
    assert score(Signals(poll_gaps=(0.4, 0.4, 0.4, 0.4), page_poll_seconds=2.0)) == 15
    assert score(Signals(poll_gaps=(0.5, 0.5, 0.5, 0.5), page_poll_seconds=2.0)) == 0
    assert score(Signals(poll_gaps=(0.1, 0.1, 3.0, 3.0, 3.0), page_poll_seconds=2.0)) == 0


def test_the_score_is_capped() -> None:
    bot = Signals(account_age_seconds=1, signin_failures=50, device_joins=100,
                  address_joins=1000, net_joins=1000, account_joins=50,
                  automation_agent=True, header_mismatches=3,
                  poll_gaps=(0.01,) * 8)
    assert score(bot) == 100


def test_bands_at_each_boundary() -> None:
    t = Thresholds(raised=30, high=60, refused=90)
    assert [band(p, t) for p in (0, 29, 30, 59, 60, 89, 90, 100)] == [
        Band.LOW, Band.LOW, Band.RAISED, Band.RAISED, Band.HIGH, Band.HIGH,
        Band.REFUSED, Band.REFUSED]
    assert band(100, OFF) is Band.LOW  # nothing set: never above low
    only_refused = Thresholds(refused=50)
    assert [band(p, only_refused) for p in (49, 50)] == [Band.LOW, Band.REFUSED]
    no_refusal = Thresholds(raised=10, high=20)
    assert band(100, no_refusal) is Band.HIGH
    assert band(1, Thresholds(raised=1)) is Band.RAISED


def test_thresholds_are_checked() -> None:
    assert OFF.problem() is None and SUGGESTED.problem() is None
    assert Thresholds(raised=10, refused=100).problem() is None
    assert "ascend" in str(Thresholds(raised=60, high=60).problem())
    assert "ascend" in str(Thresholds(high=70, refused=40).problem())
    assert "between" in str(Thresholds(raised=0).problem())
    assert "between" in str(Thresholds(refused=101).problem())


def test_header_signals() -> None:
    assert header_signals(BROWSER) == (False, 0)
    assert header_signals({}) == (True, 0)
    assert header_signals({"user-agent": "python-httpx/0.27"}) == (True, 0)
    assert header_signals({"user-agent": "curl/8.5"}) == (True, 0)
    assert header_signals({"user-agent": CHROME.replace("Chrome", "HeadlessChrome")})[0]
    assert header_signals({"user-agent": CHROME}) == (False, 3)
    assert header_signals({"user-agent": CHROME, "accept-language": "fr"}) == (False, 2)
    assert header_signals({"user-agent": FIREFOX, "accept-language": "fr"}) == (False, 1)
    assert header_signals({"user-agent": FIREFOX, "accept-language": "fr",
                           "sec-fetch-mode": "cors"}) == (False, 0)
    assert header_signals({"user-agent": "SomeApp/1.0"}) == (False, 0)  # not a browser


def test_hook_answers_as_verdicts() -> None:
    assert verdict_of(False) == RiskVerdict(Band.LOW)
    assert verdict_of(True) == RiskVerdict(Band.HIGH)
    assert verdict_of(Band.REFUSED) == RiskVerdict(Band.REFUSED)
    assert verdict_of(RiskVerdict(Band.RAISED, 42)) == RiskVerdict(Band.RAISED, 42)
    assert verdict_of(None) == RiskVerdict(Band.HIGH)  # a faulty hook slows, never opens
    assert verdict_of("low") == RiskVerdict(Band.HIGH)


def test_difficulty_by_band() -> None:
    assert [required_difficulty(0, b) for b in Band] == [
        0, RAISED_RISK_MIN_DIFFICULTY, HIGH_RISK_MIN_DIFFICULTY, HIGH_RISK_MIN_DIFFICULTY]
    assert [required_difficulty(24, b) for b in Band] == [24, 24, 24, 24]
    assert required_difficulty(10, True) == HIGH_RISK_MIN_DIFFICULTY
    assert required_difficulty(10, False) == 10


QUIET = Recent()


def facts(headers: dict[str, str], thresholds: Thresholds = SUGGESTED,
          recent: Recent = QUIET) -> RiskFacts:
    return RiskFacts(7, ALICE, "203.0.113.9", headers.get("user-agent", ""), headers,
                     thresholds=thresholds, recent=recent, page_poll_seconds=2.0)


def test_the_builtin_hook() -> None:
    assert builtin_risk(facts(BROWSER)) == RiskVerdict(Band.LOW, 0)
    assert builtin_risk(facts({"user-agent": "curl/8"})) == RiskVerdict(Band.RAISED, 30)
    farm = Recent(device_joins=12, address_joins=150, account_joins=1)
    assert builtin_risk(facts({"user-agent": "curl/8"}, recent=farm)) == RiskVerdict(
        Band.HIGH, 65)
    assert builtin_risk(facts({"user-agent": "curl/8"}, OFF, farm)) == RiskVerdict(
        Band.LOW, 65)
    s = signals(facts({"user-agent": CHROME}, recent=Recent(poll_gaps=(1.0,))))
    assert (s.header_mismatches, s.poll_gaps, s.account_age_seconds) == (3, (1.0,), None)


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_decaying_counts() -> None:
    counts = DecayingCounts(window=60.0, max_keys=2)
    assert [counts.add("a", 0.0) for _ in range(3)] == [1.0, 2.0, 3.0]
    assert counts.add("a", 60.0) == pytest.approx(1.0 + 3.0 / 2.718281828)
    counts.add("b", 60.0)
    counts.add("c", 60.0)  # over max_keys: "a", the least recently used, is dropped
    assert len(counts) == 2
    assert counts.add("a", 60.0) == 1.0


def test_memory_counts_joins_by_device_address_net_and_account() -> None:
    clock = Clock()
    memory = RiskMemory(window=60.0, clock=clock)
    first = memory.joined(ALICE, "2001:db8::1", BROWSER)
    assert first == Recent(1.0, 1.0, 1.0, 1.0, ())
    second = memory.joined(BOB, "2001:db8::2", BROWSER)  # same /64, another address
    assert (second.address_joins, second.net_joins, second.account_joins) == (1.0, 2.0, 1.0)
    assert second.device_joins == 1.0  # the device includes its address
    third = memory.joined(BOB, "2001:db8::2", BROWSER)
    assert (third.device_joins, third.address_joins, third.account_joins) == (2.0, 2.0, 2.0)
    v4 = memory.joined(ALICE, "203.0.113.9", {})
    assert (v4.address_joins, v4.net_joins) == (1.0, 0.0)  # no /64 for IPv4


def test_memory_times_an_accounts_polls() -> None:
    clock = Clock()
    memory = RiskMemory(gaps=3, clock=clock)
    assert memory.poll_gaps(ALICE) == ()
    for step in (0.5, 0.5, 1.0, 2.0, 2.0):
        memory.polled(ALICE)
        clock.now += step
    assert memory.poll_gaps(ALICE) == (0.5, 1.0, 2.0)  # the last three
    assert memory.joined(ALICE, "203.0.113.9", {}).poll_gaps == (0.5, 1.0, 2.0)
    assert memory.poll_gaps(BOB) == ()


def test_memory_is_bounded() -> None:
    memory = RiskMemory(max_keys=10, clock=Clock())
    for n in range(100):
        account = uuid.UUID(int=n)
        memory.polled(account)
        memory.joined(account, f"198.51.100.{n}", {"user-agent": str(n)})
    assert max(len(memory.devices), len(memory.addresses), len(memory.accounts),
               len(memory.polls)) == 10


def test_device_keys() -> None:
    assert device_key("203.0.113.9", BROWSER) == device_key("203.0.113.9", dict(BROWSER))
    assert device_key("203.0.113.9", BROWSER) != device_key("203.0.113.10", BROWSER)
    assert device_key("203.0.113.9", BROWSER) != device_key("203.0.113.9", {})
