"""core.sessions: the signed session cookie, current_account and require_admin."""

from __future__ import annotations

import base64
import time
import uuid
from http.cookies import SimpleCookie
from types import SimpleNamespace
from typing import Any

import pytest
from itsdangerous import URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from core.problems import Problem
from core.sessions import COOKIE, SessionCodec, current_account, require_admin

KEY = "unit-test-secret-key-0123456789"
OTHER_KEY = "another-secret-key-9876543210zz"
ACCOUNT = uuid.UUID("0190f5b4-7c1e-7a2b-9c3d-4e5f60718293")
T0 = 1_900_000_000.0


@pytest.fixture
def codec() -> SessionCodec:
    return SessionCodec(KEY, max_age=3600, secure=False)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A settable wall clock for itsdangerous (which reads time.time())."""
    now = [T0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def set_cookie_headers(response: Response) -> list[str]:
    return [v.decode("latin-1") for k, v in response.raw_headers if k == b"set-cookie"]


def attributes(header: str) -> tuple[str, str, dict[str, str]]:
    first, *rest = [p.strip() for p in header.split(";")]
    name, _, value = first.partition("=")
    attrs = {}
    for part in rest:
        k, _, v = part.partition("=")
        attrs[k.lower()] = v
    return name, value, attrs


# --- encode / decode -----------------------------------------------------------------------


def test_round_trip(codec: SessionCodec) -> None:
    assert codec.decode(codec.encode(ACCOUNT)) == ACCOUNT


def test_round_trip_many_accounts(codec: SessionCodec) -> None:
    for _ in range(20):
        account = uuid.uuid4()
        assert codec.decode(codec.encode(account)) == account


def test_tokens_are_cookie_safe(codec: SessionCodec) -> None:
    token = codec.encode(ACCOUNT)
    assert token.isascii()
    assert not set(token) & set(' ;,"\\=')


def test_each_token_is_unique(codec: SessionCodec) -> None:
    assert codec.encode(ACCOUNT) != codec.encode(ACCOUNT)


def test_tampered_payload_is_rejected(codec: SessionCodec) -> None:
    token = codec.encode(ACCOUNT)
    payload, rest = token.split(".", 1)
    forged_payload = base64.urlsafe_b64encode(
        f'{{"a":"{uuid.uuid4()}","n":"000000000000"}}'.encode()
    ).decode().rstrip("=")
    assert codec.decode(f"{forged_payload}.{rest}") is None
    assert codec.decode(f"{payload}x.{rest}") is None


def test_every_single_character_change_is_rejected(codec: SessionCodec) -> None:
    token = codec.encode(ACCOUNT)
    last = len(token) - 1
    for i, ch in enumerate(token):
        if ch == ".":
            continue
        for replacement in "AB_":
            if replacement == ch:
                continue
            tampered = token[:i] + replacement + token[i + 1:]
            if i == last:
                # Unused low bits of the final base64 character of the signature may
                # change without changing the signature bytes.
                assert codec.decode(tampered) in (None, ACCOUNT)
            else:
                assert codec.decode(tampered) is None, (i, replacement)
    payload, stamp, sig = token.split(".")
    assert codec.decode(f"{payload}.{stamp}.{sig[::-1]}") is None
    assert codec.decode(f"{payload}.{stamp}.") is None
    assert codec.decode(f"{payload}.{stamp}") is None
    assert codec.decode(f"{payload}.{sig}") is None


def test_token_signed_with_another_key_is_rejected(codec: SessionCodec) -> None:
    other = SessionCodec(OTHER_KEY, max_age=3600, secure=False)
    assert other.decode(other.encode(ACCOUNT)) == ACCOUNT
    assert codec.decode(other.encode(ACCOUNT)) is None
    assert other.decode(codec.encode(ACCOUNT)) is None


def test_token_with_another_salt_is_rejected(codec: SessionCodec) -> None:
    foreign = URLSafeTimedSerializer(KEY, salt="some.other.purpose").dumps(
        {"a": str(ACCOUNT), "n": "x"}
    )
    assert codec.decode(foreign) is None


@pytest.mark.parametrize(
    "payload",
    [{"n": "x"}, {"a": "not-a-uuid"}, ["a"], "a", 5, None, {"a": None}],
    ids=["no-account", "bad-uuid", "list", "string", "int", "null", "null-account"],
)
def test_signed_but_malformed_payloads_are_rejected(codec: SessionCodec, payload: Any) -> None:
    token = URLSafeTimedSerializer(KEY, salt="onsale.session.v1").dumps(payload)
    assert codec.decode(token) is None


@pytest.mark.parametrize("token", ["", ".", "..", "garbage", "a.b.c", "é.é.é", "x" * 5000])
def test_garbage_is_rejected(codec: SessionCodec, token: str) -> None:
    assert codec.decode(token) is None


def test_token_valid_up_to_max_age(codec: SessionCodec, clock: list[float]) -> None:
    token = codec.encode(ACCOUNT)
    clock[0] = T0 + 3600
    assert codec.decode(token) == ACCOUNT


def test_expired_token_is_rejected(codec: SessionCodec, clock: list[float]) -> None:
    token = codec.encode(ACCOUNT)
    assert codec.decode(token) == ACCOUNT
    clock[0] = T0 + 3601
    assert codec.decode(token) is None
    clock[0] = T0 + 30 * 86400
    assert codec.decode(token) is None


def test_short_max_age(clock: list[float]) -> None:
    codec = SessionCodec(KEY, max_age=1, secure=False)
    token = codec.encode(ACCOUNT)
    clock[0] = T0 + 1
    assert codec.decode(token) == ACCOUNT
    clock[0] = T0 + 2
    assert codec.decode(token) is None


def test_token_from_the_future_is_rejected(codec: SessionCodec, clock: list[float]) -> None:
    clock[0] = T0 + 600
    token = codec.encode(ACCOUNT)
    clock[0] = T0
    assert codec.decode(token) is None


def test_max_age_is_per_codec(clock: list[float]) -> None:
    long_lived = SessionCodec(KEY, max_age=86400, secure=False)
    short_lived = SessionCodec(KEY, max_age=60, secure=False)
    token = long_lived.encode(ACCOUNT)
    clock[0] = T0 + 120
    assert long_lived.decode(token) == ACCOUNT
    assert short_lived.decode(token) is None


# --- cookies -------------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [False, True])
def test_set_cookie_attributes(secure: bool) -> None:
    codec = SessionCodec(KEY, max_age=43200, secure=secure)
    response = Response()
    codec.set_cookie(response, ACCOUNT)
    headers = set_cookie_headers(response)
    assert len(headers) == 1
    name, value, attrs = attributes(headers[0])
    assert name == COOKIE == "onsale_session"
    assert codec.decode(value) == ACCOUNT
    assert "httponly" in attrs
    assert attrs["samesite"].lower() == "lax"
    assert attrs["path"] == "/"
    assert attrs["max-age"] == "43200"
    assert ("secure" in attrs) is secure


def test_set_cookie_parses_as_a_cookie(codec: SessionCodec) -> None:
    response = Response()
    codec.set_cookie(response, ACCOUNT)
    jar: SimpleCookie = SimpleCookie()
    jar.load(set_cookie_headers(response)[0])
    morsel = jar[COOKIE]
    assert codec.decode(morsel.value) == ACCOUNT
    assert morsel["httponly"] is True
    assert morsel["samesite"].lower() == "lax"


@pytest.mark.parametrize("secure", [False, True])
def test_clear_cookie(secure: bool) -> None:
    codec = SessionCodec(KEY, max_age=3600, secure=secure)
    response = Response()
    codec.clear_cookie(response)
    headers = set_cookie_headers(response)
    assert len(headers) == 1
    name, value, attrs = attributes(headers[0])
    assert name == COOKIE
    assert value in ("", '""')
    assert attrs["max-age"] == "0"
    assert attrs["path"] == "/"
    assert "httponly" in attrs
    assert attrs["samesite"].lower() == "lax"
    assert ("secure" in attrs) is secure


# --- current_account / require_admin -------------------------------------------------------


def make_request(codec: SessionCodec, headers: dict[str, str] | None = None,
                 admin_token: str = "admin-token-0123456789") -> Request:
    app = SimpleNamespace(state=SimpleNamespace(
        sessions=codec, settings=SimpleNamespace(admin_token=admin_token),
    ))
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "app": app})


def test_current_account_from_cookie(codec: SessionCodec) -> None:
    request = make_request(codec, {"Cookie": f"{COOKIE}={codec.encode(ACCOUNT)}"})
    assert current_account(request) == ACCOUNT


@pytest.mark.parametrize(
    "cookie",
    [None, f"{COOKIE}=", f"{COOKIE}=garbage", "other_cookie=value"],
    ids=["none", "empty", "garbage", "other-cookie"],
)
def test_current_account_requires_a_session(codec: SessionCodec, cookie: str | None) -> None:
    request = make_request(codec, {"Cookie": cookie} if cookie else None)
    with pytest.raises(Problem) as info:
        current_account(request)
    assert (info.value.status, info.value.code) == (401, "authentication_required")


def test_current_account_rejects_a_foreign_cookie(codec: SessionCodec) -> None:
    foreign = SessionCodec(OTHER_KEY, max_age=3600, secure=False).encode(ACCOUNT)
    request = make_request(codec, {"Cookie": f"{COOKIE}={foreign}"})
    with pytest.raises(Problem) as info:
        current_account(request)
    assert info.value.code == "authentication_required"


def test_require_admin_accepts_the_token(codec: SessionCodec) -> None:
    for scheme in ("Bearer", "bearer", "BEARER"):
        request = make_request(codec, {"Authorization": f"{scheme} admin-token-0123456789"})
        require_admin(request)  # does not raise


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Bearer wrong-token-000000000",
     "Basic admin-token-0123456789", "admin-token-0123456789",
     "Bearer admin-token-012345678", "Bearer admin-token-0123456789x"],
)
def test_require_admin_rejects(codec: SessionCodec, header: str | None) -> None:
    request = make_request(codec, {"Authorization": header} if header is not None else None)
    with pytest.raises(Problem) as info:
        require_admin(request)
    assert (info.value.status, info.value.code) == (401, "admin_required")
