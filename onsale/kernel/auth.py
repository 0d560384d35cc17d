"""Who is asking: the signed-in account of a request (its session cookie, checked
through the process's ``Sessions``) and the operator's bearer token.

Route handlers call these. They find the sessions in the process's shared parts
(``kernel.shared``), which hold a ``kernel.sessions.Sessions``: so this module sits
above both, and ``kernel.sessions`` never looks anything up on the app."""

from __future__ import annotations

import hmac
import logging
import math
import uuid

from starlette.requests import HTTPConnection, Request

from onsale.kernel.addresses import client_bucket
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared

security_log = logging.getLogger("onsale.security")


async def account_of(connection: HTTPConnection) -> uuid.UUID | None:
    """The account of a live session cookie, or None (pages send such visitors
    to sign in); 503 ``session_unavailable`` when sessions cannot be checked."""
    sessions = shared(connection).sessions
    return await sessions.account(sessions.token(connection))


async def current_account(connection: HTTPConnection) -> uuid.UUID:
    """The signed-in account, or 401 ``authentication_required``."""
    account = await account_of(connection)
    if account is None:
        raise Problem(401, "authentication_required")
    return account


def signed_account(connection: HTTPConnection) -> uuid.UUID:
    """The account a validly signed, unexpired session cookie names, without
    asking whether the session was revoked; 401 ``authentication_required``
    otherwise. Only for the queue poll of a waiting visitor, which must cost no
    Redis round trip (docs/edge.md): it shows the caller its own place. A poll
    that would claim a shopping session or hand out an admission token checks
    ``current_account`` first (edge/routes.py ``View.admit``), and holds,
    checkout and the seat map accept a token only with a live session."""
    sessions = shared(connection).sessions
    token = sessions.token(connection)
    ref = sessions.codec.decode(token) if token else None
    if ref is None:
        raise Problem(401, "authentication_required")
    return ref.account


def require_admin(request: Request) -> None:
    """The operator's bearer token, or 401 ``admin_required``. Failed attempts are
    limited per client address (``kernel.admin_throttle``): past the limit every
    operator request from that address, the right token too, is ``429
    rate_limited`` with ``Retry-After`` until the window has room again. Each
    failure is logged (``onsale.security``: the address, never the token). A
    request with no ``Authorization`` header guesses nothing and is not counted."""
    parts = shared(request)
    throttle = parts.admin_throttle
    address = client_bucket(request)
    wait = throttle.retry_in(address)
    if wait > 0:  # decided before the token is looked at: the answer says nothing of it
        raise Problem(429, "rate_limited", retry_after=max(1, math.ceil(wait)))
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    expected = parts.settings.admin_token
    if scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), expected.encode()):
        return
    if header:
        failures = throttle.failed(address)
        security_log.warning(
            "operator token refused from %s: %d of %d failed attempts allowed per %g s%s",
            address, failures, throttle.limit, throttle.window,
            "; its operator requests are refused until the window has room"
            if failures >= throttle.limit else "")
    raise Problem(401, "admin_required")
