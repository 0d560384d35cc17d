"""Password hashing: argon2id (argon2-cffi) with OWASP's parameters, and
verification of the scrypt hashes written before it, which are replaced at
the account's next successful sign-in (``check_password`` says so).

Both formats are self-describing strings: ``$argon2id$v=19$m=19456,t=2,p=1$…``
and ``scrypt$N$r$p$salt$digest``. The functions here are CPU-bound and
blocking; ``core.password_pool`` runs them off the event loop.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from functools import cache
from typing import NamedTuple

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

# OWASP Password Storage Cheat Sheet: argon2id, m=19 MiB, t=2, p=1.
ARGON2_MEMORY_KIB = 19456
ARGON2_TIME_COST = 2
ARGON2_PARALLELISM = 1

_N, _R, _P = 2**14, 8, 1
_PREFIX = "scrypt"
_DKLEN = 32


@cache
def hasher() -> PasswordHasher:
    return PasswordHasher(time_cost=ARGON2_TIME_COST, memory_cost=ARGON2_MEMORY_KIB,
                          parallelism=ARGON2_PARALLELISM, hash_len=32, salt_len=16,
                          type=Type.ID)


def hash_password(password: str) -> str:
    """A new argon2id hash with the current parameters."""
    return hasher().hash(password)


# ---- scrypt (the format before argon2id; verified, never written) ----------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def scrypt_hash(password: str, *, n: int = _N) -> str:
    """A hash in the old scrypt format (tests and migrations make them)."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=_R, p=_P, dklen=_DKLEN)
    return f"{_PREFIX}${n}${_R}${_P}${_b64(salt)}${_b64(digest)}"


def _verify_scrypt(password: str, stored: str) -> bool:
    try:
        prefix, n, r, p, salt, digest = stored.split("$")
        if prefix != _PREFIX:
            return False
        expected = _unb64(digest)
        if len(expected) != _DKLEN:
            return False
        actual = hashlib.scrypt(
            password.encode(), salt=_unb64(salt), n=int(n), r=int(r), p=int(p),
            dklen=len(expected), maxmem=2**26,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# ---- verification ----------------------------------------------------------


def is_argon2(stored: str) -> bool:
    return stored.startswith("$argon2")


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (either format); False for a
    malformed or unknown format, never an exception."""
    if is_argon2(stored):
        try:
            return hasher().verify(stored, password)
        except (VerificationError, InvalidHashError, ValueError):
            return False
    return _verify_scrypt(password, stored)


def needs_rehash(stored: str) -> bool:
    """A scrypt hash, or an argon2 hash with other parameters than today's."""
    if not is_argon2(stored):
        return True
    try:
        return hasher().check_needs_rehash(stored)
    except (InvalidHashError, ValueError):
        return True


class Checked(NamedTuple):
    ok: bool
    new_hash: str | None  # the replacement to store, when ok and the hash is outdated


def check_password(password: str, stored: str) -> Checked:
    """Verify, and on success make the replacement hash if one is due (one job
    for the hashing pool instead of two)."""
    if not verify_password(password, stored):
        return Checked(False, None)
    return Checked(True, hash_password(password) if needs_rehash(stored) else None)


@cache
def dummy_hash() -> str:
    """A hash to verify against when the email is unknown, so that sign-in
    takes the same time whether or not the account exists (made on first use)."""
    return hash_password("not-a-real-password")
