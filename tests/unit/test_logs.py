"""kernel/logs.py: the line formats, the ids a line carries, the settings."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from onsale.kernel.logs import (
    LogSettings,
    bind,
    bound,
    configure,
    current,
    request_id_from,
)
from onsale.kernel.settings import ConfigError


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _lines(fmt: str, role: str = "core", **settings: object) -> tuple[io.StringIO, logging.Logger]:
    out = io.StringIO()
    configure(role, LogSettings(log_format=fmt, **settings), stream=out)  # type: ignore[arg-type]
    return out, logging.getLogger("onsale.test_logs")


def test_a_json_line_has_time_level_logger_message_role_and_the_ids_set(
        restore_logging: None) -> None:
    out, log = _lines("json")
    with bound(request_id="req-1", event_id=7, hold_id="h-9"):
        log.warning("held %d seats", 3)
    log.warning("outside")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first.pop("time").endswith("+00:00")
    assert first == {"level": "WARNING", "logger": "onsale.test_logs",
                     "message": "held 3 seats", "role": "core", "request_id": "req-1",
                     "event_id": "7", "hold_id": "h-9"}
    assert "request_id" not in second and second["message"] == "outside"


def test_an_exception_is_one_json_line_with_its_traceback(restore_logging: None) -> None:
    out, log = _lines("json")
    try:
        raise ValueError("bad seat")
    except ValueError:
        log.exception("hold failed")
    (line,) = out.getvalue().splitlines()
    doc = json.loads(line)
    assert doc["level"] == "ERROR" and "ValueError: bad seat" in doc["exc_info"]


def test_a_text_line_shows_the_role_and_the_ids_in_order(restore_logging: None) -> None:
    out, log = _lines("text", role="edge")
    with bound(order_id="o-1", request_id="r-1"):
        log.error("declined")
    (line,) = out.getvalue().splitlines()
    assert line.endswith(" ERROR onsale.test_logs [edge request_id=r-1 order_id=o-1] declined")


def test_the_level_drops_lower_lines_and_the_access_log_is_off_by_default(
        restore_logging: None) -> None:
    out, log = _lines("json", log_level="WARNING")
    log.info("dropped")
    log.warning("kept")
    assert [json.loads(x)["message"] for x in out.getvalue().splitlines()] == ["kept"]
    assert logging.getLogger("onsale.access").disabled
    _lines("json", access_log=True)
    assert not logging.getLogger("onsale.access").disabled


def test_ids_are_per_task_and_inherited_by_the_tasks_a_request_starts() -> None:
    async def request(rid: str) -> list[dict[str, str]]:
        bind(request_id=rid)
        await asyncio.sleep(0)
        child = await asyncio.create_task(_seen())
        return [current(), child]

    async def _seen() -> dict[str, str]:
        return current()

    async def main() -> list[list[dict[str, str]]]:
        return list(await asyncio.gather(request("a"), request("b")))

    a, b = asyncio.run(main())
    assert a == [{"request_id": "a"}] * 2 and b == [{"request_id": "b"}] * 2
    assert current() == {}
    with pytest.raises(TypeError):
        bind(seat=1)


def test_a_client_request_id_is_kept_only_when_it_is_a_plain_token() -> None:
    assert request_id_from(b"4f9c2e.req-1:2") == "4f9c2e.req-1:2"
    for bad in (None, b"", b"a b", b"line\nbreak", b'{"x"}', b"x" * 129):
        fresh = request_id_from(bad)
        assert re.fullmatch(r"[0-9a-f]{16}-[0-9a-f]+", fresh) and fresh != request_id_from(bad)


def test_the_settings_check_their_values() -> None:
    assert LogSettings.from_env({"ONSALE_LOG_LEVEL": "debug"}).log_level == "DEBUG"
    assert LogSettings.from_env({}).log_format == ""
    with pytest.raises(ConfigError, match="ONSALE_LOG_LEVEL"):
        LogSettings.from_env({"ONSALE_LOG_LEVEL": "loud"})
    with pytest.raises(ConfigError, match="ONSALE_LOG_FORMAT"):
        LogSettings.from_env({"ONSALE_LOG_FORMAT": "xml"})
