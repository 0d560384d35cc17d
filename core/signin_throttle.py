"""Sign-in and sign-up throttling shared by every core process through
Valkey/Redis (docs/security.md#sign-in-and-sign-up-throttling).

Three limits, checked in one round trip (a pipeline of two scripts, each on
one key, so it runs unchanged on Valkey Cluster):

- per client address: at most ``limit_ip`` attempts (sign-ins and sign-ups)
  per window; IPv6 addresses count per /64, the block one subscriber gets;
- per email: at most ``limit_email`` attempts per window;
- per email, back-off: every sign-in attempt counts as a failure until it
  succeeds (so parallel guesses cannot outrun the count), and from the
  ``lockout_after``-th failure in a row the email is locked for
  ``lockout_seconds``, doubling with each further failure up to
  ``lockout_max_seconds`` (``lockout_seconds_after``). Attempts refused while
  locked do not count. A successful sign-in clears the failures. A streak is
  forgotten after ``memory_seconds`` without attempts.

Refusals are ``429 rate_limited`` with ``Retry-After``; a store that does not
answer is ``503 session_unavailable`` (fail closed: no attempt is let through
unthrottled). Emails are keyed by a hash, never stored in clear.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onsale.kernel.addresses import address_bucket
from onsale.kernel.problems import Problem
from onsale.kernel.session_store import SESSIONS_DOWN, run_scripts
from onsale.kernel.valkey import RedisClient

if TYPE_CHECKING:
    from onsale.kernel.config import Settings

# KEYS: the address's counter. ARGV: now (ms), window (ms), limit.
# Returns 0 (allowed) or the milliseconds until the window ends.
IP_LUA = """
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
if n > tonumber(ARGV[3]) then return ttl end
return 0
"""

# KEYS: the email's hash (u: locked until, f: failures in a row, w: window
# start, n: attempts in the window; times in ms). ARGV: now, window, limit,
# count a failure (1: sign-in, 0: sign-up), lockout after, lockout (ms),
# lockout max (ms), memory (ms). Returns {0, failures} (allowed) or
# {1, ms left} (locked) or {2, ms left} (too many attempts in the window).
EMAIL_LUA = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'u', 'f', 'w', 'n')
local locked = tonumber(h[1]) or 0
if locked > now then return {1, locked - now} end
local start = tonumber(h[3]) or 0
local n = tonumber(h[4]) or 0
if now - start >= window then start = now; n = 0 end
if n >= tonumber(ARGV[3]) then return {2, start + window - now} end
local f = tonumber(h[2]) or 0
local keep = window
if ARGV[4] == '1' then
  f = f + 1
  local after = tonumber(ARGV[5])
  if f >= after then
    local lock = math.min(tonumber(ARGV[7]), tonumber(ARGV[6]) * 2 ^ math.min(f - after, 40))
    redis.call('HSET', KEYS[1], 'u', now + lock)
    keep = math.max(keep, lock)
  end
  redis.call('HSET', KEYS[1], 'f', f)
  keep = math.max(keep, tonumber(ARGV[8]))
end
redis.call('HSET', KEYS[1], 'w', start, 'n', n + 1)
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return {0, f}
"""


# ---- pure ------------------------------------------------------------------


def lockout_seconds_after(failures: int, after: int, base: int, cap: int) -> int:
    """How long an email is locked after ``failures`` failed sign-ins in a row
    (the schedule EMAIL_LUA applies): 0 before ``after``, then ``base``
    doubling with every further failure, never more than ``cap``."""
    if failures < after:
        return 0
    return int(min(cap, base * 2 ** min(failures - after, 40)))


def email_digest(email: str) -> str:
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]


def retry_after_seconds(ms: int) -> int:
    return max(1, math.ceil(ms / 1000))


@dataclass(frozen=True)
class Limits:
    window_seconds: int = 60
    limit_ip: int = 60
    limit_email: int = 10
    lockout_after: int = 5
    lockout_seconds: int = 30
    lockout_max_seconds: int = 900

    @property
    def memory_seconds(self) -> int:
        """A failure streak is forgotten after this long without attempts."""
        return max(3600, 2 * self.lockout_max_seconds)


def signin_limits(settings: Settings) -> Limits:
    return Limits(window_seconds=settings.signin_window_seconds,
                  limit_ip=settings.signin_limit_ip, limit_email=settings.signin_limit_email,
                  lockout_after=settings.signin_lockout_after,
                  lockout_seconds=settings.signin_lockout_seconds,
                  lockout_max_seconds=settings.signin_lockout_max_seconds)


def verdict(ip_ms: int, email: list[int]) -> int | None:
    """None (go on) or the Retry-After seconds, from the two scripts' answers."""
    waits = [ms for ms in (ip_ms, email[1] if email[0] != 0 else 0) if ms > 0]
    if waits:
        return retry_after_seconds(max(waits))
    if email[0] != 0:  # refused with no time left: the window just ended
        return 1
    return None


# ---- the store -------------------------------------------------------------


class SigninThrottle:
    """``CoreState.throttle``. Without Redis (REDIS_URL unset, or no API in this
    process) every sign-in is refused with 503 ``session_unavailable``."""

    def __init__(self, limits: Limits, redis: RedisClient | None = None, *, timeout: float = 0.5,
                 clock: Callable[[], float] = time.time) -> None:
        self.limits = limits
        self.timeout = timeout
        self.clock = clock  # wall clock (s); tests move it to step through lockouts
        self.redis = redis
        if redis is not None:
            self._ip = redis.register_script(IP_LUA)
            self._email = redis.register_script(EMAIL_LUA)

    @staticmethod
    def ip_key(host: str) -> str:
        return f"onsale:signin:ip:{address_bucket(host)}"

    @staticmethod
    def email_key(email: str) -> str:
        return f"onsale:signin:email:{email_digest(email)}"

    async def _store(self, call: Callable[[RedisClient], Any]) -> Any:
        if self.redis is None:
            raise Problem(503, "session_unavailable",
                          detail="The session store is not configured (REDIS_URL).")
        try:
            async with asyncio.timeout(self.timeout):
                return await call(self.redis)
        except Exception as exc:
            raise Problem(503, "session_unavailable", detail=SESSIONS_DOWN) from exc

    async def attempt(self, host: str, email: str, *, sign_in: bool) -> None:
        """Count an attempt, or refuse it (429 ``rate_limited``)."""
        lim = self.limits
        now = int(self.clock() * 1000)
        window = lim.window_seconds * 1000

        def call(redis: RedisClient) -> Any:
            return run_scripts(redis, [
                (self._ip, [self.ip_key(host)], [now, window, lim.limit_ip]),
                (self._email, [self.email_key(email)], [
                    now, window, lim.limit_email, 1 if sign_in else 0, lim.lockout_after,
                    lim.lockout_seconds * 1000, lim.lockout_max_seconds * 1000,
                    lim.memory_seconds * 1000]),
            ])

        ip_ms, by_email = await self._store(call)
        wait = verdict(int(ip_ms), [int(x) for x in by_email])
        if wait is not None:
            raise Problem(429, "rate_limited", retry_after=wait)

    async def succeeded(self, email: str) -> None:
        """A successful sign-in: the email's failure streak (and lock) ends."""
        await self._store(lambda redis: redis.hdel(self.email_key(email), "f", "u"))
