"""Jinja2 for the server-rendered pages: one environment, the signed-in account
and the problem sentences in every page's context."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from onsale.kernel.auth import account_of
from onsale.kernel.problems import Problem
from onsale.web.messages import FALLBACK, SENTENCES, sentence

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
_MESSAGES = json.dumps({"sentences": SENTENCES, "fallback": FALLBACK})


signed_in_account = account_of  # the pages' name for it (async): None sends a visitor to sign in


async def shown_account(request: Request) -> uuid.UUID | None:
    """The account the page header shows: as signed out when sessions cannot
    be checked (the page itself still refuses what needs a session)."""
    try:
        return await signed_in_account(request)
    except Problem:
        return None


async def render(request: Request, name: str, status_code: int = 200,
                 **context: Any) -> Response:
    if "account" not in context:
        context["account"] = await shown_account(request)
    context["messages_json"] = _MESSAGES
    return templates.TemplateResponse(request, name, context, status_code=status_code)


async def problem_page(request: Request, status: int, code: str, *, title: str = "Sorry",
                       link: tuple[str, str] = ("/", "See all events")) -> Response:
    """What went wrong, as a sentence in the site's layout (never JSON or a trace)."""
    return await render(request, "problem.html", status_code=status, title=title,
                        sentence=sentence(code), code=code, link=link)
