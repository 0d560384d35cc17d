"""The signed session cookie (itsdangerous) and the current-account check."""

from __future__ import annotations

import hmac
import uuid

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from core.problems import Problem

COOKIE = "onsale_session"


class SessionCodec:
    def __init__(self, secret_key: str, max_age: int, secure: bool) -> None:
        self._s = URLSafeTimedSerializer(secret_key, salt="onsale.session.v1")
        self.max_age = max_age
        self.secure = secure

    def encode(self, account_id: uuid.UUID) -> str:
        return self._s.dumps({"a": str(account_id), "n": uuid.uuid4().hex[:12]})

    def decode(self, token: str) -> uuid.UUID | None:
        try:
            data = self._s.loads(token, max_age=self.max_age)
            return uuid.UUID(data["a"])
        except (BadSignature, KeyError, TypeError, ValueError):
            return None

    def set_cookie(self, response: Response, account_id: uuid.UUID) -> None:
        response.set_cookie(
            COOKIE, self.encode(account_id), max_age=self.max_age, path="/",
            httponly=True, samesite="lax", secure=self.secure,
        )

    def clear_cookie(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax", secure=self.secure)


def account_of(connection: HTTPConnection) -> uuid.UUID | None:
    """The account of a valid session cookie, or None (pages send such visitors to sign in)."""
    codec: SessionCodec = connection.app.state.sessions
    token = connection.cookies.get(COOKIE)
    return codec.decode(token) if token else None


def current_account(connection: HTTPConnection) -> uuid.UUID:
    """The signed-in account, or 401 ``authentication_required``."""
    account = account_of(connection)
    if account is None:
        raise Problem(401, "authentication_required")
    return account


def require_admin(request: Request) -> None:
    expected: str = request.app.state.settings.admin_token
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), expected.encode()):
        raise Problem(401, "admin_required")
