"""edge.tokens: admission tokens and queue tickets, each verdict with literal inputs."""

from __future__ import annotations

import uuid

import pytest

from onsale.edge.tokens import (
    AdmissionCodec,
    Ticket,
    TicketCodec,
    Verdict,
    admission_keys,
)

KEY_A = "key-a-0123456789abcdef"
KEY_B = "key-b-0123456789abcdef"
ALICE = uuid.UUID(int=1)
BOB = uuid.UUID(int=2)


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_fresh_token_is_valid_for_its_event_and_account() -> None:
    codec = AdmissionCodec([KEY_A], 600, Clock())
    token = codec.issue(42, ALICE, "s1")
    verdict, admission = codec.check(token, 42, ALICE)
    assert verdict is Verdict.VALID
    assert admission is not None
    assert (admission.event_id, admission.account_id, admission.session_id) == (42, ALICE, "s1")
    assert admission.expires_at == 1_000_600


@pytest.mark.parametrize(("token", "verdict"), [
    (None, Verdict.MISSING), ("", Verdict.MISSING), ("garbage", Verdict.INVALID),
    ("WzQyXQ.abc", Verdict.INVALID)])
def test_missing_and_malformed_tokens(token: str | None, verdict: Verdict) -> None:
    codec = AdmissionCodec([KEY_A], 600, Clock())
    assert codec.check(token, 42, ALICE)[0] is verdict


def test_a_forged_token_is_invalid() -> None:
    clock = Clock()
    mine = AdmissionCodec([KEY_A], 600, clock)
    forger = AdmissionCodec(["not-the-key-0123456789"], 600, clock)
    assert mine.check(forger.issue(42, ALICE, "s1"), 42, ALICE)[0] is Verdict.INVALID
    token = mine.issue(42, ALICE, "s1")
    payload, _, signature = token.rpartition(".")
    tampered = mine.issue(43, ALICE, "s1").rpartition(".")[0] + "." + signature
    assert mine.check(tampered, 43, ALICE)[0] is Verdict.INVALID
    assert mine.check(payload + ".x" + signature[1:], 42, ALICE)[0] is Verdict.INVALID


def test_expiry_is_checked_after_the_signature() -> None:
    clock = Clock()
    codec = AdmissionCodec([KEY_A], 600, clock)
    token = codec.issue(42, ALICE, "s1")
    clock.now += 599
    assert codec.check(token, 42, ALICE)[0] is Verdict.VALID
    clock.now += 1
    assert codec.check(token, 42, ALICE)[0] is Verdict.EXPIRED


def test_other_event_and_other_account() -> None:
    codec = AdmissionCodec([KEY_A], 600, Clock())
    token = codec.issue(42, ALICE, "s1")
    assert codec.check(token, 43, ALICE)[0] is Verdict.WRONG_EVENT
    assert codec.check(token, 42, BOB)[0] is Verdict.WRONG_ACCOUNT


def test_rotation_signs_with_the_first_key_and_verifies_with_any() -> None:
    clock = Clock()
    old = AdmissionCodec([KEY_A], 600, clock)
    rotated = AdmissionCodec([KEY_B, KEY_A], 600, clock)
    retired = AdmissionCodec([KEY_B], 600, clock)
    old_token = old.issue(42, ALICE, "s1")
    assert rotated.check(old_token, 42, ALICE)[0] is Verdict.VALID
    new_token = rotated.issue(42, ALICE, "s2")
    assert retired.check(new_token, 42, ALICE)[0] is Verdict.VALID
    assert retired.check(old_token, 42, ALICE)[0] is Verdict.INVALID
    assert old.check(new_token, 42, ALICE)[0] is Verdict.INVALID


def test_verdict_codes_are_the_documented_problem_codes() -> None:
    assert {v.code for v in Verdict if v is not Verdict.VALID} == {
        "admission_required", "admission_invalid", "admission_expired",
        "admission_wrong_event", "admission_wrong_account", "admission_revoked"}


def test_a_ticket_is_not_an_admission_token_and_vice_versa() -> None:
    admissions = AdmissionCodec([KEY_A], 600, Clock())
    tickets = TicketCodec([KEY_A])
    ticket = tickets.issue(Ticket(42, ALICE, 7, "d1"))
    assert admissions.check(ticket, 42, ALICE)[0] is Verdict.INVALID
    assert tickets.read(admissions.issue(42, ALICE, "s1"), 42, ALICE) is None


def test_tickets_are_bound_to_event_and_account() -> None:
    tickets = TicketCodec([KEY_B, KEY_A])
    token = tickets.issue(Ticket(42, ALICE, 7, "d1"))
    assert tickets.read(token, 42, ALICE) == Ticket(42, ALICE, 7, "d1")
    assert tickets.read(token, 43, ALICE) is None
    assert tickets.read(token, 42, BOB) is None
    assert tickets.read(None, 42, ALICE) is None
    assert tickets.read(token[:-2], 42, ALICE) is None
    assert TicketCodec([KEY_A]).read(token, 42, ALICE) is None  # signed with KEY_B


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        AdmissionCodec(["short"], 600)
    with pytest.raises(ValueError):
        TicketCodec([])


def test_admission_keys_explicit_list_or_derived_from_the_secret() -> None:
    assert admission_keys(f" {KEY_B}, {KEY_A} ,", "s" * 32) == (KEY_B, KEY_A)
    derived = admission_keys("", "s" * 32)
    assert len(derived) == 1 and len(derived[0]) == 64
    assert derived != admission_keys("", "t" * 32)
    assert derived[0] != "s" * 32


def test_a_token_names_the_request_that_admitted_and_older_tokens_still_pass() -> None:
    codec = AdmissionCodec([KEY_A], 600, Clock())
    verdict, admission = codec.check(codec.issue(42, ALICE, "s1", "edge-req-7"), 42, ALICE)
    assert verdict is Verdict.VALID and admission is not None
    assert admission.request_id == "edge-req-7"
    verdict, admission = codec.check(codec.issue(42, ALICE, "s1"), 42, ALICE)  # as before
    assert verdict is Verdict.VALID and admission is not None and admission.request_id is None


@pytest.mark.parametrize("fields", [[42, ALICE.hex, "s1", 2_000_000, 7],
                                    [42, ALICE.hex, "s1", 2_000_000, "r", "extra"],
                                    [42, ALICE.hex, "s1"]])
def test_a_signed_token_of_another_shape_is_invalid(fields: list[object]) -> None:
    codec = AdmissionCodec([KEY_A], 600, Clock())
    forged = codec._s.dumps(fields)  # signed with the real key: only the shape is wrong
    assert codec.check(forged, 42, ALICE)[0] is Verdict.INVALID
