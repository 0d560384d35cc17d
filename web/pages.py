"""The shopper web app and the operator console: server-rendered pages and the
static JavaScript they load (docs/web.md). Mounted by ``onsale dev`` and the
edge role."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from web import ops_pages, seat_pages, shop_pages
from web.templating import HERE


def page_routes() -> list[BaseRoute]:
    return [
        *shop_pages.routes,
        *seat_pages.routes,
        *ops_pages.routes,
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
