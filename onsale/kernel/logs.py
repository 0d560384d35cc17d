"""Logging for every process (docs/operations.md#logs).

One configuration per process, made by the command that starts it: JSON lines on stdout
under ``onsale serve`` (python-json-logger's orjson formatter), readable lines under
``onsale dev``, the level from ``ONSALE_LOG_LEVEL``. Every line carries the time, the
level, the logger, the message and the process's role, and what is known of the work in
hand: the request id, and the event, account, hold, order and shard it concerns.

Those come from context variables, set where they become known (``bind``): the request
id by the app for each request (kernel/fast_lane.py, from ``X-Request-ID`` or new), the
ids by the code that learns them. A task started for a request inherits them (asyncio
copies the context). A filter copies them onto each record as it is emitted, so a line
not logged costs nothing.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, ClassVar, TextIO

from onsale.kernel.failures import OncePerRun
from onsale.kernel.settings import ConfigError, Section, load, setting

# The ids a line may carry, in the order the readable format shows them.
# ``admission``: the edge request that admitted the shopper, carried by the admission
# token, so core's lines of a purchase name where it entered (docs/operations.md#logs).
FIELDS = ("request_id", "admission", "event_id", "account_id", "hold_id", "order_id",
          "shard")
_VARS: dict[str, ContextVar[str | None]] = {
    name: ContextVar(f"onsale_log_{name}", default=None) for name in FIELDS}
REQUEST_ID = _VARS["request_id"]

# An id a client may choose: what proxies and tracing systems send (nginx's $request_id,
# a UUID, a W3C trace id), and nothing that could forge a log line.
_CLIENT_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")


# A new id: this process's random prefix and a counter (unique across processes without
# a system call per request; uuid4 took 2 of the 3.4 µs this step cost a request).
_PREFIX = secrets.token_hex(8)
_COUNT = itertools.count(1)


def request_id_from(raw: bytes | None) -> str:
    """The client's ``X-Request-ID`` when it is a plausible id; else a new one."""
    if raw is not None and _CLIENT_ID.fullmatch(raw):
        return raw.decode()
    return f"{_PREFIX}-{next(_COUNT):x}"


def plausible_id(value: object) -> str | None:
    """``value`` if it is an id a log line may carry as it is (one that came back from
    elsewhere: a provider's metadata), else None."""
    if isinstance(value, str) and _CLIENT_ID.fullmatch(value.encode()):
        return value
    return None


def bind(**ids: object) -> list[Token[str | None]]:
    """Set ids for the rest of this task (and the tasks it starts); ``None`` clears one."""
    tokens = []
    for name, value in ids.items():
        var = _VARS.get(name)
        if var is None:
            raise TypeError(f"not a log field: {name}")
        tokens.append(var.set(None if value is None else str(value)))
    return tokens


@contextmanager
def bound(**ids: object) -> Iterator[None]:
    """``bind`` for the length of a block."""
    tokens = bind(**ids)
    try:
        yield
    finally:
        for token in reversed(tokens):
            token.var.reset(token)


def current() -> dict[str, str]:
    """The ids set in this context."""
    out = {}
    for name, var in _VARS.items():
        value = var.get()
        if value is not None:
            out[name] = value
    return out


class ContextFilter(logging.Filter):
    """Adds the role and the context's ids to each record (as attributes)."""

    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def filter(self, record: logging.LogRecord) -> bool:
        record.role = self.role
        for name, var in _VARS.items():
            if not hasattr(record, name):
                setattr(record, name, var.get())
        return True


class TextFormatter(logging.Formatter):
    """``12:00:00.123 INFO onsale.core.payments [core request_id=… hold_id=…] message``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s.%(msecs)03d %(levelname)s %(name)s %(context)s%(message)s",
                         datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        ids = " ".join(f"{name}={value}" for name in FIELDS
                       if (value := getattr(record, name, None)) is not None)
        role = getattr(record, "role", "")
        record.context = f"[{role}{' ' if ids else ''}{ids}] " if role or ids else ""
        return super().format(record)


def json_formatter() -> logging.Formatter:
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, role, the
    ids that are set, and ``exc_info`` as text when there is one."""
    from pythonjsonlogger.orjson import OrjsonFormatter

    class Formatter(OrjsonFormatter):
        def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in log_data.items() if v is not None}

    return Formatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"}, timestamp="time")


@dataclass(frozen=True)
class LogSettings(Section):
    """How a process logs (docs/operations.md#logs)."""

    LEVELS: ClassVar[tuple[str, ...]] = ("DEBUG", "INFO", "WARNING", "ERROR")

    log_level: str = setting(
        "INFO", "Lines below this level are dropped.", choices=LEVELS,
        parse=lambda name, raw: _level(name, raw))
    log_format: str = setting(
        "", "`json`: one JSON object per line; `text`: readable lines. Unset: `json` under "
        "`onsale serve`, `text` under `onsale dev` and the other commands.",
        choices=("json", "text"), default_doc="by command")
    access_log: bool = setting(
        False, "One line per HTTP request (method, path, status, duration), at INFO.")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LogSettings:
        return load(cls, env)


def _level(name: str, raw: str) -> str:
    level = raw.strip().upper()
    if level not in LogSettings.LEVELS:
        raise ConfigError(f"{name} must be one of {', '.join(LogSettings.LEVELS)}, not {raw!r}")
    return level


def configure(role: str, settings: LogSettings, *, default_format: str = "text",
              stream: TextIO | None = None) -> logging.Handler:
    """The root logger writes ``settings``' format to ``stream`` (stdout) at its level,
    replacing any handler configured before; uvicorn's loggers go the same way."""
    handler = logging.StreamHandler(stream or sys.stdout)
    fmt = settings.log_format or default_format
    handler.setFormatter(json_formatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFilter(role))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # A line per request of their own at INFO (the stripe SDK's two per provider call
    # cost 7 % of core's CPU in the checkout bench; our own lines name the calls).
    for chatty in ("httpx", "httpcore", "stripe"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
    pool = logging.getLogger("asyncpg.pool")  # a line and a traceback per retry otherwise
    if not any(isinstance(f, OncePerRun) for f in pool.filters):
        pool.addFilter(OncePerRun())
    access = logging.getLogger("onsale.access")
    access.disabled = not settings.access_log
    return handler


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The ids a record carries (for tests and the access log)."""
    return {name: getattr(record, name) for name in FIELDS
            if getattr(record, name, None) is not None}
