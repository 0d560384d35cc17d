"""``GET /api/orders``: an account's orders from every shard, newest first, a page at a
time (the rules: ``core/order_list_rules.py``; the reading: ``core/read_model.py``
``orders_page``, which the "My orders" page reads too)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from onsale.core.order_list_rules import DEFAULT_LIMIT, MAX_LIMIT, Cursor, parse_cursor, parse_limit
from onsale.core.read_model import orders_page
from onsale.kernel.auth import current_account
from onsale.kernel.problems import Problem
from onsale.kernel.responses import JSONResponse
from onsale.kernel.shared import shared


def page_query(request: Request) -> tuple[Cursor | None, int]:
    """``?before=`` and ``?limit=``, each at most once; 400 invalid_request otherwise."""
    params = request.query_params
    for name in params:
        if name not in ("before", "limit") or len(params.getlist(name)) > 1:
            raise Problem(400, "invalid_request", field=name,
                          detail="Only before and limit, each at most once.")
    limit = parse_limit(params.get("limit"))
    if limit is None:
        raise Problem(400, "invalid_request", field="limit",
                      detail=f"limit is a whole number from 1 to {MAX_LIMIT}.")
    raw = params.get("before")
    before = None if raw is None else parse_cursor(raw)
    if raw is not None and before is None:
        raise Problem(400, "invalid_request", field="before",
                      detail="before is the next_cursor of a previous page.")
    return before, limit


async def list_orders(request: Request) -> Response:
    account = await current_account(request)
    before, limit = page_query(request)
    doc = await orders_page(shared(request).shard_set.pools, account, before, limit)
    cursor = doc["next_cursor"]
    query = {"before": cursor, **({"limit": str(limit)} if limit != DEFAULT_LIMIT else {})}
    doc["next"] = f"/api/orders?{urlencode(query)}" if cursor else None
    return JSONResponse(doc, headers={"Cache-Control": "no-store"})
