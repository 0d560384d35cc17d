"""Fault injection rules (pure): parsing, matching with remaining counts, and the
webhook delivery faults. The random source is passed in, so tests are exact."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from onsale.psp import errors

Op = Literal["authorize", "capture", "cancel", "retrieve", "search"]
OPS: tuple[str, ...] = ("authorize", "capture", "cancel", "retrieve", "search", "*")
# The wrong_* faults process the request normally and then answer with the intent (in a
# success body, an error body or a search list) altered, as a broken proxy or provider
# would: the state, the stored idempotent answer and the webhooks stay truthful.
WRONG = ("wrong_amount", "wrong_currency", "wrong_id")
KINDS: tuple[str, ...] = ("latency", "timeout", "lost_response", "error_500", *WRONG)
DEFAULT_MS = {"latency": 1000, "timeout": 30000, "lost_response": 0, "error_500": 0,
              **dict.fromkeys(WRONG, 0)}
MAX_MS = 600_000


@dataclass(slots=True)
class Rule:
    op: str
    fault: str
    ms: int
    count: int | None
    probability: float
    remaining: int | None

    def public(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class WebhookFaults:
    duplicate: float = 0.0
    delay_ms: int = 0
    shuffle: bool = False
    fail_first: int = 0
    paused: bool = False


@dataclass(slots=True)
class FaultState:
    rules: list[Rule] = field(default_factory=list)
    webhooks: WebhookFaults = field(default_factory=WebhookFaults)

    def pick(self, op: str, rng: random.Random) -> Rule | None:
        """The first rule for ``op`` (or ``*``) with a count left whose dice roll
        passes; its remaining count goes down by one."""
        for rule in self.rules:
            if rule.op not in (op, "*") or rule.remaining == 0:
                continue
            if rule.probability < 1.0 and rng.random() >= rule.probability:
                continue
            if rule.remaining is not None:
                rule.remaining -= 1
            return rule
        return None

    def public(self) -> dict[str, Any]:
        return {"rules": [rule.public() for rule in self.rules],
                "webhooks": asdict(self.webhooks)}


def classify(method: str, path: str) -> str | None:
    """The operation a request performs, for matching rules (``None``: not faultable)."""
    parts = path.strip("/").split("/")
    if parts[:2] != ["v1", "payment_intents"]:
        return None
    if method == "POST":
        if len(parts) == 2:
            return "authorize"
        if len(parts) == 4 and parts[3] in ("capture", "cancel"):
            return parts[3]
    elif method == "GET" and len(parts) == 3:
        return "search" if parts[2] == "search" else "retrieve"
    return None


def _number(spec: dict[str, Any], name: str, param: str, default: float, lo: float,
            hi: float, *, integer: bool) -> Any:
    value = spec.get(name, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not lo <= value <= hi:
        raise errors.invalid(param, f"{param} must be a number between {lo} and {hi}.")
    return value


def _rule(spec: Any, index: int) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(spec, dict):
        raise errors.invalid(where, f"{where} must be an object.")
    op, kind = spec.get("op"), spec.get("fault")
    if op not in OPS:
        raise errors.invalid(f"{where}.op", f"op must be one of {list(OPS)}.")
    if kind not in KINDS:
        raise errors.invalid(f"{where}.fault", f"fault must be one of {list(KINDS)}.")
    ms = _number(spec, "ms", f"{where}.ms", DEFAULT_MS[kind], 0, MAX_MS, integer=True)
    count = spec.get("count")
    if count is not None:
        count = _number(spec, "count", f"{where}.count", 0, 0, 10**9, integer=True)
    probability = float(_number(spec, "probability", f"{where}.probability", 1.0, 0.0, 1.0,
                                integer=False))
    return Rule(op, kind, ms, count, probability, count)


def _webhooks(spec: Any) -> WebhookFaults:
    if spec is None:
        return WebhookFaults()
    if not isinstance(spec, dict):
        raise errors.invalid("webhooks", "webhooks must be an object.")
    flags = {}
    for name in ("shuffle", "paused"):
        flags[name] = spec.get(name, False)
        if not isinstance(flags[name], bool):
            raise errors.invalid(f"webhooks.{name}", f"webhooks.{name} must be a boolean.")
    return WebhookFaults(
        duplicate=float(_number(spec, "duplicate", "webhooks.duplicate", 0.0, 0.0, 1.0,
                                integer=False)),
        delay_ms=_number(spec, "delay_ms", "webhooks.delay_ms", 0, 0, MAX_MS, integer=True),
        fail_first=_number(spec, "fail_first", "webhooks.fail_first", 0, 0, 1000, integer=True),
        shuffle=flags["shuffle"], paused=flags["paused"],
    )


def parse(body: dict[str, Any]) -> FaultState:
    """The whole fault state from a ``PUT /_sim/faults`` body (it replaces the old one)."""
    rules = body.get("rules", [])
    if not isinstance(rules, list):
        raise errors.invalid("rules", "rules must be a list.")
    return FaultState([_rule(spec, i) for i, spec in enumerate(rules)],
                      _webhooks(body.get("webhooks")))


def _wrong(fault: str, intent: dict[str, Any]) -> dict[str, Any]:
    if fault == "wrong_amount" and isinstance(intent.get("amount"), int):
        return {**intent, "amount": intent["amount"] + 100}
    if fault == "wrong_currency":
        # XTS: the ISO 4217 code reserved for testing, never a real order's.
        return {**intent, "currency": "xts" if intent.get("currency") != "xts" else "xxx"}
    if fault == "wrong_id" and isinstance(intent.get("id"), str):
        return {**intent, "id": "pi_wrong_" + intent["id"].removeprefix("pi_")}
    return intent


def tampered(fault: str, body: Any) -> Any:
    """An answer's body with every PaymentIntent in it altered by a ``wrong_*`` fault:
    the object itself, an error's ``payment_intent``, or each item of a list or a
    search result."""
    if not isinstance(body, dict):
        return body
    if body.get("object") == "payment_intent":
        return _wrong(fault, body)
    if body.get("object") in ("list", "search_result") and isinstance(body.get("data"), list):
        return {**body, "data": [_wrong(fault, d) if isinstance(d, dict) else d
                                 for d in body["data"]]}
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("payment_intent"), dict):
        return {**body, "error": {**error,
                                  "payment_intent": _wrong(fault, error["payment_intent"])}}
    return body


def backoff(failed_attempts: int, base: float = 1.0, cap: float = 60.0) -> float:
    """Seconds before the next delivery after ``failed_attempts`` failures: 1, 2, 4, … cap."""
    return float(min(base * 2 ** min(max(failed_attempts - 1, 0), 32), cap))


def simulated_failure(attempt: int, webhooks: WebhookFaults) -> bool:
    """Whether delivery attempt ``attempt`` (1-based) is answered as a failure unsent."""
    return attempt <= webhooks.fail_first


def duplicated(webhooks: WebhookFaults, rng: random.Random) -> bool:
    return webhooks.duplicate > 0 and rng.random() < webhooks.duplicate
