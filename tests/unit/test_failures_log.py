"""kernel/failures.py: an outage is two lines, not one per retry."""

from __future__ import annotations

import logging

import pytest

from onsale.kernel.failures import Failures, OncePerRun, reason


def test_a_run_of_failures_is_one_warning_then_one_recovery_line(
        caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("onsale.test_failures")
    trouble = Failures(log, "the outbox relay")
    with caplog.at_level(logging.DEBUG, logger="onsale.test_failures"):
        trouble.succeeded()  # nothing to say
        counts = [trouble.failed(ConnectionError("unexpected connection_lost() call\nmore"))
                  for _ in range(5)]
        trouble.succeeded()
        trouble.succeeded()
        trouble.failed(OSError())
    assert counts == [1, 2, 3, 4, 5] and trouble.count == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "the outbox relay failed (ConnectionError: unexpected connection_lost() call); "
        "retrying, quietly until it works again",
        warnings[1],
        "the outbox relay failed (OSError); retrying, quietly until it works again"]
    assert warnings[1].startswith("the outbox relay works again after 5 failure(s) in ")
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 4


def test_a_library_line_repeated_per_retry_passes_once_without_its_traceback() -> None:
    once = OncePerRun(quiet=300)

    def record(msg: str) -> logging.LogRecord:
        try:
            raise ConnectionRefusedError("connect call failed")
        except ConnectionRefusedError as exc:
            return logging.LogRecord("asyncpg.pool", logging.WARNING, __file__, 1, msg, None,
                                     (type(exc), exc, exc.__traceback__))

    first = record("Failed to restore the pool connection floor; retrying")
    assert once.filter(first) and first.exc_info is None
    assert first.getMessage() == ("Failed to restore the pool connection floor; retrying "
                                  "(ConnectionRefusedError: connect call failed)")
    assert not once.filter(record("Failed to restore the pool connection floor; retrying"))
    assert once.filter(record("Pool.close() is taking over 60 seconds"))
    assert reason(ValueError("")) == "ValueError"
