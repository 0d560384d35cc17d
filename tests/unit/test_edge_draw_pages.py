"""edge/draw_pages.py: which slice a draw page's query string asks for, and the
memory of encoded pages (bounded, shared, one build per page at a time)."""

from __future__ import annotations

import asyncio

import pytest

from onsale.edge.draw_pages import (
    INDEX_MAX,
    DrawPage,
    DrawPages,
    DrawSlice,
    Unpublished,
    draw_slice,
    strong_etag,
)
from onsale.kernel.problems import Problem

CAP = 10_000


def q(raw: str) -> list[tuple[str, str]]:
    """A query string as Starlette hands it over (already percent-decoded)."""
    return [tuple(part.split("=", 1)) if "=" in part else (part, "")  # type: ignore[misc]
            for part in raw.split("&") if part]


@pytest.mark.parametrize(("query", "page", "per_page", "first", "last"), [
    ("", 1, CAP, 1, CAP),
    ("page=1", 1, CAP, 1, CAP),
    ("page=3&per_page=50", 3, 50, 101, 150),
    ("per_page=1&page=10001", 10001, 1, 10001, 10001),
    ("page=01&per_page=0010", 1, 10, 1, 10),           # ASCII digits, leading zeros
    ("page=2&per_page=10000", 2, CAP, 10001, 20000),
    ("page=2&utm_source=x&_=17", 2, CAP, 10001, 20000),  # other parameters are ignored
    (f"page={INDEX_MAX}&per_page=1", INDEX_MAX, 1, INDEX_MAX, INDEX_MAX),
    # the last page a draw could have at 10,000 a page: its end is clipped to 2^31 - 1
    ("page=214749&per_page=10000", 214749, CAP, 2147480001, INDEX_MAX),
])
def test_a_valid_query_is_a_slice(query: str, page: int, per_page: int, first: int,
                                  last: int) -> None:
    wanted = draw_slice(q(query), CAP)
    assert (wanted.page, wanted.per_page, wanted.first, wanted.last) == (
        page, per_page, first, last)


HOSTILE = [
    "page=0", "page=-1", "page=+1", "page= 1", "page=1 ", "page=1.0", "page=1e3", "page=0x10",
    "page=", "page", "per_page=", "per_page", "per_page=0", "per_page=-5", "per_page=10001",
    f"per_page={2**31}", "page=²", "page=٣", "page=１", "page=߀", "per_page=٣", "page=3²",
    "page=1\x00", f"page={INDEX_MAX + 1}", f"page={INDEX_MAX + 1}&per_page=1",
    f"page={2**63}", f"page={2**63 - 1}", "page=" + "9" * 20, "page=" + "9" * 5000,
    "per_page=" + "9" * 5000, "page=1&page=1", "page=1&page=2", "per_page=5&per_page=5",
    "page=2&per_page=3&page=2", "page=2&per_page=1073741823",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_anything_else_is_400_invalid_request(query: str) -> None:
    with pytest.raises(Problem) as refused:
        draw_slice(q(query), CAP)
    assert (refused.value.status, refused.value.code) == (400, "invalid_request")
    assert refused.value.detail


def test_a_page_past_any_draw_is_well_formed_and_past_every_end() -> None:
    wanted = draw_slice(q("page=214750&per_page=10000"), CAP)  # would start at 2,147,490,001
    assert (wanted.first, wanted.last) == (INDEX_MAX, INDEX_MAX)  # never past an int4
    assert not wanted.within(INDEX_MAX)


def test_the_cap_is_the_setting() -> None:
    assert draw_slice([], 250) == DrawSlice(1, 250)
    assert draw_slice([("per_page", "250")], 250).per_page == 250
    with pytest.raises(Problem):
        draw_slice([("per_page", "251")], 250)


@pytest.mark.parametrize(("count", "per_page", "pages"), [
    (0, 10, 1), (1, 10, 1), (10, 10, 1), (11, 10, 2), (25, 10, 3), (2_000_000, 10_000, 200)])
def test_pages_of_a_draw(count: int, per_page: int, pages: int) -> None:
    assert DrawSlice(1, per_page).pages(count) == pages
    assert DrawSlice(pages, per_page).within(count)
    assert not DrawSlice(pages + 1, per_page).within(count)


def test_the_etag_is_strong_and_follows_the_bytes() -> None:
    tag = strong_etag(b'{"a":1}')
    assert tag == strong_etag(b'{"a":1}') and tag != strong_etag(b'{"a":2}')
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/")
    assert DrawPage.of(b"x").etag == strong_etag(b"x")


def test_pages_are_kept_within_the_bound_least_recently_used_out() -> None:
    cache = DrawPages(max_bytes=10)
    a, b, c = DrawPage.of(b"aaaa"), DrawPage.of(b"bbbb"), DrawPage.of(b"cccc")
    cache.put((1, 1, 10), a)
    cache.put((1, 2, 10), b)
    assert cache.get((1, 1, 10)) is a  # the same object every time: a is now the newest
    cache.put((1, 3, 10), c)  # 12 bytes > 10: b goes
    assert cache.get((1, 2, 10)) is None
    assert cache.get((1, 1, 10)) is a and cache.get((1, 3, 10)) is c
    assert cache.size == 8 and len(cache) == 2
    cache.put((1, 1, 10), DrawPage.of(b"aaaaa"))  # replaced: counted once
    assert cache.size == 9
    cache.put((2, 1, 10), DrawPage.of(b"x" * 11))  # larger than the bound: not kept
    assert cache.get((2, 1, 10)) is None and cache.size == 9


def test_participant_counts_are_bounded() -> None:
    cache = DrawPages(counts_kept=2)
    cache.remember(1, 100)
    cache.remember(2, 200)
    assert cache.count(1) == 100  # 1 is now the newest
    cache.remember(3, 300)
    assert (cache.count(1), cache.count(2), cache.count(3)) == (100, None, 300)


async def test_concurrent_requests_share_one_build_and_only_published_pages_stay() -> None:
    cache = DrawPages()
    gate = asyncio.Event()
    made = 0
    page = DrawPage.of(b"[1]")

    async def make() -> DrawPage:
        nonlocal made
        made += 1
        await gate.wait()
        return page

    waiters = [asyncio.ensure_future(cache.build((1, 1, 10), make)) for _ in range(20)]
    await asyncio.sleep(0)  # every waiter has run up to its wait (one build started) ...
    await asyncio.sleep(0)  # ... and the build up to the gate
    assert made == 1
    waiters[0].cancel()  # one client goes away: the build goes on for the others
    gate.set()
    results = await asyncio.gather(*waiters[1:])
    assert all(r is page for r in results)
    assert cache.get((1, 1, 10)) is page

    async def unpublished() -> Unpublished:
        return Unpublished(b"{}")
    assert isinstance(await cache.build((1, 2, 10), unpublished), Unpublished)
    assert cache.get((1, 2, 10)) is None  # it changes at the draw: never kept


async def test_a_failed_build_is_not_kept_and_the_next_request_tries_again() -> None:
    cache = DrawPages()
    attempts = 0

    async def failing() -> DrawPage:
        nonlocal attempts
        attempts += 1
        raise Problem(503, "inventory_unavailable")

    for _ in range(2):
        with pytest.raises(Problem):
            await cache.build((1, 1, 10), failing)
    assert attempts == 2 and cache.get((1, 1, 10)) is None


def test_the_settings() -> None:
    from onsale.kernel.config import ConfigError, Settings

    base = {"DATABASE_URL": "postgresql://x/y", "ONSALE_SECRET_KEY": "s" * 16,
            "ONSALE_ADMIN_TOKEN": "a" * 16}
    s = Settings.from_env(base)
    assert (s.draw_page_max, s.draw_limit_ip, s.draw_cache_mb) == (10_000, 120, 64)
    s = Settings.from_env({**base, "ONSALE_DRAW_PAGE_MAX": "500", "ONSALE_DRAW_LIMIT_IP": "7",
                           "ONSALE_DRAW_CACHE_MB": "1"})
    assert (s.draw_page_max, s.draw_limit_ip, s.draw_cache_mb) == (500, 7, 1)
    for bad in ({"ONSALE_DRAW_PAGE_MAX": "0"}, {"ONSALE_DRAW_PAGE_MAX": "100001"},
                {"ONSALE_DRAW_LIMIT_IP": "0"}, {"ONSALE_DRAW_CACHE_MB": "x"}):
        with pytest.raises(ConfigError):
            Settings.from_env({**base, **bad})
