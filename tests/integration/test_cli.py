"""The onsale command: migrate, audit, event create, and the dev lifecycle."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from onsale.embedded import free_port

ONSALE = str(Path(sys.executable).parent / "onsale")


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ONSALE, *args], env=env, capture_output=True, text=True, timeout=120)


def env_for(db_url: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": db_url}


async def test_migrate_event_create_and_audit(db_url: str, conn: Any) -> None:
    env = env_for(db_url)
    migrated = run("migrate", env=env)
    assert migrated.stdout.strip() == "schema is up to date"
    assert migrated.stderr.splitlines()[-1] == "onsale migrate: shard 1: done (1/1)"
    created = run("event", "create", "--name", "CLI night", "--seats", "120",
                  "--hold-ttl-seconds", "5", "--venue-name", "Philharmonie",
                  "--time-zone", "Europe/Berlin", env=env)
    assert created.returncode == 0, created.stderr
    event_id = int(created.stdout.strip())  # stdout is the answer; progress on stderr
    assert created.stderr.splitlines() == [
        f"onsale event create: event {event_id}: {what}" for what in (
            "the venue layout (0/4)", "120 seats (1/4)", "the catalogue (2/4)",
            "statistics (3/4)", "done (4/4)")]
    row = await conn.fetchrow("SELECT seat_count, hold_ttl_seconds, venue_name, time_zone "
                              "FROM events WHERE event_id=$1", event_id)
    assert tuple(row) == (120, 5, "Philharmonie", "Europe/Berlin")
    bad = run("event", "create", "--name", "x", "--seats", "0", env=env)
    assert bad.returncode == 2 and "seats" in bad.stderr
    bad = run("event", "create", "--name", "x", "--time-zone", "Berlin", env=env)
    assert bad.returncode == 2 and "'Berlin' is not an IANA time zone" in bad.stderr

    clean = run("audit", env=env)
    assert clean.returncode == 0, clean.stdout
    assert "audit: no violations" in clean.stdout

    # Break invariant 3 behind the core's back: a SOLD seat with no order.
    await conn.execute(
        "ALTER TABLE seat_inventory DROP CONSTRAINT seat_inventory_check1")
    await conn.execute(
        "UPDATE seat_inventory SET status = 'SOLD' WHERE event_id = $1 AND seat_id = 3", event_id)
    dirty = run("audit", env=env)
    assert dirty.returncode == 1
    assert "FAIL sold_seats_point_to_confirmed_orders (1)" in dirty.stdout
    assert f"event_id={event_id}, seat_id=3" in dirty.stdout
    as_json = run("audit", "--json", env=env)
    assert as_json.returncode == 1, as_json.stderr
    doc = json.loads(as_json.stdout)  # stdout is the document alone
    sold = doc["shards"][0]["checks"]["sold_seats_point_to_confirmed_orders"]
    assert doc["violations"] >= 1 and sold["count"] == 1
    assert sold["rows"][0]["seat_id"] == 3 and sold["rows"][0]["event_id"] == event_id


async def test_event_list_and_show(db_url: str, conn: Any) -> None:
    env = env_for(db_url)
    created = run("event", "create", "--name", "List night", "--seats", "30",
                  "--ga-tier", "Floor:5000:40:2", "--time-zone", "America/New_York",
                  "--onsale-at", "2030-11-03T06:30:00Z", env=env)
    assert created.returncode == 0, created.stderr
    event_id = int(created.stdout.strip())
    await conn.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = gen_random_uuid()"
                       " WHERE event_id = $1 AND seat_id IN (1, 2)", event_id)
    listed = json.loads(run("event", "list", "--json", env=env).stdout)
    mine = next(r for r in listed if r["event_id"] == event_id)
    assert (mine["name"], mine["seat_count"], mine["shard_id"]) == ("List night", 30, 1)
    assert (mine["time_zone"], mine["onsale_at"]) == ("America/New_York",
                                                      "2030-11-03T06:30:00+00:00")  # UTC
    mine_listed = next(line for line in run("event", "list", env=env).stdout.splitlines()
                       if line.endswith("List night"))
    # New York's clocks fall back at 06:00 UTC that day: 01:30 EST, not EDT
    assert "Sun 3 Nov 2030, 01:30 EST" in mine_listed
    shown = json.loads(run("event", "show", str(event_id), "--json", env=env).stdout)
    assert shown["seats"] == {"AVAILABLE": 28, "SOLD": 2}
    assert [(t["name"], t["available"], t["capacity"]) for t in shown["ga_tiers"]] == [
        ("Floor", 40, 40)]
    text = run("event", "show", str(event_id), env=env).stdout
    assert "seats (30): available 28, sold 2" in text and "GA tier 1 Floor" in text
    assert "time zone America/New_York" in text and "on sale Sun 3 Nov 2030, 01:30 EST" in text
    missing = run("event", "show", "999999", env=env)
    assert missing.returncode == 1 and "no event 999999" in missing.stderr


def test_version_and_config_check(db_url: str) -> None:
    version = run("--version", env=env_for(db_url))
    assert version.returncode == 0 and version.stdout.startswith("onsale ")
    assert version.stdout.split()[1][0].isdigit(), version.stdout  # the package's own
    env = {**env_for(db_url), "ONSALE_SECRET_KEY": "k" * 32, "ONSALE_ADMIN_TOKEN": "a" * 32,
           "ONSALE_QUEUE_RATE": "5"}
    ok = run("config", "check", "--role", "edge", env=env)
    assert ok.returncode == 0, ok.stderr
    assert "ONSALE_SECRET_KEY = *** (32 characters)  (set)" in ok.stdout
    assert "k" * 32 not in ok.stdout
    assert "ONSALE_QUEUE_RATE is not a setting onsale reads" in ok.stderr
    refused = run("config", "check", "--role", "core",
                  env={**env, "ONSALE_SECRET_KEY": "short"})
    assert refused.returncode == 2 and "core would not start" in refused.stderr


def _wait_for(proc: subprocess.Popen[str], needle: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not printed; output so far:\n{seen}")


def _children_for(data_dir: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(data_dir) in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_dev_serves_seeds_and_stops_cleanly() -> None:
    # Not under pytest's tmp_path: another pytest session on the machine resets
    # /tmp/pytest-of-<user> to 0700, which the server's own user must traverse.
    data_dir = Path(tempfile.mkdtemp(prefix="onsale-test-dev-")) / "state"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["ONSALE_DATA_DIR"] = str(data_dir)
    for attempt in range(2):
        port = free_port()
        proc = subprocess.Popen([ONSALE, "dev", "--port", str(port), "--seats", "300"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out = _wait_for(proc, "serving on", 120)
            assert ("seeded" if attempt == 0 else "already there") in out
            assert "admin token" in out
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/events", timeout=10) as r:
                body = r.read().decode()
            assert '"seat_count":300' in body
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
                page = r.read().decode()
            assert "onsale demo night" in page and 'href="/events/' in page
            assert _children_for(data_dir), "embedded servers should be running"
        finally:
            proc.send_signal(signal.SIGINT)
            rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, rest
        assert "embedded servers stopped" in rest
        deadline = time.monotonic() + 10
        while _children_for(data_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _children_for(data_dir) == [], "orphaned servers after Ctrl-C"
    assert (data_dir / "pg" / "PG_VERSION").exists()
    # Secrets and the simulator's state are private (docs/security.md#files-on-disk); as
    # root, the folder also lets the embedded PostgreSQL's own user through (search only).
    modes = {name: stat.S_IMODE((data_dir / name).stat().st_mode)
             for name in (".", "secrets.json", "psp.log", "psp", "psp/psp.sqlite3", "valkey")}
    assert modes == {".": 0o711 if os.geteuid() == 0 else 0o700, "secrets.json": 0o600,
                     "psp.log": 0o600, "psp": 0o700, "psp/psp.sqlite3": 0o600,
                     "valkey": 0o700}
    shutil.rmtree(data_dir.parent, ignore_errors=True)
