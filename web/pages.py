"""The shopper web app and the operator console: server-rendered pages and the
static JavaScript they load (docs/web.md). Served by the core role and ``onsale dev``."""

from __future__ import annotations

import functools

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from onsale.web import account_pages, ops_pages, seat_pages, shop_pages, ticket_pages
from onsale.web.templating import HERE


@functools.cache
def _favicon() -> bytes:
    return (HERE / "static" / "favicon.svg").read_bytes()


async def favicon(request: Request) -> Response:
    """``/favicon.ico`` for clients that ask without reading the pages'
    ``<link rel="icon" href="/static/favicon.svg">``: the same SVG icon."""
    return Response(_favicon(), media_type="image/svg+xml",
                    headers={"Cache-Control": "public, max-age=86400"})


def page_routes() -> list[BaseRoute]:
    return [
        *shop_pages.routes,
        *seat_pages.routes,
        *ticket_pages.routes,
        *account_pages.routes,
        *ops_pages.routes,
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
