"""Request parameters: validation of the JSON bodies and the search query (pure)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from onsale.psp import cards, errors

MAX_AMOUNT = 99_999_999
CURRENCIES = frozenset({"usd"})
CANCELLATION_REASONS = frozenset({"requested_by_customer", "abandoned"})
METADATA_MAX_KEYS = 50
METADATA_KEY_MAX = 40
METADATA_VALUE_MAX = 500


@dataclass(frozen=True, slots=True)
class CreateParams:
    amount: int
    currency: str
    card_number: str
    metadata: dict[str, Any]
    return_url: str | None


def json_body(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object; an empty body is ``{}``."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.invalid(None, "The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise errors.invalid(None, "The request body must be a JSON object.")
    return body


def _positive_int(body: dict[str, Any], name: str, *, required: bool) -> int | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_AMOUNT:
        raise errors.invalid(name, f"{name} must be an integer between 1 and {MAX_AMOUNT}.")
    return value


def metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > METADATA_MAX_KEYS:
        raise errors.invalid("metadata",
                             f"metadata must be an object with at most {METADATA_MAX_KEYS} keys.")
    for key, item in value.items():
        if not key or len(key) > METADATA_KEY_MAX:
            raise errors.invalid("metadata", f"metadata keys must be 1-{METADATA_KEY_MAX} chars.")
        if not isinstance(item, str | int | float | bool) or len(str(item)) > METADATA_VALUE_MAX:
            raise errors.invalid(f"metadata[{key}]",
                                 "metadata values must be strings or numbers "
                                 f"of at most {METADATA_VALUE_MAX} chars.")
    return dict(value)


def create(body: dict[str, Any]) -> CreateParams:
    amount = _positive_int(body, "amount", required=True)
    assert amount is not None
    currency = body.get("currency")
    if not isinstance(currency, str) or currency.lower() not in CURRENCIES:
        raise errors.invalid("currency", f"currency must be one of {sorted(CURRENCIES)}.")
    method = body.get("payment_method")
    number = cards.resolve(method) if isinstance(method, str) else None
    if number is None:
        raise errors.invalid("payment_method", "payment_method must be a card number "
                             "or a pm_card_* test alias.")
    if body.get("capture_method", "manual") != "manual":
        raise errors.invalid("capture_method", "Only capture_method 'manual' is supported.")
    if body.get("confirm", True) is not True:
        raise errors.invalid("confirm", "Only confirm=true is supported.")
    return_url = body.get("return_url")
    if return_url is not None and (not isinstance(return_url, str)
                                   or not return_url.startswith(("http://", "https://"))):
        raise errors.invalid("return_url", "return_url must be an absolute http(s) URL.")
    return CreateParams(amount, currency.lower(), number, metadata(body.get("metadata")),
                        return_url)


def capture(body: dict[str, Any]) -> int | None:
    return _positive_int(body, "amount_to_capture", required=False)


def cancel(body: dict[str, Any]) -> str:
    reason = body.get("cancellation_reason", "requested_by_customer")
    if reason not in CANCELLATION_REASONS:
        raise errors.invalid("cancellation_reason", "cancellation_reason must be one of "
                             f"{sorted(CANCELLATION_REASONS)}.")
    assert isinstance(reason, str)
    return reason


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
