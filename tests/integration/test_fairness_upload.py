"""The console's fairness lab on an uploaded arrivals CSV (``POST /api/ops/fairness`` with
``Content-Type: text/csv``) against real Postgres and Valkey: the figures are the
simulator's for the same crowd, the answer carries the files a sweep writes, a bad line
or a file too large is refused, and the run happens in the lab's worker process, which
a kill turns into a 503 that the next run recovers from."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio

from onsale.edge.fairness import compare, parse_scenario
from onsale.edge.fairness_crowd import parse_time, read_crowd
from onsale.edge.fairness_sweep import summary_rows
from onsale.edge.ops_cache import OpsState
from onsale.edge.ops_dashboard import MAX_UPLOAD
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN, Api, build_api_app, make_settings
from tests.integration.edge_support import queue_event

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "docs" / "fairness" / "sample-arrivals.csv"
OPENS = "2026-01-01T10:00:00Z"
CSV = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "text/csv"}
PNG = b"\x89PNG\r\n\x1a\n"


@contextlib.asynccontextmanager
async def edge(db_url: str, redis_url: str) -> AsyncIterator[Api]:
    app = build_api_app(make_settings(db_url, redis_url=redis_url))
    async with app.router.lifespan_context(app):
        yield Api(app)


async def upload(api: Api, body: bytes, params: dict[str, Any] | None = None,
                 headers: dict[str, str] = CSV) -> httpx.Response:
    async with api.client() as c:
        return await c.post("/api/ops/fairness", content=body, params=params,
                            headers=headers, timeout=600)


def the_simulators(text: str, settings: dict[str, Any],
                   defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the simulator answers for the crowd of ``text``, opened at ``OPENS``."""
    crowd, onsale = read_crowd(text).placed(parse_time(OPENS))
    sc = parse_scenario({**settings, "arrivals": list(crowd.arrivals()),
                         "onsale_second": onsale}, defaults)
    return compare(replace(sc, crowd=crowd))


def file_of(doc: dict[str, Any], name: str) -> bytes:
    f = doc["files"][name]
    return base64.b64decode(f["content"]) if f["encoding"] == "base64" \
        else f["content"].encode()


async def test_an_uploaded_csv_gives_the_simulators_figures_and_the_sweeps_files(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    text = SAMPLE.read_text()
    async with edge(db_url, valkey.url) as api:
        r = await upload(api, text.encode(), {"seats": 1500, "opens_at": OPENS,
                                              "bot_share": 0.05, "dedupe_accounts": "false"})
        assert r.status_code == 200, r.text
        doc = r.json()
        own = the_simulators(text, {"seats": 1500, "bot_share": 0.05,
                                    "dedupe_accounts": False})
        assert doc["policies"] == own["policies"]
        assert doc["scenario"] == own["scenario"]
        assert doc["scenario"]["people"] == len(read_crowd(text).visitors)
        assert doc["event_id"] is None

        assert set(doc["files"]) == {"summary.csv", "cohorts.csv", "results.json",
                                     "waits.png", "bots.png"}
        results = [{"point": {}, "policies": own["policies"]}]
        rows = list(csv.DictReader(io.StringIO(file_of(doc, "summary.csv").decode())))
        assert [r["policy"] for r in rows] == ["fifo", "random"]
        for row, mine in zip(rows, summary_rows(results), strict=True):
            assert float(row["humans_served_share"]) == mine["humans_served_share"]
            assert float(row["bot_ticket_share"]) == mine["bot_ticket_share"]
            assert int(row["human_wait_p90"]) == mine["human_wait_p90"]
        cohorts = list(csv.DictReader(io.StringIO(file_of(doc, "cohorts.csv").decode())))
        assert len(cohorts) == sum(len(p["cohorts"]) for p in own["policies"].values())
        assert json.loads(file_of(doc, "results.json")) == results
        for chart in ("waits.png", "bots.png"):
            assert doc["files"][chart]["media_type"] == "image/png"
            assert file_of(doc, chart).startswith(PNG)

        # an event's settings fill what the query leaves out, as for a JSON scenario
        event_id = await queue_event(api, seats=150, max_tickets_per_account=3,
                                     admission_rate_min=30, admission_rate_max=90,
                                     active_cap=40)
        r = await upload(api, text.encode(), {"event_id": event_id, "opens_at": OPENS})
        assert r.status_code == 200, r.text
        s = r.json()["scenario"]
        assert (s["seats"], s["tickets_per_account"], s["active_cap"]) == (150, 3, 40)
        assert r.json()["event_id"] == event_id


async def test_a_bad_csv_or_setting_is_refused_naming_the_line_or_field(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with edge(db_url, valkey.url) as api:
        bad = await upload(api, b"at,account\n2026-01-01T10:00:00Z,a\nyesterday,b\n")
        assert bad.status_code == 400
        assert bad.headers["content-type"] == "application/problem+json"
        problem = bad.json()
        assert (problem["code"], problem["line"], problem["field"]) \
            == ("invalid_arrivals", 3, "arrivals")
        assert problem["detail"].startswith("line 3: at:")
        no_at = (await upload(api, b"when\n1\n")).json()
        assert (no_at["code"], no_at["line"]) == ("invalid_arrivals", 1)
        nul = (await upload(api, b"at\n1767261600\n17672616\x0001\n")).json()
        assert (nul["code"], nul["line"]) == ("invalid_arrivals", 3)
        latin = (await upload(api, b"at,account\n1767261600,caf\xe9\n")).json()
        assert (latin["code"], latin["line"]) == ("invalid_arrivals", 2)

        good = SAMPLE.read_bytes()
        for params, field in [({"seats": "many"}, "seats"), ({"bot_share": 2}, "bot_share"),
                              ({"preset": "flat"}, "preset"),
                              ({"opens_at": "noon"}, "opens_at"),
                              ({"rate_min": 600, "rate_max": 60}, "rate_max")]:
            r = await upload(api, good, params)
            assert (r.status_code, r.json()["code"], r.json()["field"]) \
                == (400, "invalid_request", field), params
        twice = await upload(api, good, [("seats", "1"), ("seats", "2")])  # type: ignore[arg-type]
        assert (twice.status_code, twice.json()["field"]) == (400, "seats")
        # query parameters belong to the CSV form: a JSON scenario refuses them
        headers = {"Authorization": CSV["Authorization"]}
        async with api.client() as c:
            mixed = await c.post("/api/ops/fairness", params={"seats": 10},
                                 json={"preset": "flat", "visitors": 10}, headers=headers)
        assert (mixed.status_code, mixed.json()["field"]) == (400, "seats")


async def test_an_upload_past_the_bound_is_413(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    async with edge(db_url, valkey.url) as api:
        body = b"at\n" + b"1767261600\n" * (MAX_UPLOAD // 11 + 1)
        assert len(body) > MAX_UPLOAD
        r = await upload(api, body)
        assert (r.status_code, r.json()["code"]) == (413, "payload_too_large")
        assert r.headers["content-type"] == "application/problem+json"
        assert (await upload(api, body[:MAX_UPLOAD - 64].rpartition(b"\n")[0] + b"\n",
                             {"opens_at": "1767261600"})).status_code == 200


async def test_the_run_is_in_the_worker_process_and_a_killed_worker_is_a_503(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis) -> None:
    text = SAMPLE.read_bytes()
    async with edge(db_url, valkey.url) as api:
        ops: OpsState = api.app.state.edge.ops
        assert (await upload(api, text, {"opens_at": OPENS})).status_code == 200
        worker = await ops.lab.call(os.getpid)
        assert worker != os.getpid()
        os.kill(worker, signal.SIGKILL)
        # the run goes to the worker just killed: had it run in this process, it would
        # have answered 200
        dead = await upload(api, text, {"opens_at": OPENS})
        assert (dead.status_code, dead.json()["code"]) == (503, "lab_unavailable")
        assert dead.headers["retry-after"] == "1"
        again = await upload(api, text, {"opens_at": OPENS})
        assert again.status_code == 200, again.text
        assert await ops.lab.call(os.getpid) not in (worker, os.getpid())
        async with ops.simulating:    # another simulation is running
            busy = await upload(api, text, {"opens_at": OPENS})
        assert (busy.status_code, busy.json()["code"]) == (429, "rate_limited")


def test_the_edge_imports_no_matplotlib() -> None:
    """Only the worker draws: the edge's modules, the lab's among them, leave it out."""
    code = ("import sys, onsale.edge.tier, onsale.edge.ops_dashboard, "
            "onsale.edge.fairness_lab, onsale.edge.fairness_files; "
            "print('matplotlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "False"
