"""``onsale event create`` with the waiting-room flags: the same fields and the same
validation (core.event_spec.parse_queue_spec) as POST /api/ops/events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.integration.test_cli import env_for, run

QUEUE_COLUMNS = ("SELECT queue_policy, prequeue_at, admission_rate_min, admission_rate_max,"
                 " active_cap, pow_difficulty FROM events WHERE event_id = $1")


async def test_queue_flags_are_stored_on_the_event(db_url: str, conn: Any) -> None:
    env = env_for(db_url)
    created = run("event", "create", "--name", "Draw night", "--seats", "60",
                  "--onsale-at", "2031-05-01T10:00:00Z", "--queue-policy", "random",
                  "--prequeue-at", "2031-05-01T09:30:00+00:00",
                  "--admission-rate-min", "120", "--admission-rate-max", "900",
                  "--active-cap", "2500", "--pow-difficulty", "12", env=env)
    assert created.returncode == 0, created.stderr
    event_id = int(created.stdout.strip())
    row = await conn.fetchrow(QUEUE_COLUMNS, event_id)
    assert dict(row) == {"queue_policy": "random",
                         "prequeue_at": datetime(2031, 5, 1, 9, 30, tzinfo=UTC),
                         "admission_rate_min": 120, "admission_rate_max": 900,
                         "active_cap": 2500, "pow_difficulty": 12}
    # A random draw publishes its seed's commitment when the event is created, as the API does.
    assert await conn.fetchval(
        "SELECT count(*) FROM event_draw_secrets WHERE event_id = $1", event_id) == 1

    plain = run("event", "create", "--name", "Plain night", "--seats", "60", env=env)
    assert plain.returncode == 0, plain.stderr
    row = await conn.fetchrow(QUEUE_COLUMNS, int(plain.stdout.strip()))
    assert dict(row) == {"queue_policy": "fifo", "prequeue_at": None,
                         "admission_rate_min": 60, "admission_rate_max": 6000,
                         "active_cap": 10_000, "pow_difficulty": 0}


async def test_bad_queue_flags_exit_2_with_the_api_message(db_url: str, conn: Any) -> None:
    env = env_for(db_url)
    before = await conn.fetchval("SELECT count(*) FROM events")
    cases = [
        (["--queue-policy", "lottery"], "queue_policy: invalid enum value 'lottery'."),
        (["--onsale-at", "2031-05-01T10:00:00Z", "--prequeue-at", "2031-05-01T10:00:01Z"],
         "prequeue_at must not be after onsale_at."),
        (["--prequeue-at", "2031-05-01T10:00:00"],
         "prequeue_at: expected `datetime` with a timezone component."),
        (["--admission-rate-min", "500", "--admission-rate-max", "400"],
         "admission_rate_min must not exceed admission_rate_max."),
        (["--admission-rate-max", "0"], "admission_rate_max: expected `int` >= 1."),
        (["--active-cap", "0"], "active_cap: expected `int` >= 1."),
        (["--pow-difficulty", "33"], "pow_difficulty: expected `int` <= 32."),
    ]
    for flags, message in cases:
        bad = run("event", "create", "--name", "Bad", "--seats", "10", *flags, env=env)
        assert bad.returncode == 2, (flags, bad.stdout, bad.stderr)
        assert bad.stderr.strip() == f"onsale event create: {message}", flags
        assert bad.stdout == ""
    assert await conn.fetchval("SELECT count(*) FROM events") == before
