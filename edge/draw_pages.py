"""The pages of a published random draw (no I/O): which slice a query string
asks for, and the process's memory of pages already encoded.

A published draw never changes: ``record_draw`` writes the participants once and
the seed, once revealed, stays. So each page is encoded once per process, kept as
bytes (every answer of that page sends the same ``bytes`` object) with a strong
validator, and a request that names a page of a draw already seen is answered
from memory, a ``304`` included, without touching the database. The memory is
bounded in bytes, least recently used out first; the participant count of each
published draw is kept too (a few thousand events at most), so a page past the
end is a ``404`` from memory as well.

Concurrent requests for a page not in memory share one build (one database read,
one encoding), so the moment a draw is published costs one query per page and
process, however many visitors ask at once.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from onsale.kernel.inputs import parse_id
from onsale.kernel.problems import Problem
from onsale.kernel.single_flight import SingleFlight

# Positions in the draw are PostgreSQL integers (and a uuid[] holds far fewer): the
# first index of a page must be one, or no draw can have that page.
INDEX_MAX = 2**31 - 1
# The most published draws whose participant count is remembered.
COUNTS_KEPT = 4096


@dataclass(frozen=True)
class DrawSlice:
    """One page: ``per_page`` ids from the 1-based index ``first``."""

    page: int
    per_page: int

    @property
    def first(self) -> int:
        """The first index asked for, clipped to what a draw can hold (a page past it is
        past every draw's end: ``within`` says so before anything is read)."""
        return min((self.page - 1) * self.per_page + 1, INDEX_MAX)

    @property
    def last(self) -> int:
        """The last index asked for, clipped to what a draw can hold."""
        return min(self.first + self.per_page - 1, INDEX_MAX)

    def pages(self, count: int) -> int:
        """How many pages of this size a draw of ``count`` ids has (at least one,
        which is empty when nobody took part)."""
        return max(1, -(-count // self.per_page))

    def within(self, count: int) -> bool:
        return self.page <= self.pages(count)


def _one(name: str, values: list[str], most: int) -> int | None:
    if not values:
        return None
    value = parse_id(values[0]) if len(values) == 1 else None
    if value is None or value > most:
        raise Problem(400, "invalid_request",
                      detail=f"{name} must be given once, as an integer 1-{most}.")
    return value


def draw_slice(query: Iterable[tuple[str, str]], page_max: int) -> DrawSlice:
    """The page a query string asks for (``request.query_params.multi_items()``), or
    ``400 invalid_request``: ``page`` an integer from 1 (default 1), ``per_page`` one
    from 1 to ``page_max`` (default ``page_max``), each ASCII digits and at most once.
    A page past 2^31 - 1 is well formed: past every draw's end, the route answers it
    ``404 draw_page_not_found`` (or, before the draw, the commitment). Other parameters
    are ignored."""
    given: dict[str, list[str]] = {"page": [], "per_page": []}
    for name, value in query:
        if name in given:
            given[name].append(value)
    page = _one("page", given["page"], INDEX_MAX)
    per_page = _one("per_page", given["per_page"], page_max)
    wanted = DrawSlice(page or 1, per_page or page_max)
    return wanted


def strong_etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


@dataclass(frozen=True)
class DrawPage:
    """An encoded page of a published draw and its strong validator."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, body: bytes) -> DrawPage:
        return cls(body, strong_etag(body))


@dataclass(frozen=True)
class Unpublished:
    """The answer while the seed is not revealed: it changes at the draw, so it is
    sent as it is and never kept."""

    body: bytes


PageKey = tuple[int, int, int]  # event, page, per_page
Built = DrawPage | Unpublished


class DrawPages:
    """Encoded pages of published draws, at most ``max_bytes`` of them, least
    recently used out first, and the participant count of each published draw."""

    def __init__(self, max_bytes: int = 64 * 2**20, counts_kept: int = COUNTS_KEPT) -> None:
        self.max_bytes = max_bytes
        self.counts_kept = counts_kept
        self.size = 0
        self._pages: OrderedDict[PageKey, DrawPage] = OrderedDict()
        self._counts: OrderedDict[int, int] = OrderedDict()
        self._building: SingleFlight[PageKey, Built] = SingleFlight()

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, key: PageKey) -> DrawPage | None:
        page = self._pages.get(key)
        if page is not None:
            self._pages.move_to_end(key)
        return page

    def put(self, key: PageKey, page: DrawPage) -> None:
        """Keep ``page`` (a page larger than the whole bound is not kept)."""
        if len(page.body) > self.max_bytes:
            return
        old = self._pages.pop(key, None)
        if old is not None:
            self.size -= len(old.body)
        self._pages[key] = page
        self.size += len(page.body)
        while self.size > self.max_bytes:
            _, dropped = self._pages.popitem(last=False)
            self.size -= len(dropped.body)

    def count(self, event_id: int) -> int | None:
        """The participant count of the event's published draw, if seen."""
        count = self._counts.get(event_id)
        if count is not None:
            self._counts.move_to_end(event_id)
        return count

    def remember(self, event_id: int, count: int) -> None:
        self._counts[event_id] = count
        self._counts.move_to_end(event_id)
        while len(self._counts) > self.counts_kept:
            self._counts.popitem(last=False)

    async def build(self, key: PageKey, make: Callable[[], Awaitable[Built]]) -> Built:
        """The page from ``make()``, kept if published; callers that come while it is
        being made wait for the same one. ``make`` runs as a task of its own, so a
        caller that goes away (a client disconnecting) does not cancel the others'."""
        async def made() -> Built:
            built = await make()
            if isinstance(built, DrawPage):
                self.put(key, built)  # kept even if every caller went away meanwhile
            return built
        return await self._building.run(key, made)
