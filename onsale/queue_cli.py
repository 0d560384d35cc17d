"""``onsale queue status|pause|resume EVENT`` (docs/edge.md#operator-api): a client of the
edge's operator routes (``/api/ops/events/{id}/queue``, ``…/pause``, ``…/resume``), so
the command does exactly what the console does: the edge writes the setting, copies it
to the event's shard and tells waiting visitors at once. The token is
``ONSALE_ADMIN_TOKEN``, or ``onsale dev``'s in its data directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

PATHS = {"status": ("GET", ""), "pause": ("POST", "/pause"), "resume": ("POST", "/resume")}


class QueueCommandError(RuntimeError):
    """The edge refused or could not be reached; the message is one line."""


def admin_token(env: dict[str, str], data_dir: Path) -> str:
    token = env.get("ONSALE_ADMIN_TOKEN")
    if token:
        return token
    stored = data_dir / "secrets.json"
    if stored.exists():
        found = json.loads(stored.read_text()).get("ONSALE_ADMIN_TOKEN")
        if found:
            return str(found)
    raise QueueCommandError("set ONSALE_ADMIN_TOKEN (the operator token the edge was "
                            "started with)")


def queue_command(action: str, event_id: int, url: str, token: str,
                  timeout: float = 10.0) -> dict[str, Any]:
    method, suffix = PATHS[action]
    target = f"{url.rstrip('/')}/api/ops/events/{event_id}/queue{suffix}"
    try:
        r = httpx.request(method, target, timeout=timeout,
                          headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        raise QueueCommandError(f"{target}: {exc}") from None
    try:
        body: dict[str, Any] = r.json()
    except ValueError:
        raise QueueCommandError(f"{target}: {r.status_code}, not JSON") from None
    if r.status_code != 200:
        raise QueueCommandError(f"{target}: {r.status_code} {body.get('code')}: "
                                f"{body.get('detail') or body.get('title')}")
    return body


def status_text(doc: dict[str, Any]) -> str:
    live, ctl, cfg = doc["live"], doc["controller"], doc["settings"]
    state = "paused" if cfg["paused"] else str(ctl["state"])
    return "\n".join([
        f"event {doc['event_id']}: queue {cfg['queue_policy']}, {state}, "
        f"{ctl['rate_per_minute']:.0f}/min allowed, {live['admitted_per_minute']:.0f}/min "
        "admitted",
        f"  waiting {live['queued']} (pre-queue {live['prequeue']}), active {live['active']}"
        f" of {cfg['active_cap']}, admitted not arrived {live['admitted_not_arrived']}",
        f"  so far: joined {live['joined']}, admitted {live['admitted']}, abandoned "
        f"{live['abandoned']}, expired {live['expired']}, revoked {live['revoked']}",
    ])

