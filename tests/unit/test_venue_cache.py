"""core.venue_cache: the layout hash's shape, the byte-bounded cache and single-flight reads."""

from __future__ import annotations

import asyncio

import pytest

from onsale.core.layout import Seat, venue_document
from onsale.core.venue_cache import (
    LayoutCache,
    layout_path,
    parse_layout_hash,
    validator,
)
from onsale.kernel.single_flight import SingleFlight

H1 = "0123456789abcdef0123456789abcdef"
H2 = "fedcba9876543210fedcba9876543210"
H3 = "00000000000000000000000000000000"

# --- the hash in the URL -------------------------------------------------------------------


@pytest.mark.parametrize("raw", [H1, H2, H3, "ffffffffffffffffffffffffffffffff"])
def test_a_layout_hash_is_32_lowercase_hex_digits(raw: str) -> None:
    assert parse_layout_hash(raw) == raw


@pytest.mark.parametrize("raw", [
    "", "0123456789abcdef0123456789abcde",          # 31
    "0123456789abcdef0123456789abcdef0",            # 33
    "0123456789ABCDEF0123456789ABCDEF",             # upper case: not the canonical URL
    "0123456789abcdef0123456789abcdeg",             # not hex
    "0123456789abcdef0123456789abcde\n",            # a newline at the end
    "0123456789abcdef0123456789abcdef\n",
    " 0123456789abcdef0123456789abcdef",
    "０１２３４５６７８９abcdef0123456789abcdef",       # full-width digits
    "٠١٢٣٤٥٦٧٨٩abcdef0123456789abcdef",             # Arabic-Indic digits
    "0123456789abcdef0123456789abcdef-gzip",        # an ETag, not a hash
    '"0123456789abcdef0123456789abcdef"',
    "../../../../../../../../../etc/p",
    None, 42, b"0123456789abcdef0123456789abcdef",
])
def test_anything_else_is_no_hash(raw: object) -> None:
    assert parse_layout_hash(raw) is None


def test_the_hash_of_a_venue_document_is_a_layout_hash() -> None:
    seats = [Seat(1, "S1", "A", 1, 0.5, 10.0, 1, 1), Seat(2, "S1", "A", 2, 1.6, 10.0, 1, 2)]
    _, etag = venue_document(3, seats, [{"tier_id": 1, "name": "Premium", "price_minor": 100}])
    assert parse_layout_hash(etag) == etag


def test_the_url_and_the_validators() -> None:
    assert layout_path(7, H1) == f"/api/events/7/venue/{H1}"
    assert validator(H1, gzipped=False) == f'"{H1}"'
    assert validator(H1, gzipped=True) == f'"{H1}-gzip"'


# --- the cache -----------------------------------------------------------------------------


def test_a_kept_body_is_the_one_object_served() -> None:
    cache = LayoutCache(max_bytes=100)
    first = bytes(b"x" * 10)
    assert cache.keep(H1, True, first) is first
    assert cache.body(H1, True) is first
    assert cache.keep(H1, True, bytes(b"x" * 10)) is first  # a second read: the first object
    assert cache.body(H1, False) is None  # the other representation is its own entry
    assert (len(cache), cache.size) == (1, 10)


def test_bytes_are_bounded_least_recently_used_out_first() -> None:
    cache = LayoutCache(max_bytes=100)
    cache.keep(H1, False, b"a" * 40)
    cache.keep(H1, True, b"b" * 40)
    assert cache.body(H1, False) == b"a" * 40  # now the most recent
    cache.keep(H2, False, b"c" * 40)  # 120 > 100: out goes (H1, gzip)
    assert cache.body(H1, True) is None
    assert cache.body(H1, False) == b"a" * 40 and cache.body(H2, False) == b"c" * 40
    assert (len(cache), cache.size) == (2, 80)
    cache.keep(H3, False, b"d" * 100)  # exactly the bound: everything else out
    assert (len(cache), cache.size) == (1, 100)
    assert cache.body(H3, False) == b"d" * 100


def test_a_body_larger_than_the_bound_is_served_but_not_kept() -> None:
    cache = LayoutCache(max_bytes=100)
    cache.keep(H1, False, b"a" * 60)
    big = b"z" * 101
    assert cache.keep(H2, False, big) is big
    assert cache.body(H2, False) is None
    assert cache.body(H1, False) == b"a" * 60  # and nothing was pushed out for it
    assert cache.size == 60


def test_a_cache_of_no_bytes_keeps_no_body() -> None:
    cache = LayoutCache(max_bytes=0)
    assert cache.keep(H1, False, b"a") == b"a"
    assert cache.body(H1, False) is None and cache.size == 0


def test_an_events_hash_once_learnt_stays() -> None:
    cache = LayoutCache()
    assert cache.hash_of(1) is None
    cache.learn(1, H1)
    cache.learn(1, H2)  # the mapping is immutable: the first answer stands
    assert cache.hash_of(1) == H1


def test_the_hashes_of_at_most_max_events_are_kept_oldest_out_first() -> None:
    cache = LayoutCache(max_events=2)
    cache.learn(1, H1)
    cache.learn(2, H2)
    cache.learn(3, H3)
    assert (cache.hash_of(1), cache.hash_of(2), cache.hash_of(3)) == (None, H2, H3)


def test_clear_forgets_everything() -> None:
    cache = LayoutCache()
    cache.learn(1, H1)
    cache.keep(H1, True, b"abc")
    cache.clear()
    assert cache.hash_of(1) is None and cache.body(H1, True) is None
    assert (len(cache), cache.size) == (0, 0)


@pytest.mark.parametrize(("max_bytes", "max_events"), [(-1, 10), (10, 0)])
def test_bounds_are_checked(max_bytes: int, max_events: int) -> None:
    with pytest.raises(ValueError):
        LayoutCache(max_bytes=max_bytes, max_events=max_events)


# --- single flight -------------------------------------------------------------------------


class Work:
    """Work that waits until released, counting its runs."""

    def __init__(self, result: str = "layout", error: Exception | None = None) -> None:
        self.runs = 0
        self.release = asyncio.Event()
        self.result, self.error = result, error

    async def __call__(self) -> str:
        self.runs += 1
        await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.result


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_concurrent_calls_with_one_key_share_one_run() -> None:
    flights: SingleFlight[tuple[int, bool], str] = SingleFlight()
    work = Work()
    callers = [asyncio.ensure_future(flights.run((1, True), work)) for _ in range(50)]
    await settle()
    assert work.runs == 1 and flights.running((1, True))
    work.release.set()
    assert await asyncio.gather(*callers) == ["layout"] * 50
    assert work.runs == 1 and not flights.running((1, True))


async def test_another_key_is_another_run() -> None:
    flights: SingleFlight[tuple[int, bool], str] = SingleFlight()
    gzip, plain = Work("gzip"), Work("plain")
    a = asyncio.ensure_future(flights.run((1, True), gzip))
    b = asyncio.ensure_future(flights.run((1, False), plain))
    await settle()
    gzip.release.set()
    plain.release.set()
    assert (await a, await b) == ("gzip", "plain")
    assert (gzip.runs, plain.runs) == (1, 1)


async def test_a_finished_run_is_not_reused() -> None:
    flights: SingleFlight[int, str] = SingleFlight()
    work = Work()
    work.release.set()
    assert await flights.run(1, work) == "layout"
    assert await flights.run(1, work) == "layout"
    assert work.runs == 2


async def test_every_caller_gets_the_error_and_the_next_call_runs_again() -> None:
    flights: SingleFlight[int, str] = SingleFlight()
    failing = Work(error=RuntimeError("down"))
    callers = [asyncio.ensure_future(flights.run(1, failing)) for _ in range(3)]
    await settle()
    failing.release.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert [str(r) for r in results] == ["down"] * 3 and failing.runs == 1
    healthy = Work()
    healthy.release.set()
    assert await flights.run(1, healthy) == "layout"


async def test_a_caller_that_goes_away_does_not_cancel_the_run_for_the_others() -> None:
    flights: SingleFlight[int, str] = SingleFlight()
    work = Work()
    first = asyncio.ensure_future(flights.run(1, work))
    second = asyncio.ensure_future(flights.run(1, work))
    await settle()
    first.cancel()
    await settle()
    work.release.set()
    assert await second == "layout"
    assert first.cancelled() and work.runs == 1
