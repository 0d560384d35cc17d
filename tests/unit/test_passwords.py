"""core.passwords: argon2id hashes (OWASP parameters), the scrypt hashes written
before them (verified, then replaced), and the malformed strings neither is."""

from __future__ import annotations

import base64

import pytest
from argon2 import PasswordHasher, Type

from onsale.core.passwords import (
    check_password,
    dummy_hash,
    hash_password,
    needs_rehash,
    scrypt_hash,
    verify_password,
)

FAST = 2**10


@pytest.fixture(scope="module")
def stored() -> str:
    return scrypt_hash("correct horse battery staple", n=FAST)


@pytest.fixture(scope="module")
def argon() -> str:
    return hash_password("correct horse battery staple")


def parts(stored: str) -> list[str]:
    return stored.split("$")


def test_round_trip(stored: str) -> None:
    assert verify_password("correct horse battery staple", stored) is True


@pytest.mark.parametrize(
    "attempt",
    ["", "correct horse battery stapl", "correct horse battery staple ",
     "Correct horse battery staple", "correct horse battery staple\n"],
)
def test_wrong_password(stored: str, attempt: str) -> None:
    assert verify_password(attempt, stored) is False


@pytest.mark.parametrize("password", ["", "pässwörd-✓", "x" * 256, "a$b$c"])
def test_round_trip_unusual_passwords(password: str) -> None:
    stored = scrypt_hash(password, n=FAST)
    assert verify_password(password, stored) is True
    assert verify_password(password + "!", stored) is False


def test_format(stored: str) -> None:
    prefix, n, r, p, salt, digest = parts(stored)
    assert (prefix, n, r, p) == ("scrypt", str(FAST), "8", "1")
    assert "=" not in salt and "=" not in digest
    assert len(base64.b64decode(salt + "=" * (-len(salt) % 4))) == 16
    assert len(base64.b64decode(digest + "=" * (-len(digest) % 4))) == 32


def test_default_scrypt_cost_is_recorded() -> None:
    assert parts(scrypt_hash("pw"))[:4] == ["scrypt", str(2**14), "8", "1"]


def test_hashes_are_salted() -> None:
    a = scrypt_hash("same password", n=FAST)
    b = scrypt_hash("same password", n=FAST)
    assert a != b
    assert parts(a)[4] != parts(b)[4]
    assert parts(a)[5] != parts(b)[5]
    assert verify_password("same password", a) and verify_password("same password", b)


def test_cost_parameters_are_read_from_the_stored_string() -> None:
    stored = scrypt_hash("pw", n=2**11)
    assert parts(stored)[1] == "2048"
    assert verify_password("pw", stored) is True
    # The same salt and digest claimed at another cost no longer verify.
    assert verify_password("pw", stored.replace("$2048$", "$1024$", 1)) is False


def test_dummy_hash_rejects_everything_it_is_likely_to_see() -> None:
    assert verify_password("", dummy_hash()) is False
    assert verify_password("password", dummy_hash()) is False
    assert verify_password("not-a-real-password", dummy_hash()) is True  # it is a real hash


def test_dummy_hash_costs_what_a_real_hash_costs() -> None:
    """Unknown emails are checked against it: the same algorithm and parameters
    as every stored hash, so the answer takes as long."""
    assert dummy_hash().startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert needs_rehash(dummy_hash()) is False


def test_digest_swapped_between_hashes_fails() -> None:
    a = parts(scrypt_hash("pw", n=FAST))
    b = parts(scrypt_hash("pw", n=FAST))
    assert verify_password("pw", "$".join([*a[:5], b[5]])) is False


def _malformed(stored: str) -> list[str]:
    prefix, n, r, p, salt, digest = parts(stored)

    def j(*xs: str) -> str:
        return "$".join(xs)

    return [
        "",
        "plain-text-password",
        "scrypt",
        j(prefix, n, r, p, salt),
        stored + "$extra",
        j("bcrypt", n, r, p, salt, digest),
        "$2b$12$abcdefghijklmnopqrstuuJQ4J8mXhkK0nCj5rQGfI4pP3M9yYv1e",
        j(prefix, "abc", r, p, salt, digest),
        j(prefix, "", r, p, salt, digest),
        j(prefix, "1024.0", r, p, salt, digest),
        j(prefix, "1000", r, p, salt, digest),  # not a power of two
        j(prefix, "1", r, p, salt, digest),
        j(prefix, "0", r, p, salt, digest),
        j(prefix, "-1024", r, p, salt, digest),
        j(prefix, str(2**40), r, p, salt, digest),  # beyond maxmem
        j(prefix, "9" * 30, r, p, salt, digest),
        j(prefix, n, "0", p, salt, digest),
        j(prefix, n, "x", p, salt, digest),
        j(prefix, n, "9" * 30, p, salt, digest),
        j(prefix, n, r, "0", salt, digest),
        j(prefix, n, r, "9" * 30, salt, digest),
        j(prefix, n, r, p, "!!not base64!!", digest),
        j(prefix, n, r, p, "A", digest),
        j(prefix, n, r, p, "é", digest),
        j(prefix, n, r, p, salt, ""),
        j(prefix, n, r, p, salt, "A"),
        j(prefix, n, r, p, salt, "@@@@"),
        j(prefix, n, r, p, salt, "é"),
    ]


def test_malformed_stored_strings_return_false(stored: str) -> None:
    for bad in _malformed(stored):
        try:
            result = verify_password("correct horse battery staple", bad)
        except Exception as exc:  # pragma: no cover - reported as a failure
            pytest.fail(f"verify_password raised {exc!r} for {bad!r}")
        assert result is False, bad


def test_truncated_digest_is_rejected(stored: str) -> None:
    """The format always carries a 32-byte digest. Taking dklen from the stored string lets a
    truncated digest (a prefix of the real one) verify, so a 1-byte digest would accept about
    one wrong password in 256."""
    prefix, n, r, p, salt, digest = parts(stored)
    raw = base64.b64decode(digest + "=" * (-len(digest) % 4))
    for keep in (31, 16, 1):
        short = base64.b64encode(raw[:keep]).decode().rstrip("=")
        bad = "$".join([prefix, n, r, p, salt, short])
        assert verify_password("correct horse battery staple", bad) is False, keep


def test_malformed_list_really_differs_from_the_good_hash(stored: str) -> None:
    assert stored not in _malformed(stored)


# --- argon2id ------------------------------------------------------------------------------


def test_new_hashes_are_argon2id_with_owasp_parameters(argon: str) -> None:
    assert argon.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert "correct horse" not in argon
    assert verify_password("correct horse battery staple", argon) is True
    assert verify_password("correct horse battery stapl", argon) is False
    assert needs_rehash(argon) is False


@pytest.mark.parametrize("password", ["", "pässwörd-✓", "x" * 256, "a$b$c"])
def test_argon2_round_trip_unusual_passwords(password: str) -> None:
    stored = hash_password(password)
    assert verify_password(password, stored) is True
    assert verify_password(password + "!", stored) is False


def test_argon2_hashes_are_salted() -> None:
    assert hash_password("same password") != hash_password("same password")


def test_check_password_replaces_a_scrypt_hash(stored: str) -> None:
    checked = check_password("correct horse battery staple", stored)
    assert checked.ok is True and checked.new_hash is not None
    assert checked.new_hash.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert verify_password("correct horse battery staple", checked.new_hash) is True


def test_check_password_replaces_argon2_with_other_parameters() -> None:
    weaker = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1, type=Type.ID)
    old = weaker.hash("pw-0123456789")
    assert needs_rehash(old) is True
    checked = check_password("pw-0123456789", old)
    assert checked.ok and checked.new_hash is not None and needs_rehash(checked.new_hash) is False
    argon2i = PasswordHasher(type=Type.I).hash("pw-0123456789")
    assert needs_rehash(argon2i) is True


def test_check_password_keeps_a_current_hash(argon: str) -> None:
    assert check_password("correct horse battery staple", argon) == (True, None)


def test_check_password_never_rehashes_on_a_wrong_password(stored: str, argon: str) -> None:
    assert check_password("wrong password", stored) == (False, None)
    assert check_password("wrong password", argon) == (False, None)


def test_malformed_argon2_strings_return_false(argon: str) -> None:
    head, _, digest = argon.rpartition("$")
    for bad in ["$argon2id$", "$argon2id$v=19$m=19456,t=2,p=1$", f"{head}$",
                f"{head}${digest[:-4]}", f"{head}$!!!!", argon.replace("argon2id", "argon2x"),
                argon.replace("m=19456", "m=abc"), argon + "$extra"]:
        assert verify_password("correct horse battery staple", bad) is False, bad
