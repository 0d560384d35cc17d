"""kernel.signed.Unsigner accepts exactly what itsdangerous's loads accepts."""

from __future__ import annotations

import hashlib

import pytest
from itsdangerous import BadSignature, SignatureExpired, URLSafeSerializer, URLSafeTimedSerializer

from onsale.kernel.signed import Unsigner

KEY = "k" * 32


def _both(serializer: URLSafeSerializer | URLSafeTimedSerializer, token: str,
          **kw: float) -> tuple[object, object]:
    def outcome(load: object) -> object:
        try:
            return ("ok", load(token, **kw))  # type: ignore[operator]
        except SignatureExpired:
            return ("expired",)
        except BadSignature:
            return ("bad",)
    return outcome(serializer.loads), outcome(Unsigner(serializer).loads)


@pytest.mark.parametrize("payload", [
    [1, "ab" * 16, 42, "device"],
    {"a": "x", "s": "y"},
    ["long and compressible " * 40],  # URLSafe compresses: the token starts with "."
    "é unicode ☃",
])
def test_valid_tokens_load_the_same(payload: object) -> None:
    for s in (URLSafeSerializer(KEY, salt="t"),
              URLSafeSerializer(KEY, salt="t", signer_kwargs={"digest_method": hashlib.sha256}),
              URLSafeTimedSerializer(KEY, salt="t")):
        token = s.dumps(payload)
        plain, fast = _both(s, token)
        assert plain == fast == ("ok", payload)


def test_the_compressed_form_is_exercised() -> None:
    assert URLSafeSerializer(KEY, salt="t").dumps(["long and compressible " * 40]).startswith(".")


def test_any_key_of_a_rotation_list_verifies_and_others_do_not() -> None:
    old = URLSafeSerializer(["o" * 32], salt="t")
    new = URLSafeSerializer(["o" * 32, "n" * 32], salt="t")  # last signs, all verify
    foreign = URLSafeSerializer(["f" * 32], salt="t")
    token = old.dumps([1])
    assert Unsigner(new).loads(token) == [1]
    assert Unsigner(new).loads(new.dumps([2])) == [2]
    with pytest.raises(BadSignature):
        Unsigner(foreign).loads(token)


def test_salt_separates_uses() -> None:
    token = URLSafeSerializer(KEY, salt="a").dumps([1])
    with pytest.raises(BadSignature):
        Unsigner(URLSafeSerializer(KEY, salt="b")).loads(token)


def _other_signature(token: str) -> str:
    # The first character of the signature is all data bits (the last one has padding).
    head, sig = token.rsplit(".", 1)
    return f"{head}.{'z' if sig[0] != 'z' else 'A'}{sig[1:]}"


@pytest.mark.parametrize("mangle", [
    _other_signature,                                     # signature changed
    lambda t: "x" + t,                                    # payload changed
    lambda t: t.replace(".", ""),                         # no separator
    lambda t: t.rsplit(".", 1)[0] + ".!!!",               # signature not base64
    lambda t: "",
    lambda t: ".",
])
def test_tampered_tokens_are_refused_by_both(mangle: object) -> None:
    for s in (URLSafeSerializer(KEY, salt="t"), URLSafeTimedSerializer(KEY, salt="t")):
        token = mangle(s.dumps([1, "two"]))  # type: ignore[operator]
        plain, fast = _both(s, token)
        assert plain == fast == ("bad",)


def test_max_age_and_the_future() -> None:
    s = URLSafeTimedSerializer(KEY, salt="t")
    token = s.dumps({"a": 1})
    signed_at = Unsigner(s, clock=lambda: 0).loads(token)  # no max_age: no clock check
    assert signed_at == {"a": 1}
    import time
    now = time.time()
    assert Unsigner(s, clock=lambda: now + 5).loads(token, max_age=10) == {"a": 1}
    with pytest.raises(SignatureExpired):
        Unsigner(s, clock=lambda: now + 100).loads(token, max_age=10)
    with pytest.raises(SignatureExpired):
        Unsigner(s, clock=lambda: now - 100).loads(token, max_age=10)


def test_a_token_of_the_untimed_kind_is_not_a_timed_one() -> None:
    token = URLSafeSerializer(KEY, salt="t").dumps([1])
    timed = URLSafeTimedSerializer(KEY, salt="t")
    plain, fast = _both(timed, token, max_age=10)
    assert plain == fast == ("bad",)


def test_memo_is_bounded_and_drops_the_oldest_first() -> None:
    from onsale.kernel.signed import Memo
    memo = Memo(3)
    for token in "abcd":
        memo.put(token, token.upper())
    assert len(memo) == 3
    assert memo.get("a") is None
    assert [memo.get(t) for t in "bcd"] == ["B", "C", "D"]


def test_a_memoized_session_still_expires_and_a_forged_one_is_never_memoized() -> None:
    import time
    import uuid

    from onsale.kernel.sessions import SessionCodec, SessionRef
    codec = SessionCodec(KEY, max_age=60)
    ref = SessionRef(uuid.uuid4(), "s" * 24)
    token = codec.encode(ref)
    assert codec.decode(token) == ref
    assert codec.decode(token) == ref  # from the memo
    real = time.time
    try:
        time.time = lambda: real() + 61  # type: ignore[assignment]
        assert codec.decode(token) is None
    finally:
        time.time = real  # type: ignore[assignment]
    forged = _other_signature(token)
    assert codec.decode(forged) is None
    assert codec.decode(forged) is None
    assert codec._memo.get(forged) is None
