"""core.passwords: scrypt hashes in a self-describing string."""

from __future__ import annotations

import base64

import pytest

from core.passwords import DUMMY_HASH, hash_password, verify_password

FAST = 2**10


@pytest.fixture(scope="module")
def stored() -> str:
    return hash_password("correct horse battery staple", n=FAST)


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
    stored = hash_password(password, n=FAST)
    assert verify_password(password, stored) is True
    assert verify_password(password + "!", stored) is False


def test_format(stored: str) -> None:
    prefix, n, r, p, salt, digest = parts(stored)
    assert (prefix, n, r, p) == ("scrypt", str(FAST), "8", "1")
    assert "=" not in salt and "=" not in digest
    assert len(base64.b64decode(salt + "=" * (-len(salt) % 4))) == 16
    assert len(base64.b64decode(digest + "=" * (-len(digest) % 4))) == 32


def test_default_cost_is_recorded() -> None:
    assert parts(DUMMY_HASH)[:4] == ["scrypt", str(2**14), "8", "1"]


def test_hashes_are_salted() -> None:
    a = hash_password("same password", n=FAST)
    b = hash_password("same password", n=FAST)
    assert a != b
    assert parts(a)[4] != parts(b)[4]
    assert parts(a)[5] != parts(b)[5]
    assert verify_password("same password", a) and verify_password("same password", b)


def test_cost_parameters_are_read_from_the_stored_string() -> None:
    stored = hash_password("pw", n=2**11)
    assert parts(stored)[1] == "2048"
    assert verify_password("pw", stored) is True
    # The same salt and digest claimed at another cost no longer verify.
    assert verify_password("pw", stored.replace("$2048$", "$1024$", 1)) is False


def test_dummy_hash_rejects_everything_it_is_likely_to_see() -> None:
    assert verify_password("", DUMMY_HASH) is False
    assert verify_password("password", DUMMY_HASH) is False
    assert verify_password("not-a-real-password", DUMMY_HASH) is True  # it is a real hash


def test_digest_swapped_between_hashes_fails() -> None:
    a = parts(hash_password("pw", n=FAST))
    b = parts(hash_password("pw", n=FAST))
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
