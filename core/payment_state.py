"""The payment vocabularies, three sets that share some names but not meanings:

- ``PaymentStatus``: an order's payment, ``orders.payment_status`` (what the
  API shows as ``payment_status``);
- ``OperationStatus``: one call to the provider and its retries,
  ``payment_operations.status``;
- ``PaymentOutcome``: what a provider answer means for an operation, the
  ``p_outcome`` that ``onsale_payment_apply`` accepts (core/payment_rules.py
  maps answers to it); also the ``outcome`` label of the payment metrics.

The database is the authority (the two CHECK constraints and the function);
tests/integration/test_state_enums.py requires each enum to list the same
values. The provider's own intent statuses (``requires_capture``...) are the
simulator's, in psp/, and not here.
"""

from __future__ import annotations

from enum import StrEnum


class PaymentStatus(StrEnum):
    PENDING = "PENDING"
    REQUIRES_ACTION = "REQUIRES_ACTION"
    AUTHORIZED = "AUTHORIZED"
    CAPTURED = "CAPTURED"
    DECLINED = "DECLINED"
    UNKNOWN = "UNKNOWN"
    VOIDED = "VOIDED"
    CAPTURE_FAILED = "CAPTURE_FAILED"
    FAILED = "FAILED"


class OperationStatus(StrEnum):
    PENDING = "PENDING"
    UNKNOWN = "UNKNOWN"
    REQUIRES_ACTION = "REQUIRES_ACTION"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class PaymentOutcome(StrEnum):
    AUTHORIZED = "AUTHORIZED"
    REQUIRES_ACTION = "REQUIRES_ACTION"
    DECLINED = "DECLINED"
    NO_AUTHORIZATION = "NO_AUTHORIZATION"
    CAPTURED = "CAPTURED"
    CAPTURE_FAILED = "CAPTURE_FAILED"
    VOIDED = "VOIDED"
    VOID_FAILED = "VOID_FAILED"
    UNKNOWN = "UNKNOWN"

