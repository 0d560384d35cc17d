"""The venue layout's per-process cache: pure parts (no I/O).

A layout is immutable and content-addressed: its hash (``layout.venue_document``: the
first 32 hex digits of the sha256 of its JSON, which names the event) is its ETag and
the last segment of its URL, ``/api/events/{event_id}/venue/{hash}``. So a process
keeps, once learnt, which hash each event has (it never changes), and the bytes of
each representation (JSON or gzip) under (hash, gzipped), in a cache bounded by
bytes: every response of one representation shares one ``bytes`` object.
Concurrent misses for the same key share one database read
(``onsale.kernel.single_flight``).
"""

from __future__ import annotations

import re
from collections import OrderedDict

HASH_HEX = 32  # layout.venue_document: sha256(body).hexdigest()[:32]
_HASH = re.compile(r"[0-9a-f]{32}")

# A 50,000-seat layout is 1.7 MB of JSON and about 0.3 MB gzipped: 64 MiB keeps both
# representations of some thirty such venues, or the gzip of two hundred.
CACHE_BYTES = 64 * 1024 * 1024
# Hashes of this many events are remembered (about 150 bytes each).
CACHE_EVENTS = 65_536


def parse_layout_hash(raw: object) -> str | None:
    """A layout hash as written in its URL (32 lowercase ASCII hex digits), else None:
    the shape is checked before anything is looked up."""
    if not isinstance(raw, str) or _HASH.fullmatch(raw) is None:
        return None
    return raw


def layout_path(event_id: int, layout_hash: str) -> str:
    """The layout's immutable, content-addressed URL."""
    return f"/api/events/{event_id}/venue/{layout_hash}"


def validator(layout_hash: str, gzipped: bool) -> str:
    """The strong ETag of one representation (each has its own)."""
    return f'"{layout_hash}-gzip"' if gzipped else f'"{layout_hash}"'


class LayoutCache:
    """Which hash each event's layout has (kept once known: it never changes; the
    oldest forgotten past ``max_events``), and the bytes of each representation by
    (hash, gzipped), least recently used out first past ``max_bytes``. A body larger
    than ``max_bytes`` is served but not kept."""

    def __init__(self, max_bytes: int = CACHE_BYTES, max_events: int = CACHE_EVENTS) -> None:
        if max_bytes < 0 or max_events < 1:
            raise ValueError("a layout cache needs max_bytes >= 0 and max_events >= 1")
        self.max_bytes = max_bytes
        self.max_events = max_events
        self._hashes: dict[int, str] = {}
        self._bodies: OrderedDict[tuple[str, bool], bytes] = OrderedDict()
        self._size = 0

    def hash_of(self, event_id: int) -> str | None:
        return self._hashes.get(event_id)

    def learn(self, event_id: int, layout_hash: str) -> None:
        if event_id in self._hashes:
            return
        if len(self._hashes) >= self.max_events:
            del self._hashes[next(iter(self._hashes))]  # the oldest learnt
        self._hashes[event_id] = layout_hash

    def body(self, layout_hash: str, gzipped: bool) -> bytes | None:
        key = (layout_hash, gzipped)
        body = self._bodies.get(key)
        if body is not None:
            self._bodies.move_to_end(key)
        return body

    def keep(self, layout_hash: str, gzipped: bool, body: bytes) -> bytes:
        """Keep ``body`` (if it fits) and return the one object to serve: the one
        already kept for this key if there is one."""
        key = (layout_hash, gzipped)
        kept = self._bodies.get(key)
        if kept is not None:
            self._bodies.move_to_end(key)
            return kept
        if len(body) > self.max_bytes:
            return body
        while self._size + len(body) > self.max_bytes:
            _, out = self._bodies.popitem(last=False)
            self._size -= len(out)
        self._bodies[key] = body
        self._size += len(body)
        return body

    def clear(self) -> None:
        """Forget everything (tests; a process never needs to)."""
        self._hashes.clear()
        self._bodies.clear()
        self._size = 0

    @property
    def size(self) -> int:
        """Bytes of the bodies kept."""
        return self._size

    def __len__(self) -> int:
        """Bodies kept."""
        return len(self._bodies)
