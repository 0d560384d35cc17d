"""A plain landing page for ``onsale dev`` until the shopper app lands."""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from core.db import Database, queries


async def index_page(request: Request) -> Response:
    db: Database = request.app.state.db
    async with db.connection() as conn:
        rows = await conn.fetch(queries("events")["events"], None)
    items = "".join(
        f'<li><a href="/api/events/{r["event_id"]}">{html.escape(r["name"])}</a> '
        f'— {r["seat_count"]:,} seats, on sale {r["onsale_at"]:%Y-%m-%d %H:%M} UTC '
        f'(<a href="/api/events/{r["event_id"]}/venue">layout</a>)</li>'
        for r in rows
    )
    return HTMLResponse(
        "<!doctype html><html lang=en><meta charset=utf-8><title>onsale</title>"
        "<body style='font-family:system-ui;max-width:50rem;margin:2rem auto'>"
        "<h1>onsale</h1><p>The authoritative core is running. Events:</p>"
        f"<ul>{items or '<li>none yet</li>'}</ul>"
        "<p><a href='/openapi.json'>API (OpenAPI)</a> · <a href='/metrics'>metrics</a> · "
        "<a href='/readyz'>readiness</a></p></body></html>"
    )
