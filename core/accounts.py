"""Accounts: sign up, sign in, sign out (here or everywhere), and who am I.

Sign-in and sign-up are throttled per client address and per email across
processes (``core.signin_throttle``) and hash passwords in a bounded pool
(``core.password_pool``); sessions are server-side records
(``kernel.sessions``). docs/security.md#sessions and
#sign-in-and-sign-up-throttling explain the limits.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core import request_bodies as bodies
from onsale.core.passwords import Checked, check_password, dummy_hash, hash_password
from onsale.core.queries import queries
from onsale.core.state import core_state
from onsale.kernel.auth import current_account
from onsale.kernel.bodies import read_body
from onsale.kernel.problems import Problem
from onsale.kernel.sessions import Sessions
from onsale.kernel.shared import shared
from onsale.kernel.timefmt import utc_iso


def credentials(body: bodies.Credentials) -> tuple[str, str]:
    """The email address and password of a sign-up its Struct has checked."""
    return body.email, body.password


def _account_json(row: Any) -> dict[str, Any]:
    return {
        "account_id": str(row["account_id"]),
        "email": row["email"],
        "created_at": utc_iso(row["created_at"]),
    }


def client_host(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _check(password: str, stored: str | None) -> Checked:
    """In the pool: an unknown email is checked against a dummy hash, so that
    it takes as long as a known one."""
    if stored is None:
        check_password(password, dummy_hash())
        return Checked(False, None)
    return check_password(password, stored)


async def _signed_in(request: Request, response: Response, account_id: Any) -> Response:
    """A new session (never the one the browser brought: no fixation); the
    browser's previous session, if any, is revoked in the same round trip."""
    sessions = shared(request).sessions
    token = await sessions.create(account_id, replacing=sessions.token(request))
    sessions.set_cookie(response, token)
    return response


async def sign_up(request: Request) -> Response:
    email, password = credentials(
        await read_body(request, bodies.Credentials, bodies.SIGN_UP_CODES))
    throttle = core_state(request).throttle
    await throttle.attempt(client_host(request), email, sign_in=False)
    pool = core_state(request).passwords
    pw_hash = await pool.run(hash_password, password)
    db = core_state(request).db
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("accounts")["insert_account"], email, pw_hash)
    if row is None:
        raise Problem(409, "email_taken")
    return await _signed_in(request, JSONResponse(_account_json(row), status_code=201),
                            row["account_id"])


async def sign_in(request: Request) -> Response:
    body = await read_body(request, bodies.SignIn, bodies.SIGN_IN_CODES)
    email, password = body.email.strip(), body.password[:bodies.MAX_PASSWORD]
    throttle = core_state(request).throttle
    await throttle.attempt(client_host(request), email, sign_in=True)
    db = core_state(request).db
    q = queries("accounts")
    async with db.connection() as conn:
        row = await conn.fetchrow(q["account_by_email"], email)
    stored: str | None = row["password_hash"] if row else None
    pool = core_state(request).passwords
    checked = await pool.run(_check, password, stored)
    if row is None or not checked.ok:
        raise Problem(401, "bad_credentials")
    async with db.connection() as conn:
        if checked.new_hash is not None:  # scrypt, or older argon2 parameters
            await conn.execute(q["update_password_hash"], row["account_id"],
                               checked.new_hash, stored)
        account = await conn.fetchrow(q["account_by_id"], row["account_id"])
    response, _ = await asyncio.gather(
        _signed_in(request, JSONResponse(_account_json(account)), row["account_id"]),
        throttle.succeeded(email))
    return response


async def sign_out(request: Request) -> Response:
    """Revoke this session: every copy of the cookie stops working. 503 (and
    the cookie kept, to retry) if the store cannot be reached."""
    sessions = shared(request).sessions
    await sessions.revoke(sessions.token(request))
    return _signed_out(sessions)


async def sign_out_everywhere(request: Request) -> Response:
    """``DELETE /api/sessions``: revoke every session of the signed-in account."""
    account_id = await current_account(request)
    sessions = shared(request).sessions
    await sessions.revoke_all(account_id)
    return _signed_out(sessions)


def _signed_out(sessions: Sessions) -> Response:
    """204, and the browser told to forget its cookie."""
    response = Response(status_code=204)
    sessions.clear_cookie(response)
    return response


async def me(request: Request) -> Response:
    account_id = await current_account(request)
    db = core_state(request).db
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("accounts")["account_by_id"], account_id)
    if row is None:
        raise Problem(401, "authentication_required")
    return JSONResponse(_account_json(row))


async def session(request: Request) -> Response:
    return await (sign_in(request) if request.method == "POST" else sign_out(request))


routes = [
    Route("/api/accounts", sign_up, methods=["POST"]),
    Route("/api/session", session, methods=["POST", "DELETE"]),
    Route("/api/sessions", sign_out_everywhere, methods=["DELETE"]),
    Route("/api/me", me, methods=["GET"]),
]
