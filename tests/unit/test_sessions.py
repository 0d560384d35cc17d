"""kernel.sessions: the signed cookie value, Sessions (records, cache, fail closed),
current_account, signed_account and require_admin."""

from __future__ import annotations

import asyncio
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

from onsale.kernel.admin_throttle import AdminThrottle
from onsale.kernel.auth import account_of, current_account, require_admin, signed_account
from onsale.kernel.cookies import cookie_policy
from onsale.kernel.problems import Problem
from onsale.kernel.session_store import SESSIONS_DOWN
from onsale.kernel.sessions import COOKIE, SessionCodec, SessionRef, Sessions, new_session_id
from tests.sessions_support import MemorySessionStore

KEY = "unit-test-secret-key-0123456789"
OTHER_KEY = "another-secret-key-9876543210zz"
ACCOUNT = uuid.UUID("0190f5b4-7c1e-7a2b-9c3d-4e5f60718293")
REF = SessionRef(ACCOUNT, "sess-0123456789abcdefghij")
T0 = 1_900_000_000.0


@pytest.fixture
def codec() -> SessionCodec:
    return SessionCodec(KEY, max_age=3600)


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
    assert codec.decode(codec.encode(REF)) == REF


def test_round_trip_many_accounts(codec: SessionCodec) -> None:
    for _ in range(20):
        ref = SessionRef(uuid.uuid4(), new_session_id())
        assert codec.decode(codec.encode(ref)) == ref


def test_tokens_are_cookie_safe(codec: SessionCodec) -> None:
    token = codec.encode(REF)
    assert token.isascii()
    assert not set(token) & set(' ;,"\\=')


def test_new_session_ids_are_random_and_cookie_safe() -> None:
    ids = {new_session_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 24 and i.isascii() and not set(i) & set(' ;,"\\=.') for i in ids)


def test_tampered_payload_is_rejected(codec: SessionCodec) -> None:
    token = codec.encode(REF)
    payload, rest = token.split(".", 1)
    forged_payload = base64.urlsafe_b64encode(
        f'{{"a":"{uuid.uuid4()}","s":"{REF.session_id}"}}'.encode()
    ).decode().rstrip("=")
    assert codec.decode(f"{forged_payload}.{rest}") is None
    assert codec.decode(f"{payload}x.{rest}") is None


def test_every_single_character_change_is_rejected(codec: SessionCodec) -> None:
    token = codec.encode(REF)
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
                assert codec.decode(tampered) in (None, REF)
            else:
                assert codec.decode(tampered) is None, (i, replacement)
    payload, stamp, sig = token.split(".")
    assert codec.decode(f"{payload}.{stamp}.{sig[::-1]}") is None
    assert codec.decode(f"{payload}.{stamp}.") is None
    assert codec.decode(f"{payload}.{stamp}") is None
    assert codec.decode(f"{payload}.{sig}") is None


def test_token_signed_with_another_key_is_rejected(codec: SessionCodec) -> None:
    other = SessionCodec(OTHER_KEY, max_age=3600)
    assert other.decode(other.encode(REF)) == REF
    assert codec.decode(other.encode(REF)) is None
    assert other.decode(codec.encode(REF)) is None


def test_token_with_another_salt_is_rejected(codec: SessionCodec) -> None:
    foreign = URLSafeTimedSerializer(KEY, salt="some.other.purpose").dumps(
        {"a": str(ACCOUNT), "s": REF.session_id}
    )
    assert codec.decode(foreign) is None


SID = REF.session_id


@pytest.mark.parametrize(
    "payload",
    [{"s": SID}, {"a": "not-a-uuid", "s": SID}, ["a"], "a", 5, None, {"a": None, "s": SID},
     {"a": str(ACCOUNT)}, {"a": str(ACCOUNT), "s": None}, {"a": str(ACCOUNT), "s": 5},
     {"a": str(ACCOUNT), "s": "short"}, {"a": str(ACCOUNT), "s": "x" * 65},
     {"a": str(ACCOUNT), "s": "has:colon-0123456789"}, {"a": str(ACCOUNT), "s": "é" * 20},
     {"a": str(ACCOUNT), "s": SID + "\n"}],
    ids=["no-account", "bad-uuid", "list", "string", "int", "null", "null-account",
         "no-session", "null-session", "int-session", "short-session", "long-session",
         "colon-session", "non-ascii-session", "newline-session"],
)
def test_signed_but_malformed_payloads_are_rejected(codec: SessionCodec, payload: Any) -> None:
    token = URLSafeTimedSerializer(KEY, salt="onsale.session.v2").dumps(payload)
    assert codec.decode(token) is None


def test_a_cookie_of_the_revocation_less_format_is_no_session(codec: SessionCodec) -> None:
    """Before records existed the cookie held only the account (salt v1): it
    could not be revoked, so it no longer signs anyone in."""
    old = URLSafeTimedSerializer(KEY, salt="onsale.session.v1").dumps(
        {"a": str(ACCOUNT), "n": "0123456789ab"})
    assert codec.decode(old) is None
    old_with_id = URLSafeTimedSerializer(KEY, salt="onsale.session.v1").dumps(
        {"a": str(ACCOUNT), "s": SID})
    assert codec.decode(old_with_id) is None


@pytest.mark.parametrize("token", ["", ".", "..", "garbage", "a.b.c", "é.é.é", "x" * 5000])
def test_garbage_is_rejected(codec: SessionCodec, token: str) -> None:
    assert codec.decode(token) is None


def test_token_valid_up_to_max_age(codec: SessionCodec, clock: list[float]) -> None:
    token = codec.encode(REF)
    clock[0] = T0 + 3600
    assert codec.decode(token) == REF


def test_expired_token_is_rejected(codec: SessionCodec, clock: list[float]) -> None:
    token = codec.encode(REF)
    assert codec.decode(token) == REF
    clock[0] = T0 + 3601
    assert codec.decode(token) is None
    clock[0] = T0 + 30 * 86400
    assert codec.decode(token) is None


def test_short_max_age(clock: list[float]) -> None:
    codec = SessionCodec(KEY, max_age=1)
    token = codec.encode(REF)
    clock[0] = T0 + 1
    assert codec.decode(token) == REF
    clock[0] = T0 + 2
    assert codec.decode(token) is None


def test_token_from_the_future_is_rejected(codec: SessionCodec, clock: list[float]) -> None:
    clock[0] = T0 + 600
    token = codec.encode(REF)
    clock[0] = T0
    assert codec.decode(token) is None


def test_max_age_is_per_codec(clock: list[float]) -> None:
    long_lived = SessionCodec(KEY, max_age=86400)
    short_lived = SessionCodec(KEY, max_age=60)
    token = long_lived.encode(REF)
    clock[0] = T0 + 120
    assert long_lived.decode(token) == REF
    assert short_lived.decode(token) is None


# --- Sessions: records, the cache, failing closed -----------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> MemorySessionStore:
    return MemorySessionStore()


@pytest.fixture
def tick() -> Clock:
    return Clock()


@pytest.fixture
def sessions(store: MemorySessionStore, tick: Clock) -> Sessions:
    return Sessions(SessionCodec(KEY, 3600), cookie_policy("http://127.0.0.1:8000"), store,
                    clock=tick)


async def test_a_created_session_signs_in_until_revoked(sessions: Sessions) -> None:
    token = await sessions.create(ACCOUNT)
    assert await sessions.account(token) == ACCOUNT
    await sessions.revoke(token)
    assert await sessions.account(token) is None


async def test_every_sign_in_makes_a_new_session_id(sessions: Sessions,
                                                    store: MemorySessionStore) -> None:
    first = await sessions.create(ACCOUNT)
    second = await sessions.create(ACCOUNT, replacing=first)
    a, b = sessions.codec.decode(first), sessions.codec.decode(second)
    assert a is not None and b is not None and a.session_id != b.session_id
    assert store.records[ACCOUNT] == {b.session_id}  # the browser's old session is gone
    assert await sessions.account(first) is None
    assert await sessions.account(second) == ACCOUNT


async def test_a_revocation_elsewhere_is_seen_within_the_cache_time(
        sessions: Sessions, store: MemorySessionStore, tick: Clock) -> None:
    token = await sessions.create(ACCOUNT)
    assert await sessions.account(token) == ACCOUNT
    assert store.reads == 1
    store.records[ACCOUNT].clear()  # another process signed it out
    tick.now += 0.5
    assert await sessions.account(token) == ACCOUNT  # trusted for under a second
    assert store.reads == 1
    tick.now += 0.5
    assert await sessions.account(token) is None  # a second after the read: asked again
    assert store.reads == 2
    tick.now += 3600
    assert await sessions.account(token) is None  # gone stays gone without asking
    assert store.reads == 2


async def test_one_read_for_a_burst_of_requests(sessions: Sessions,
                                                store: MemorySessionStore) -> None:
    token = await sessions.create(ACCOUNT)
    found = await asyncio.gather(*(sessions.account(token) for _ in range(50)))
    assert found == [ACCOUNT] * 50
    assert store.reads == 1


async def test_revoke_all_ends_every_session_of_the_account(
        sessions: Sessions, store: MemorySessionStore) -> None:
    tokens = [await sessions.create(ACCOUNT) for _ in range(3)]
    other = await sessions.create(uuid.uuid4())
    for token in tokens:
        assert await sessions.account(token) == ACCOUNT  # cached as valid
    assert await sessions.revoke_all(ACCOUNT) == 3
    for token in tokens:
        assert await sessions.account(token) is None  # at once in this process
    assert await sessions.account(other) is not None


@pytest.mark.parametrize("token", [None, "", "garbage", "a.b.c"])
async def test_no_or_a_forged_cookie_is_nobody_without_asking(
        sessions: Sessions, store: MemorySessionStore, token: str | None) -> None:
    store.down = True
    assert await sessions.account(token) is None
    await sessions.revoke(token)  # nothing to revoke: no error either
    assert store.reads == 0


async def test_a_store_outage_is_503_never_a_guess(sessions: Sessions,
                                                   store: MemorySessionStore,
                                                   tick: Clock) -> None:
    token = await sessions.create(ACCOUNT)
    store.down = True
    for call in (lambda: sessions.account(token), lambda: sessions.create(ACCOUNT),
                 lambda: sessions.revoke(token), lambda: sessions.revoke_all(ACCOUNT)):
        with pytest.raises(Problem) as info:
            await call()
        assert (info.value.status, info.value.code) == (503, "session_unavailable")
    store.down = False
    assert await sessions.account(token) == ACCOUNT  # the failure was not cached


async def test_a_cached_answer_outlives_an_outage_by_at_most_the_cache_time(
        sessions: Sessions, store: MemorySessionStore, tick: Clock) -> None:
    token = await sessions.create(ACCOUNT)
    assert await sessions.account(token) == ACCOUNT
    store.down = True
    tick.now += 0.9
    assert await sessions.account(token) == ACCOUNT
    tick.now += 0.1
    with pytest.raises(Problem):
        await sessions.account(token)


async def test_without_a_store_sessions_are_unavailable() -> None:
    sessions = Sessions(SessionCodec(KEY, 3600), cookie_policy("http://127.0.0.1:8000"))
    token = SessionCodec(KEY, 3600).encode(REF)
    with pytest.raises(Problem) as info:
        await sessions.account(token)
    assert (info.value.status, info.value.code) == (503, "session_unavailable")
    with pytest.raises(Problem):
        await sessions.create(ACCOUNT)
    assert await sessions.account(None) is None


class SlowStore(MemorySessionStore):
    async def exists(self, account: uuid.UUID, session_id: str) -> bool:
        await asyncio.sleep(10)
        return True


async def test_a_store_slower_than_the_timeout_is_503() -> None:
    store = SlowStore()
    sessions = Sessions(SessionCodec(KEY, 3600), cookie_policy("http://127.0.0.1:8000"),
                        store, timeout=0.01)
    with pytest.raises(Problem) as info:
        await sessions.account(SessionCodec(KEY, 3600).encode(REF))
    assert (info.value.status, info.value.code, info.value.detail) == (
        503, "session_unavailable", SESSIONS_DOWN)


# --- cookies -------------------------------------------------------------------------------


@pytest.mark.parametrize(("public_url", "name", "secure"), [
    ("http://127.0.0.1:8000", "onsale_session", False),
    ("http://localhost:8000", "onsale_session", False),
    ("https://tickets.example", "__Host-onsale_session", True),
    ("http://tickets.example", "__Host-onsale_session", True),
])
def test_set_cookie_attributes(public_url: str, name: str, secure: bool) -> None:
    sessions = Sessions(SessionCodec(KEY, 43200), cookie_policy(public_url))
    assert sessions.cookie_name == name
    response = Response()
    sessions.set_cookie(response, sessions.codec.encode(REF))
    headers = set_cookie_headers(response)
    assert len(headers) == 1
    got, value, attrs = attributes(headers[0])
    assert got == name
    assert sessions.codec.decode(value) == REF
    assert "httponly" in attrs
    assert attrs["samesite"].lower() == "lax"
    assert attrs["path"] == "/"
    assert "domain" not in attrs  # __Host- requires none
    assert attrs["max-age"] == "43200"
    assert ("secure" in attrs) is secure


def test_set_cookie_parses_as_a_cookie(sessions: Sessions) -> None:
    response = Response()
    sessions.set_cookie(response, sessions.codec.encode(REF))
    jar: SimpleCookie = SimpleCookie()
    jar.load(set_cookie_headers(response)[0])
    morsel = jar[COOKIE]
    assert sessions.codec.decode(morsel.value) == REF
    assert morsel["httponly"] is True
    assert morsel["samesite"].lower() == "lax"


@pytest.mark.parametrize("public_url", ["http://127.0.0.1:8000", "https://tickets.example"])
def test_clear_cookie(public_url: str) -> None:
    sessions = Sessions(SessionCodec(KEY, 3600), cookie_policy(public_url))
    response = Response()
    sessions.clear_cookie(response)
    headers = set_cookie_headers(response)
    assert len(headers) == 1
    name, value, attrs = attributes(headers[0])
    assert name == sessions.cookie_name
    assert value in ("", '""')
    assert attrs["max-age"] == "0"
    assert attrs["path"] == "/"
    assert "httponly" in attrs
    assert attrs["samesite"].lower() == "lax"
    assert ("secure" in attrs) is sessions.policy.secure


async def test_a_secure_site_reads_only_the_host_prefixed_cookie(store: MemorySessionStore) -> None:
    """Over https the plain name could have been planted by a sibling subdomain
    or a plain-http page: only ``__Host-onsale_session`` is read."""
    sessions = Sessions(SessionCodec(KEY, 3600), cookie_policy("https://tickets.example"), store)
    token = await sessions.create(ACCOUNT)
    plain = make_request(sessions, {"Cookie": f"{COOKIE}={token}"})
    prefixed = make_request(sessions, {"Cookie": f"__Host-{COOKIE}={token}"})
    assert await account_of(plain) is None
    assert await account_of(prefixed) == ACCOUNT


# --- current_account / signed_account / require_admin --------------------------------------


def make_request(sessions: Sessions, headers: dict[str, str] | None = None,
                 admin_token: str = "admin-token-0123456789") -> Request:
    app = SimpleNamespace(state=SimpleNamespace(shared=SimpleNamespace(
        sessions=sessions, settings=SimpleNamespace(admin_token=admin_token),
        admin_throttle=AdminThrottle(),
    )))
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "app": app})


async def test_current_account_from_cookie(sessions: Sessions) -> None:
    token = await sessions.create(ACCOUNT)
    request = make_request(sessions, {"Cookie": f"{COOKIE}={token}"})
    assert await current_account(request) == ACCOUNT


@pytest.mark.parametrize(
    "cookie",
    [None, f"{COOKIE}=", f"{COOKIE}=garbage", "other_cookie=value"],
    ids=["none", "empty", "garbage", "other-cookie"],
)
async def test_current_account_requires_a_session(sessions: Sessions, cookie: str | None) -> None:
    request = make_request(sessions, {"Cookie": cookie} if cookie else None)
    with pytest.raises(Problem) as info:
        await current_account(request)
    assert (info.value.status, info.value.code) == (401, "authentication_required")
    with pytest.raises(Problem) as info:
        signed_account(request)
    assert (info.value.status, info.value.code) == (401, "authentication_required")


async def test_current_account_rejects_a_foreign_cookie(sessions: Sessions,
                                                        store: MemorySessionStore) -> None:
    store.records[ACCOUNT] = {REF.session_id}  # even with a record of that id
    foreign = SessionCodec(OTHER_KEY, max_age=3600).encode(REF)
    request = make_request(sessions, {"Cookie": f"{COOKIE}={foreign}"})
    with pytest.raises(Problem) as info:
        await current_account(request)
    assert info.value.code == "authentication_required"


async def test_current_account_rejects_a_revoked_session(sessions: Sessions) -> None:
    token = await sessions.create(ACCOUNT)
    await sessions.revoke(token)
    request = make_request(sessions, {"Cookie": f"{COOKIE}={token}"})
    with pytest.raises(Problem) as info:
        await current_account(request)
    assert (info.value.status, info.value.code) == (401, "authentication_required")


async def test_signed_account_reads_only_the_signature(sessions: Sessions,
                                                       store: MemorySessionStore) -> None:
    """For the queue poll (no Redis round trip): a revoked session still names
    its account here, and the store is never asked."""
    token = await sessions.create(ACCOUNT)
    await sessions.revoke(token)
    store.down = True
    request = make_request(sessions, {"Cookie": f"{COOKIE}={token}"})
    assert signed_account(request) == ACCOUNT


def test_require_admin_accepts_the_token(sessions: Sessions) -> None:
    for scheme in ("Bearer", "bearer", "BEARER"):
        request = make_request(sessions, {"Authorization": f"{scheme} admin-token-0123456789"})
        require_admin(request)  # does not raise


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Bearer wrong-token-000000000",
     "Basic admin-token-0123456789", "admin-token-0123456789",
     "Bearer admin-token-012345678", "Bearer admin-token-0123456789x"],
)
def test_require_admin_rejects(sessions: Sessions, header: str | None) -> None:
    request = make_request(sessions, {"Authorization": header} if header is not None else None)
    with pytest.raises(Problem) as info:
        require_admin(request)
    assert (info.value.status, info.value.code) == (401, "admin_required")
