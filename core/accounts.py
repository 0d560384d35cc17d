"""Accounts: sign up, sign in, sign out, and who am I."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.db import Database, queries
from core.inputs import json_object
from core.passwords import DUMMY_HASH, hash_password, verify_password
from core.problems import Problem
from core.sessions import SessionCodec, current_account
from core.timefmt import utc_iso

EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 256


def parse_credentials(body: dict[str, Any]) -> tuple[str, str]:
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or len(email) > 254 or not EMAIL.match(email.strip()):
        raise Problem(400, "invalid_email", detail="Enter an email address like name@example.com.")
    if not isinstance(password, str) or not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise Problem(
            400, "weak_password",
            detail=f"Passwords need {MIN_PASSWORD} to {MAX_PASSWORD} characters.",
        )
    return email.strip(), password


def _account_json(row: Any) -> dict[str, Any]:
    return {
        "account_id": str(row["account_id"]),
        "email": row["email"],
        "created_at": utc_iso(row["created_at"]),
    }


async def sign_up(request: Request) -> Response:
    email, password = parse_credentials(await json_object(request))
    pw_hash = await asyncio.to_thread(hash_password, password)
    db: Database = request.app.state.db
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("accounts")["insert_account"], email, pw_hash)
    if row is None:
        raise Problem(409, "email_taken")
    response = JSONResponse(_account_json(row), status_code=201)
    codec: SessionCodec = request.app.state.sessions
    codec.set_cookie(response, row["account_id"])
    return response


async def sign_in(request: Request) -> Response:
    body = await json_object(request)
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or not isinstance(password, str):
        raise Problem(401, "bad_credentials")
    db: Database = request.app.state.db
    async with db.connection() as conn:
        row = await conn.fetchrow(queries("accounts")["account_by_email"], email.strip())
    stored = row["password_hash"] if row else DUMMY_HASH
    ok = await asyncio.to_thread(verify_password, password[:MAX_PASSWORD], stored)
    if row is None or not ok:
        raise Problem(401, "bad_credentials")
    async with db.connection() as conn:
        account = await conn.fetchrow(queries("accounts")["account_by_id"], row["account_id"])
    response = JSONResponse(_account_json(account))
    codec: SessionCodec = request.app.state.sessions
    codec.set_cookie(response, row["account_id"])
    return response


async def sign_out(request: Request) -> Response:
    response = Response(status_code=204)
    codec: SessionCodec = request.app.state.sessions
    codec.clear_cookie(response)
    return response


async def me(request: Request) -> Response:
    account_id = current_account(request)
    db: Database = request.app.state.db
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
    Route("/api/me", me, methods=["GET"]),
]
