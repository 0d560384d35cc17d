"""The operations, each one SQLite transaction: the state change, its idempotency
record and its webhook event commit together (or not at all)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from onsale.psp import errors, events, idempotency, intents, methods
from onsale.psp.config import PspConfig
from onsale.psp.idempotency import Conflict, InProgress, Replay
from onsale.psp.intents import PaymentIntent, Transition
from onsale.psp.methods import PaymentMethod
from onsale.psp.params import CardParams, CreateParams
from onsale.psp.store import Store

Clock = Callable[[], float]
Outcome = tuple[int, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    replayed: bool = False


class Service:
    def __init__(self, store: Store, config: PspConfig, clock: Clock,
                 notify: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.notify = notify
        self._emitted = False
        # The API request being served, named by the events it causes.
        self._request: tuple[str | None, str | None] = (None, None)

    def public(self, intent: PaymentIntent) -> dict[str, Any]:
        method = None
        if intent.last_payment_error is not None:
            found = self.store.payment_method(intent.payment_method)
            method = found.public() if found is not None else None
        return intent.public(self.config.public_url, method)

    # Writes behind an Idempotency-Key

    def idempotent(self, scope: str, key: str | None, fingerprint: str, request_id: str,
                   operation: Callable[[float], Outcome]) -> Reply:
        """Replay the stored answer, refuse a conflicting reuse, or claim the key
        and run ``operation`` in the same transaction (without a key: just run it).
        An ApiError raised by the operation (e.g. 404) rolls everything back, the
        key included, as Stripe does not keep the result of a request that failed
        validation."""
        now = self.clock()
        try:
            with self.store.transaction():
                if key is not None:
                    decision = idempotency.decide(self.store.key(scope, key), fingerprint, now,
                                                  self.config.idempotency_retention_seconds)
                    if isinstance(decision, Replay):
                        return Reply(decision.status, decision.body, replayed=True)
                    if isinstance(decision, Conflict):
                        raise errors.idempotency_conflict()
                    if isinstance(decision, InProgress):
                        raise errors.idempotency_in_progress()
                    self.store.claim_key(scope, key, fingerprint, now)
                self._request = (request_id, key)
                try:
                    status, payload = operation(now)
                finally:
                    self._request = (None, None)
                body = events.dumps(payload)
                if key is not None:
                    self.store.finish_key(scope, key, status, body)
        except BaseException:
            self._emitted = False
            raise
        self._flush()
        return Reply(status, body)

    def create_payment_method(self, card: CardParams, now: float) -> Outcome:
        method = PaymentMethod(events.new_payment_method_id(), card.number, card.exp_month,
                               card.exp_year, int(now))
        self.store.insert_payment_method(method)
        return 200, method.public()

    def retrieve_payment_method(self, method_id: str) -> PaymentMethod:
        with self._transaction():
            method = self.store.payment_method(method_id)
        if method is None:
            raise errors.missing(method_id, "payment_method")
        return method

    def _method(self, method_id: str, now: float) -> PaymentMethod:
        """A stored PaymentMethod, or a fresh copy of one of Stripe's test ids."""
        method = self.store.payment_method(method_id)
        if method is None:
            method = methods.test_card(method_id, events.new_payment_method_id(), now)
            if method is None:
                raise errors.missing(method_id, "PaymentMethod", "payment_method")
            self.store.insert_payment_method(method)
        return method

    def create(self, params: CreateParams, now: float) -> Outcome:
        method = self._method(params.payment_method, now)
        transition = intents.confirm(
            events.new_id("pi"), amount=params.amount, currency=params.currency,
            card_number=method.number, payment_method=method.id, metadata=params.metadata,
            return_url=params.return_url, now=now)
        intent = transition.intent
        self.store.insert_intent(intent)
        self._emit(transition, now)
        error = intent.last_payment_error
        if error is not None:
            return 402, errors.card_error(error.api(method.public()),
                                          self.public(intent)).body()
        return 200, self.public(intent)

    def capture(self, intent_id: str, amount: int | None, now: float) -> Outcome:
        intent = self._load(intent_id, now)
        try:
            transition = intents.capture(intent, amount)
        except intents.UnexpectedState as exc:
            return 400, errors.unexpected_state(str(exc), self.public(intent)).body()
        except intents.AmountTooLarge:
            raise errors.invalid("amount_to_capture", "amount_to_capture must be at most "
                                 f"amount_capturable ({intent.amount_capturable}).") from None
        self._save(transition, now)
        return 200, self.public(transition.intent)

    def cancel(self, intent_id: str, reason: str, now: float) -> Outcome:
        intent = self._load(intent_id, now)
        try:
            transition = intents.cancel(intent, reason, now)
        except intents.UnexpectedState as exc:
            return 400, errors.unexpected_state(str(exc), self.public(intent)).body()
        self._save(transition, now)
        return 200, self.public(transition.intent)

    # Reads and the shopper's 3-D Secure answer

    def retrieve(self, intent_id: str) -> PaymentIntent:
        with self._transaction() as now:
            return self._load(intent_id, now)

    def authenticate(self, intent_id: str, succeed: bool) -> PaymentIntent:
        with self._transaction() as now:
            transition = intents.authenticate(self._load(intent_id, now), succeed, now)
            if transition.event is not None:
                self._save(transition, now)
            return transition.intent

    def search(self, key: str, value: str, limit: int) -> list[PaymentIntent]:
        with self._transaction() as now:
            self._lapse_due(now)
            return self.store.search(key, value, limit)

    def recent(self, limit: int) -> list[PaymentIntent]:
        with self._transaction() as now:
            self._lapse_due(now)
            return self.store.recent(limit)

    def stats(self) -> dict[str, Any]:
        with self._transaction() as now:
            self._lapse_due(now)
            return self.store.stats()

    def sweep(self) -> int:
        """Lapse old authorizations and forget expired keys and old deliveries."""
        with self._transaction() as now:
            lapsed = self._lapse_due(now)
            self.store.prune_keys(now - self.config.idempotency_retention_seconds)
            self.store.prune_events(time.time() - self.config.idempotency_retention_seconds)
        return lapsed

    # Internals

    @contextmanager
    def _transaction(self) -> Iterator[float]:
        """A transaction at the current time; the dispatcher hears of new events after it."""
        try:
            with self.store.transaction():
                yield self.clock()
        except BaseException:
            self._emitted = False
            raise
        self._flush()

    def _flush(self) -> None:
        if self._emitted:
            self._emitted = False
            self.notify()

    def _load(self, intent_id: str, now: float) -> PaymentIntent:
        intent = self.store.intent(intent_id)
        if intent is None:
            raise errors.missing(intent_id)
        transition = intents.lapse(intent, now, self.config.auth_window_seconds)
        if transition is None:
            return intent
        self._save(transition, now)
        return transition.intent

    def _lapse_due(self, now: float) -> int:
        count = 0
        for intent_id in self.store.lapse_candidates(now - self.config.auth_window_seconds):
            intent = self.store.intent(intent_id)
            transition = intents.lapse(intent, now, self.config.auth_window_seconds) \
                if intent is not None else None
            if transition is not None:
                self._save(transition, now)
                count += 1
        return count

    def _save(self, transition: Transition, now: float) -> None:
        self.store.update_intent(transition.intent)
        self._emit(transition, now)

    def _emit(self, transition: Transition, now: float) -> None:
        if transition.event is None or self.config.webhook_url is None:
            return
        event_id = events.new_id("evt")
        request_id, key = self._request
        body = events.body(event_id, transition.event, int(now), self.public(transition.intent),
                           request_id=request_id, idempotency_key=key)
        self.store.enqueue(event_id, transition.event, now, body, time.time())
        self._emitted = True
