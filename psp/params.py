"""Request parameters (pure): validation of the parsed form bodies (``psp.form``: every
leaf a string, as Stripe receives them) and of the search query."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from onsale.psp import cards, errors

MAX_AMOUNT = 99_999_999
CURRENCIES = frozenset({"usd"})
CANCELLATION_REASONS = frozenset({"duplicate", "fraudulent", "requested_by_customer",
                                  "abandoned"})
METADATA_MAX_KEYS = 50
METADATA_KEY_MAX = 40
METADATA_VALUE_MAX = 500


@dataclass(frozen=True, slots=True)
class CreateParams:
    amount: int
    currency: str
    payment_method: str
    metadata: dict[str, str]
    return_url: str | None


@dataclass(frozen=True, slots=True)
class CardParams:
    number: str
    exp_month: int
    exp_year: int


CREATE_PARAMS = frozenset({"amount", "currency", "payment_method", "capture_method", "confirm",
                           "return_url", "metadata", "expand", "payment_method_types",
                           "description"})
CAPTURE_PARAMS = frozenset({"amount_to_capture", "expand"})
CANCEL_PARAMS = frozenset({"cancellation_reason", "expand"})
PAYMENT_METHOD_PARAMS = frozenset({"type", "card", "billing_details", "metadata", "expand",
                                   # what Stripe.js adds to its own requests
                                   "key", "guid", "muid", "sid", "payment_user_agent",
                                   "time_on_page", "referrer", "pasted_fields"})
CARD_PARAMS = frozenset({"number", "exp_month", "exp_year", "cvc"})


def json_body(raw: bytes) -> dict[str, Any]:
    """A JSON object body (the /_sim/ endpoints); an empty body is ``{}``."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.invalid(None, "The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise errors.invalid(None, "The request body must be a JSON object.")
    return body


def known(body: dict[str, Any], allowed: frozenset[str], prefix: str = "") -> None:
    """Stripe refuses a parameter it does not know (``parameter_unknown``)."""
    for name in sorted(body):
        if name not in allowed:
            full = f"{prefix}[{name}]" if prefix else name
            raise errors.invalid(full, f"Received unknown parameter: {full}",
                                 "parameter_unknown")


def _string(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise errors.invalid(name, f"Invalid {name}: must be a string.")
    return value


def _integer(value: str | None, name: str, lo: int, hi: int) -> int | None:
    if value is None:
        return None
    if not (value.isascii() and value.isdigit() and len(value) <= 12) or not lo <= int(value) <= hi:
        raise errors.invalid(name, f"Invalid integer: {name} must be between {lo} and {hi}.")
    return int(value)


def _amount(body: dict[str, Any], name: str, *, required: bool) -> int | None:
    raw = _string(body, name)
    if raw is None and required:
        raise errors.invalid(name, f"Missing required param: {name}.", "parameter_missing")
    return _integer(raw, name, 1, MAX_AMOUNT)


def _expand(body: dict[str, Any]) -> None:
    value = body.get("expand")
    if value is not None and (not isinstance(value, list)
                              or not all(isinstance(v, str) for v in value)):
        raise errors.invalid("expand", "Invalid array: expand must be a list of strings.")


def metadata(value: Any) -> dict[str, str]:
    """Stripe's metadata: string keys and values (an empty value unsets a key)."""
    if value is None or value == "":
        return {}
    if not isinstance(value, dict) or len(value) > METADATA_MAX_KEYS:
        raise errors.invalid("metadata",
                             f"metadata must be a hash with at most {METADATA_MAX_KEYS} keys.")
    result: dict[str, str] = {}
    for key, item in value.items():
        if not key or len(key) > METADATA_KEY_MAX:
            raise errors.invalid("metadata", f"metadata keys must be 1-{METADATA_KEY_MAX} chars.")
        if not isinstance(item, str) or len(item) > METADATA_VALUE_MAX:
            raise errors.invalid(f"metadata[{key}]", "metadata values must be strings "
                                 f"of at most {METADATA_VALUE_MAX} chars.")
        if item:
            result[key] = item
    return result


def create(body: dict[str, Any]) -> CreateParams:
    known(body, CREATE_PARAMS)
    _expand(body)
    amount = _amount(body, "amount", required=True)
    assert amount is not None
    currency = _string(body, "currency")
    if currency is None:
        raise errors.invalid("currency", "Missing required param: currency.",
                             "parameter_missing")
    if currency.lower() not in CURRENCIES:
        raise errors.invalid("currency", f"currency must be one of {sorted(CURRENCIES)}.")
    method = _string(body, "payment_method")
    if method is None or not method.startswith("pm_"):
        raise errors.invalid("payment_method", "payment_method must be a PaymentMethod id "
                             "(pm_…), e.g. one of Stripe's test ids such as pm_card_visa.",
                             "parameter_missing" if method is None else "parameter_invalid")
    if _string(body, "capture_method") != "manual":
        raise errors.invalid("capture_method", "This simulator supports only "
                             "capture_method=manual.")
    if _string(body, "confirm") != "true":
        raise errors.invalid("confirm", "This simulator supports only confirm=true.")
    types = body.get("payment_method_types")
    if types is not None and types != ["card"]:
        raise errors.invalid("payment_method_types", "Only payment_method_types[]=card.")
    _string(body, "description")
    return_url = _string(body, "return_url")
    if return_url is not None and not return_url.startswith(("http://", "https://")):
        raise errors.invalid("return_url", "return_url must be an absolute http(s) URL.",
                             "url_invalid")
    return CreateParams(amount, currency.lower(), method, metadata(body.get("metadata")),
                        return_url)


def capture(body: dict[str, Any]) -> int | None:
    known(body, CAPTURE_PARAMS)
    _expand(body)
    return _amount(body, "amount_to_capture", required=False)


def cancel(body: dict[str, Any]) -> str:
    known(body, CANCEL_PARAMS)
    _expand(body)
    reason = _string(body, "cancellation_reason") or "requested_by_customer"
    if reason not in CANCELLATION_REASONS:
        raise errors.invalid("cancellation_reason", "cancellation_reason must be one of "
                             f"{sorted(CANCELLATION_REASONS)}.")
    return reason


def card(body: dict[str, Any], now_year: int, now_month: int) -> CardParams:
    """``type=card&card[number]=…&card[exp_month]=…&card[exp_year]=…&card[cvc]=…``;
    a bad card is a ``card_error`` (402), as Stripe answers tokenization."""
    known(body, PAYMENT_METHOD_PARAMS)
    if _string(body, "type") != "card":
        raise errors.invalid("type", "This simulator supports only type=card.")
    details = body.get("card")
    if not isinstance(details, dict):
        raise errors.invalid("card", "Missing required param: card.", "parameter_missing")
    known(details, CARD_PARAMS, "card")
    raw = details.get("number")
    number = cards.normalized(raw) if isinstance(raw, str) else None
    if number is None or not cards.luhn_valid(number):
        raise errors.card_field("incorrect_number", "card[number]",
                                "Your card number is incorrect.")
    month_raw, year_raw = details.get("exp_month"), details.get("exp_year")
    if not (isinstance(month_raw, str) and month_raw.isascii() and month_raw.isdigit()
            and 1 <= int(month_raw) <= 12):
        raise errors.card_field("invalid_expiry_month", "card[exp_month]",
                                "Your card's expiration month is invalid.")
    if not (isinstance(year_raw, str) and year_raw.isascii() and year_raw.isdigit()
            and len(year_raw) in (2, 4)):
        raise errors.card_field("invalid_expiry_year", "card[exp_year]",
                                "Your card's expiration year is invalid.")
    month, year = int(month_raw), int(year_raw)
    year += 2000 if year < 100 else 0
    if (year, month) < (now_year, now_month) or year > now_year + 50:
        raise errors.card_field("invalid_expiry_year", "card[exp_year]",
                                "Your card's expiration year is invalid.")
    cvc = details.get("cvc")
    if cvc is not None and not (isinstance(cvc, str) and cvc.isascii() and cvc.isdigit()
                                and len(cvc) in (3, 4)):
        raise errors.card_field("invalid_cvc", "card[cvc]",
                                "Your card's security code is invalid.")
    return CardParams(number, month, year)


_QUERY = re.compile(r"""\s*metadata\[(['"])(?P<key>[^'"]+)\1\]\s*:\s*"""
                    r"""(?P<q>['"])(?P<value>(?:\\.|(?!(?P=q)).)*)(?P=q)\s*""")


def search_query(query: str | None) -> tuple[str, str]:
    """``metadata['key']:'value'`` (single or double quotes; ``\\`` escapes) → (key, value)."""
    match = _QUERY.fullmatch(query or "")
    if match is None:
        raise errors.invalid("query", "Only metadata['<key>']:'<value>' queries are supported.")
    value = re.sub(r"\\(.)", r"\1", match["value"])
    return match["key"], value


def metadata_text(value: Any) -> str:
    """How a metadata value is indexed and matched: strings as they are, others as JSON."""
    return value if isinstance(value, str) else json.dumps(value)
