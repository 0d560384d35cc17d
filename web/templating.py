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

from core.sessions import COOKIE, SessionCodec
from web.messages import FALLBACK, SENTENCES

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
_MESSAGES = json.dumps({"sentences": SENTENCES, "fallback": FALLBACK})


def signed_in_account(request: Request) -> uuid.UUID | None:
    """The account of the session cookie, or None (pages redirect to sign-in)."""
    codec: SessionCodec = request.app.state.sessions
    token = request.cookies.get(COOKIE)
    return codec.decode(token) if token else None


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
    context.setdefault("account", signed_in_account(request))
    context["messages_json"] = _MESSAGES
    return templates.TemplateResponse(request, name, context, status_code=status_code)
