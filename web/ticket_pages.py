"""A ticket's QR code (docs/tickets.md): ``/orders/{order_id}/tickets/{ticket_id}.svg``
(shown on the order page, downloadable and printable) and ``.png`` (the same code as
an image every phone and scanner reads). The code holds the ticket's signed value, the
one ``GET /api/orders/{id}`` lists; only the order's owner can fetch it."""

from __future__ import annotations

import io
from typing import Any

import segno
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from onsale.core.read_model import order_document, ticket_keys
from onsale.kernel.inputs import parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.web.seat_pages import made_by, ticket_label
from onsale.web.templating import problem_page, signed_in_account

KINDS = {"svg": "image/svg+xml", "png": "image/png"}
SCALE = 6  # pixels per module: a 330-character value is 69 modules, about 500 px


def qr_image(value: str, kind: str, title: str) -> bytes:
    """The QR code of ``value`` (error correction M, a quiet zone of 4 modules, black on
    white so a dark screen still scans)."""
    out = io.BytesIO()
    code = segno.make(value, error="m", micro=False)
    if kind == "svg":
        code.save(out, kind="svg", scale=SCALE, border=4, dark="#000", light="#fff",
                  title=title, xmldecl=True, svgclass=None, lineclass=None)
    else:
        code.save(out, kind="png", scale=SCALE, border=4, dark="#000", light="#fff")
    return out.getvalue()


def split_name(name: str) -> tuple[str, str] | None:
    """``{ticket_id}.svg`` -> (id, kind); None for anything else."""
    stem, dot, kind = name.rpartition(".")
    return (stem, kind) if dot and kind in KINDS else None


def find_ticket(order: dict[str, Any], ticket_id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = next(
        (t for t in order["tickets"] if t["ticket_id"] == ticket_id), None)
    return found


async def ticket_image(request: Request) -> Response:
    account = await signed_in_account(request)
    if account is None:
        return RedirectResponse("/signin", status_code=303)
    order_id = parse_uuid(request.path_params["order_id"])
    named = split_name(request.path_params["ticket_file"])
    ticket_id = None if named is None else parse_uuid(named[0])
    db = None if order_id is None else made_by(request, order_id)
    order = None
    if db is not None and order_id is not None and ticket_id is not None:
        try:
            order = await order_document(db, order_id, account,
                                         ticket_keys(shared(request).settings))
        except Problem:
            order = None
    ticket = None if order is None else find_ticket(order, str(ticket_id))
    if order is None or ticket is None or named is None:
        return await problem_page(request, 404, "not_found", title="Ticket not found")
    kind = named[1]
    title = f"Ticket for {ticket_label(ticket, order)}"
    headers = {"Cache-Control": "private, max-age=300"}
    if request.query_params.get("download") is not None:
        headers["Content-Disposition"] = f'attachment; filename="ticket-{ticket_id}.{kind}"'
    return Response(qr_image(ticket["value"], kind, title), media_type=KINDS[kind],
                    headers=headers)


routes: list[BaseRoute] = [
    Route("/orders/{order_id}/tickets/{ticket_file}", ticket_image, methods=["GET"]),
]
