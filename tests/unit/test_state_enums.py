"""The state enums: the CHECK-constraint parser that ties them to the database
(tests/check_constraints.py; the database side is
tests/integration/test_state_enums.py), and the copies keyed by them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from onsale.core.health import PAYMENT_ERRORS
from onsale.core.hold_rules import effective_status
from onsale.core.hold_state import HoldState
from onsale.core.openapi import SCHEMAS
from onsale.core.order_state import OrderState
from onsale.core.payment_rules import OPEN_STATUSES
from onsale.core.payment_state import OperationStatus, PaymentOutcome, PaymentStatus
from onsale.core.seat_state import SeatState
from onsale.seatmap.snapshot import STATUS_CODES
from onsale.web.seat_pages import FINAL, HOLD_WORDS, PAYMENT_WORDS
from tests.check_constraints import (
    ConstraintFormatError,
    allowed_values,
    compared_values,
    mismatch,
)

SEATS = ("AVAILABLE", "HELD", "PAYMENT_PENDING", "SOLD", "BLOCKED")

# --- the parser, on the text PostgreSQL prints ------------------------------------------


@pytest.mark.parametrize("definition", [
    # pg_get_constraintdef(oid): what `status IN ('AVAILABLE', ...)` comes back as.
    "CHECK ((status = ANY (ARRAY['AVAILABLE'::text, 'HELD'::text, 'PAYMENT_PENDING'::text, "
    "'SOLD'::text, 'BLOCKED'::text])))",
    # pg_get_constraintdef(oid, true): fewer parentheses.
    "CHECK (status = ANY (ARRAY['AVAILABLE'::text, 'HELD'::text, 'PAYMENT_PENDING'::text, "
    "'SOLD'::text, 'BLOCKED'::text]))",
    # A varchar column: the column and the array are cast.
    "CHECK (((status)::text = ANY ((ARRAY['AVAILABLE'::character varying, "
    "'HELD'::character varying, 'PAYMENT_PENDING'::character varying, "
    "'SOLD'::character varying, 'BLOCKED'::character varying])::text[])))",
    # As a migration writes it, quoted identifier, odd spacing, line breaks.
    "CHECK (\"status\" IN ('AVAILABLE','HELD',\n  'PAYMENT_PENDING', 'SOLD' ,'BLOCKED'))",
    # An OR of equalities and lists, added NOT VALID.
    "CHECK (((status = 'AVAILABLE'::text) OR (status = 'HELD'::text) OR "
    "(status = ANY (ARRAY['PAYMENT_PENDING'::text, 'SOLD'::text, 'BLOCKED'::text])))) NOT VALID",
], ids=["plain", "pretty", "varchar", "as-written", "or-chain"])
def test_the_printed_forms_give_the_listed_values(definition: str) -> None:
    assert allowed_values(definition, "status") == SEATS
    assert mismatch(allowed_values(definition, "status"), SeatState) is None


def test_one_value_a_domain_and_quotes_inside_a_value() -> None:
    assert allowed_values("CHECK ((status = 'HELD'::text))", "status") == ("HELD",)
    assert allowed_values("CHECK ((VALUE = ANY (ARRAY['A'::text, 'B'::text])))", "VALUE") \
        == ("A", "B")
    assert allowed_values("CHECK ((note = ANY (ARRAY['it''s'::text, 'a, b)'::text])))",
                          "note") == ("it's", "a, b)")


@pytest.mark.parametrize("definition", [
    "CHECK ((NOT (status = ANY (ARRAY['SOLD'::text]))))",
    "CHECK ((status <> ALL (ARRAY['SOLD'::text])))",
    "CHECK ((status <> 'SOLD'::text))",
    "CHECK (((status <> 'SOLD'::text) OR (order_id IS NOT NULL)))",
    "CHECK (((status = 'SOLD'::text) AND (order_id IS NOT NULL)))",
    "CHECK ((lower(status) = ANY (ARRAY['sold'::text])))",
    "CHECK ((kind = ANY (ARRAY['AUTHORIZE'::text, 'CAPTURE'::text])))",  # another column
    "CHECK ((status = ANY (ARRAY['SOLD'::text]))",  # unbalanced
    "CHECK ((status = ANY (ARRAY['SOLD::text])))",  # unterminated literal
    "UNIQUE (status)",
])
def test_anything_but_a_list_of_values_for_the_column_is_refused(definition: str) -> None:
    with pytest.raises(ConstraintFormatError):
        allowed_values(definition, "status")


def test_a_state_missing_from_the_enum_or_the_database_is_a_mismatch() -> None:
    # The database allows a state the enum lacks (a migration added REFUNDED)...
    wider = allowed_values(
        "CHECK ((status = ANY (ARRAY['PENDING'::text, 'CONFIRMED'::text, 'CANCELLED'::text, "
        "'FAILED'::text, 'REFUNDED'::text])))", "status")
    assert mismatch(wider, OrderState) == \
        "only in the database: ['REFUNDED']; only in the enum: []"
    # ...or the enum names one the database no longer allows.
    narrower = allowed_values(
        "CHECK ((status = ANY (ARRAY['PENDING'::text, 'CONFIRMED'::text, 'FAILED'::text])))",
        "status")
    assert mismatch(narrower, OrderState) == \
        "only in the database: []; only in the enum: ['CANCELLED']"
    assert mismatch(("PENDING", "CONFIRMED", "CANCELLED", "FAILED"), OrderState) is None


def test_the_outcomes_a_function_compares_its_parameter_with() -> None:
    body = """
    BEGIN
        -- the shopper's card: 'NOT_AN_OUTCOME' in a comment does not count
        IF p_outcome IN ('UNKNOWN', 'CAPTURED') THEN
            x := CASE WHEN p_outcome = 'VOIDED' THEN 'SUCCEEDED' ELSE 'FAILED' END;
        ELSIF p_outcome_kind = 'OTHER' OR v_op.status = 'PENDING' THEN /* 'NOR THIS' */
            NULL;
        END IF;
    END"""
    assert compared_values(body, "p_outcome") == {"UNKNOWN", "CAPTURED", "VOIDED"}
    with pytest.raises(ConstraintFormatError):
        compared_values("IF p_outcome IN ('A', v_other) THEN", "p_outcome")


# --- the enums and the copies keyed by them ----------------------------------------------


def test_members_are_their_strings_in_comparisons_and_json() -> None:
    assert HoldState.PAYMENT_PENDING == "PAYMENT_PENDING"
    assert {"SOLD": 1}[SeatState.SOLD] == 1 and {SeatState.SOLD: 1}["SOLD"] == 1
    assert f"{PaymentStatus.CAPTURED}" == str(PaymentStatus.CAPTURED) == "CAPTURED"
    assert json.dumps({OrderState.FAILED: [OperationStatus.FAILED, PaymentOutcome.VOID_FAILED]}) \
        == '{"FAILED": ["FAILED", "VOID_FAILED"]}'
    assert PaymentOutcome.VOIDED.lower() == "voided"  # the reconciler's action names


def test_the_derived_hold_status_serialises_as_before() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    doc = {"status": effective_status("HELD", now, now)}
    assert json.dumps(doc) == '{"status": "EXPIRED"}'


def test_the_copies_cover_their_enum() -> None:
    assert set(STATUS_CODES) == set(SeatState)
    assert sorted(STATUS_CODES.values()) == list(range(len(SeatState)))
    assert set(PAYMENT_WORDS) == set(PaymentStatus)
    assert set(HOLD_WORDS) == set(HoldState)
    assert FINAL <= set(PaymentStatus)
    assert set(PAYMENT_ERRORS) <= set(PaymentOutcome)
    assert set(OPEN_STATUSES) < set(OperationStatus)


def test_the_api_document_lists_the_enums() -> None:
    order = SCHEMAS["Order"]["properties"]
    assert order["order_status"]["enum"] == ["PENDING", "CONFIRMED", "CANCELLED", "FAILED"]
    assert order["payment_status"]["enum"] == [
        "PENDING", "REQUIRES_ACTION", "AUTHORIZED", "CAPTURED", "DECLINED", "UNKNOWN",
        "VOIDED", "CAPTURE_FAILED", "FAILED"]
    assert SCHEMAS["Hold"]["properties"]["status"]["enum"] == [
        "HELD", "PAYMENT_PENDING", "CONFIRMED", "RELEASED", "EXPIRED"]
    assert all(type(v) is str for v in order["payment_status"]["enum"])
