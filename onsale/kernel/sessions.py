"""Server-side, revocable sessions behind a signed cookie (docs/security.md#sessions).

The cookie is an itsdangerous-signed ``{"a": account, "s": session id}``; it
is valid only while its record exists in the session store
(``kernel.session_store``, Valkey/Redis). Signing out deletes the record, so
every copy of the cookie stops working; signing in always makes a new session
id. Each process checks records through ``kernel.session_cache`` (a record seen
less than a second ago is trusted, one store read per session for a burst of
requests): no database round trip, at most one Redis read per session per
second. Without a store (REDIS_URL unset) or when it does not answer, a
request that presents a cookie gets ``503 session_unavailable``: nobody is
treated as signed in on a guess.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import HTTPConnection
from starlette.responses import Response

from onsale.kernel.cookies import CookiePolicy, settings_cookie_policy
from onsale.kernel.problems import Problem
from onsale.kernel.session_cache import SessionCache, Verdict
from onsale.kernel.session_store import SESSIONS_DOWN, Store
from onsale.kernel.signed import Memo, Unsigner, fresh

if TYPE_CHECKING:
    from onsale.kernel.config import Settings

COOKIE = "onsale_session"
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
T = TypeVar("T")


# ---- the signed cookie value (pure) ----------------------------------------


class SessionRef(NamedTuple):
    account: uuid.UUID
    session_id: str


def new_session_id() -> str:
    return secrets.token_urlsafe(18)  # 144 random bits


class SessionCodec:
    """Signs and checks the cookie value; says nothing about revocation."""

    def __init__(self, secret_key: str, max_age: int, *, memo_entries: int = 32_768) -> None:
        self._s = URLSafeTimedSerializer(secret_key, salt="onsale.session.v2")
        self._check = Unsigner(self._s)  # the same check in one pass (kernel.signed)
        # A shopper sends the same cookie with every request: checked once, then
        # looked up (about 0.5 KiB an entry); the age is judged on every use.
        self._memo = Memo(memo_entries)
        self.max_age = max_age

    def encode(self, ref: SessionRef) -> str:
        return self._s.dumps({"a": str(ref.account), "s": ref.session_id})

    def decode(self, token: str) -> SessionRef | None:
        known = self.checked(token)
        return known[0] if known is not None and self.current(known[1]) else None

    def checked(self, token: str) -> tuple[SessionRef, int] | None:
        """The cookie's session and when it was signed, its signature checked (once:
        then looked up); its age is the caller's to judge, on every use (``current``)."""
        try:
            known: tuple[SessionRef, int] | None = self._memo.get(token)
            if known is None:
                data, signed_at = self._check.loads_stamped(token)
                session_id = data["s"]
                if (not isinstance(session_id, str) or signed_at is None
                        or not _SESSION_ID.fullmatch(session_id)):
                    return None
                known = (SessionRef(uuid.UUID(data["a"]), session_id), signed_at)
                self._memo.put(token, known)
            return known
        except (BadSignature, KeyError, TypeError, ValueError, AttributeError):
            return None

    def current(self, signed_at: int) -> bool:
        """A session signed at ``signed_at`` is still within ``max_age``, now."""
        return fresh(signed_at, self.max_age, time.time())


# ---- sessions: codec + store + cache ---------------------------------------


class Sessions:
    """The process's sessions (``Shared.sessions``). ``store`` is attached in the lifespan
    (it needs the Redis connection); until then, or without REDIS_URL, every
    operation that needs a record answers 503 ``session_unavailable``."""

    def __init__(self, codec: SessionCodec, policy: CookiePolicy,
                 store: Store | None = None, *, timeout: float = 0.5,
                 cache_seconds: float = 1.0, max_entries: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.codec = codec
        self.policy = policy
        self.store = store
        self.timeout = timeout
        self.cache = SessionCache(cache_seconds, max_entries)
        self._clock = clock
        self._inflight: dict[SessionRef, asyncio.Future[bool]] = {}

    @property
    def cookie_name(self) -> str:
        """``onsale_session``, or ``__Host-onsale_session`` when Secure."""
        return self.policy.name(COOKIE)

    @property
    def max_age(self) -> int:
        return self.codec.max_age

    def attach(self, store: Store) -> None:
        self.store = store

    def token(self, connection: HTTPConnection) -> str | None:
        return connection.cookies.get(self.cookie_name) or None

    async def _call(self, make: Callable[[Store], Awaitable[T]]) -> T:
        if self.store is None:
            raise Problem(503, "session_unavailable",
                          detail="The session store is not configured (REDIS_URL).")
        try:
            async with asyncio.timeout(self.timeout):
                return await make(self.store)
        except Problem:
            raise
        except Exception as exc:  # down, slow or refusing: never guess
            raise Problem(503, "session_unavailable", detail=SESSIONS_DOWN) from exc

    async def create(self, account: uuid.UUID, *, replacing: str | None = None) -> str:
        """A new session (a new random id, always) and its cookie value.
        ``replacing``: the cookie this browser had, revoked in the same trip."""
        ref = SessionRef(account, new_session_id())
        old = self.codec.decode(replacing) if replacing else None
        await self._call(lambda s: s.create(
            ref.account, ref.session_id, self.max_age,
            replaces=None if old is None else (old.account, old.session_id)))
        if old is not None:
            self.cache.revoked(old, self._clock())
        return self.codec.encode(ref)

    async def account(self, token: str | None) -> uuid.UUID | None:
        """The account of a live session, None for no, a forged, expired or
        revoked one; 503 ``session_unavailable`` when the store cannot tell."""
        ref = self.codec.decode(token) if token else None
        if ref is None:
            return None
        return ref.account if await self._live(ref) else None

    async def live_all(self, tokens: list[str | None]) -> list[bool]:
        """``account(token) is not None`` for many tokens, the store read in one
        pipeline (the seat map's re-check of its open sockets); 503
        ``session_unavailable`` when the store cannot tell."""
        refs = [self.codec.decode(t) if t else None for t in tokens]
        known = [r for r in refs if r is not None]
        sent = self._clock()
        found = await self._call(lambda s: s.exist([(r.account, r.session_id) for r in known]))
        for ref, exists in zip(known, found, strict=True):
            self.cache.learnt(ref, exists, sent)
        answers = iter(found)
        return [False if r is None else next(answers) for r in refs]

    async def _live(self, ref: SessionRef) -> bool:
        verdict = self.cache.verdict(ref, self._clock())
        if verdict is not Verdict.READ:
            return verdict is Verdict.VALID
        flight = self._inflight.get(ref)
        if flight is None:  # one store read for a burst of requests on one session
            flight = asyncio.ensure_future(self._read(ref))
            self._inflight[ref] = flight
            flight.add_done_callback(self._landed(ref))
        return await asyncio.shield(flight)

    def _landed(self, ref: SessionRef) -> Callable[[asyncio.Future[bool]], None]:
        def done(flight: asyncio.Future[bool]) -> None:
            self._inflight.pop(ref, None)
            if not flight.cancelled():
                flight.exception()  # retrieved even if every waiter went away
        return done

    async def _read(self, ref: SessionRef) -> bool:
        sent = self._clock()
        exists = await self._call(lambda s: s.exists(ref.account, ref.session_id))
        self.cache.learnt(ref, exists, sent)
        return exists

    async def revoke(self, token: str | None) -> None:
        """Sign this session out everywhere its cookie was copied to."""
        ref = self.codec.decode(token) if token else None
        if ref is None:
            return
        await self._call(lambda s: s.revoke(ref.account, ref.session_id))
        self.cache.revoked(ref, self._clock())

    async def revoke_all(self, account: uuid.UUID) -> int:
        """Sign the account out of every session; how many there were."""
        ids = await self._call(lambda s: s.revoke_all(account))
        now = self._clock()
        for session_id in ids:
            self.cache.revoked(SessionRef(account, session_id), now)
        return len(ids)

    def set_cookie(self, response: Response, token: str) -> None:
        response.set_cookie(
            self.cookie_name, token, max_age=self.max_age, path="/",
            httponly=True, samesite="lax", secure=self.policy.secure,
        )

    def clear_cookie(self, response: Response) -> None:
        response.delete_cookie(self.cookie_name, path="/", httponly=True, samesite="lax",
                               secure=self.policy.secure)


def build_sessions(settings: Settings) -> Sessions:
    """The app's sessions from settings (core, edge and seat-map apps alike);
    the store is attached once the app has its Redis connection."""
    return Sessions(SessionCodec(settings.secret_key, settings.session_max_age),
                    settings_cookie_policy(settings), timeout=settings.session_store_timeout)
