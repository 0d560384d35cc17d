"""A retrying loop's failures in a row, logged as an operator wants them
(docs/operations.md#logs): one warning when they start, with the reason; the repeats at
DEBUG; one line when the loop works again, with how many and how long. The count is
the loop's, for its back-off."""

from __future__ import annotations

import logging
import time


def reason(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class Failures:
    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what
        self.count = 0
        self._since = 0.0

    def failed(self, exc: BaseException) -> int:
        """Count one; the first of a run is a warning. Returns the count in a row."""
        self.count += 1
        if self.count == 1:
            self._since = time.monotonic()
            self.log.warning("%s failed (%s); retrying, quietly until it works again",
                             self.what, reason(exc))
        else:
            self.log.debug("%s failed again (%d in a row): %s", self.what, self.count,
                           reason(exc))
        return self.count

    def succeeded(self) -> None:
        if self.count:
            self.log.warning("%s works again after %d failure(s) in %.1f s", self.what,
                             self.count, time.monotonic() - self._since)
        self.count = 0


class OncePerRun(logging.Filter):
    """For a library's logger that repeats one line per retry (asyncpg's pool while its
    server is down): the first line of a run passes, with its traceback cut to the
    reason; the same line again within ``quiet`` seconds does not."""

    def __init__(self, quiet: float = 300.0) -> None:
        super().__init__()
        self.quiet = quiet
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = time.monotonic()
        seen = self._last.get(key)
        self._last[key] = now
        if seen is not None and now - seen < self.quiet:
            return False
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()} ({reason(record.exc_info[1])})"
            record.args = None
            record.exc_info = None
        return True
