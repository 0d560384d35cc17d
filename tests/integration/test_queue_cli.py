"""onsale queue status|pause|resume against a running edge process: the command is a
client of the operator API, so it does what the console does."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator

import httpx
import pytest

from onsale.embedded import EmbeddedPostgres
from tests.conftest import ADMIN_TOKEN
from tests.stack import ONSALE, Stack, started_stack


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("queue-cli")) as s:
        yield s


def queue(stack: Stack, *args: str, token: str = ADMIN_TOKEN) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ONSALE_ADMIN_TOKEN": token}
    return subprocess.run([ONSALE, "queue", *args, "--url", stack.edge_url], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


async def test_status_pause_and_resume_through_the_edge(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.core_url, timeout=30) as c:
        r = await c.post("/api/ops/events", json={"name": "Queue night", "seats": 50,
                                                   "queue_policy": "fifo"},
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    event_id = str(r.json()["event_id"])
    status = queue(stack, "status", event_id)
    assert status.returncode == 0, status.stderr
    assert f"event {event_id}: queue fifo" in status.stdout
    paused = queue(stack, "pause", event_id, "--json")
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout)["settings"]["paused"] is True
    assert ", paused," in queue(stack, "status", event_id).stdout
    resumed = json.loads(queue(stack, "resume", event_id, "--json").stdout)
    assert resumed["settings"]["paused"] is False
    refused = queue(stack, "pause", event_id, token="not-the-token")
    assert refused.returncode == 2 and "401" in refused.stderr
    missing = queue(stack, "status", "999999")
    assert missing.returncode == 2 and "event_not_found" in missing.stderr
