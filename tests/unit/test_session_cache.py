"""kernel.session_cache: which cached answers about a session record may be
trusted, with literal times (no clock, no I/O)."""

from __future__ import annotations

import pytest

from onsale.kernel.session_cache import SessionCache, Verdict

V, G, R = Verdict.VALID, Verdict.GONE, Verdict.READ


def test_an_unknown_session_must_be_read() -> None:
    assert SessionCache().verdict("s1", 0.0) is R


@pytest.mark.parametrize(("now", "expected"), [
    (10.0, V), (10.5, V), (10.999, V), (11.0, R), (12.0, R), (9.0, R),
])
def test_an_existing_record_is_trusted_for_less_than_a_second_after_the_read(
        now: float, expected: Verdict) -> None:
    cache = SessionCache(fresh_seconds=1.0)
    cache.learnt("s1", True, read_at=10.0)
    assert cache.verdict("s1", now) is expected  # 9.0: a clock that went back is not trusted


@pytest.mark.parametrize("now", [10.0, 11.0, 1000.0, 10.0**9])
def test_a_missing_record_is_final(now: float) -> None:
    cache = SessionCache(fresh_seconds=1.0)
    cache.learnt("s1", False, read_at=10.0)
    assert cache.verdict("s1", now) is G


def test_a_local_revocation_is_gone_at_once() -> None:
    cache = SessionCache()
    cache.learnt("s1", True, read_at=10.0)
    cache.revoked("s1", now=10.2)
    assert cache.verdict("s1", 10.3) is G


def test_a_late_exists_does_not_resurrect_a_revoked_session() -> None:
    """A read sent before a revocation may answer after it."""
    cache = SessionCache()
    cache.revoked("s1", now=10.2)
    cache.learnt("s1", True, read_at=10.1)
    assert cache.verdict("s1", 10.3) is G


def test_an_older_read_does_not_replace_a_newer_one() -> None:
    cache = SessionCache(fresh_seconds=1.0)
    cache.learnt("s1", True, read_at=20.0)
    cache.learnt("s1", True, read_at=19.0)
    assert cache.verdict("s1", 20.5) is V  # freshness counts from 20.0, not 19.0
    cache.learnt("s1", False, read_at=19.5)  # but "gone" always wins
    assert cache.verdict("s1", 20.5) is G


def test_zero_freshness_always_reads_existing_but_remembers_gone() -> None:
    cache = SessionCache(fresh_seconds=0.0)
    cache.learnt("s1", True, read_at=10.0)
    cache.learnt("s2", False, read_at=10.0)
    assert cache.verdict("s1", 10.0) is R
    assert cache.verdict("s2", 10.0) is G


def test_memory_is_bounded_least_recently_used_first() -> None:
    cache = SessionCache(fresh_seconds=10.0, max_entries=3)
    for key in ("a", "b", "c"):
        cache.learnt(key, True, read_at=0.0)
    assert cache.verdict("a", 1.0) is V  # "a" is now the most recent
    cache.learnt("d", True, read_at=1.0)
    assert len(cache) == 3
    assert cache.verdict("b", 1.0) is R  # "b" was the least recently used
    assert [cache.verdict(k, 1.0) for k in ("a", "c", "d")] == [V, V, V]


def test_an_evicted_gone_entry_is_read_again_not_trusted() -> None:
    cache = SessionCache(max_entries=1)
    cache.learnt("a", False, read_at=0.0)
    cache.learnt("b", True, read_at=0.0)
    assert cache.verdict("a", 0.5) is R


@pytest.mark.parametrize(("fresh", "entries"), [(-0.1, 10), (1.0, 0)])
def test_bad_bounds_are_refused(fresh: float, entries: int) -> None:
    with pytest.raises(ValueError):
        SessionCache(fresh, entries)
