"""Jinja2 for the server-rendered pages: one environment, the signed-in account
and the problem sentences in every page's context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from core.sessions import account_of
from web.messages import FALLBACK, SENTENCES, sentence

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
_MESSAGES = json.dumps({"sentences": SENTENCES, "fallback": FALLBACK})


signed_in_account = account_of  # the pages' name for it: None sends a visitor to sign in


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
    context.setdefault("account", signed_in_account(request))
    context["messages_json"] = _MESSAGES
    return templates.TemplateResponse(request, name, context, status_code=status_code)


def problem_page(request: Request, status: int, code: str, *, title: str = "Sorry",
                 link: tuple[str, str] = ("/", "See all events")) -> Response:
    """What went wrong, as a sentence in the site's layout (never JSON or a trace)."""
    return render(request, "problem.html", status_code=status, title=title,
                  sentence=sentence(code), code=code, link=link)
