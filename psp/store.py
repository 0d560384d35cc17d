"""SQLite persistence: intents, idempotency keys and the outbound webhook queue.

One connection in WAL mode (``synchronous=NORMAL``: a process crash loses
nothing, a power cut may lose the last commits). Statements are tiny and run
synchronously; callers group them in :meth:`Store.transaction`, so a state
change, its idempotency record and its webhook event commit together.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onsale.kernel.private_files import create_private, narrow_file, private_dir
from onsale.psp import intents, methods, params
from onsale.psp.idempotency import StoredKey
from onsale.psp.intents import PaymentIntent
from onsale.psp.methods import PaymentMethod

SCHEMA = """
CREATE TABLE IF NOT EXISTS intents (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    currency TEXT NOT NULL,
    created REAL NOT NULL,
    authorized_at REAL,
    amount_received INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS intents_lapse ON intents (status, authorized_at);
CREATE TABLE IF NOT EXISTS intent_metadata (
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    intent_id TEXT NOT NULL,
    PRIMARY KEY (key, value, intent_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS payment_methods (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created REAL NOT NULL,
    status INTEGER,
    body BLOB,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created);
CREATE TABLE IF NOT EXISTS webhook_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    created REAL NOT NULL,
    body BLOB NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    leased INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    deliveries INTEGER NOT NULL DEFAULT 0,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS webhook_events_due
    ON webhook_events (state, leased, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_events_finished ON webhook_events (finished_at);
"""


@dataclass(frozen=True, slots=True)
class QueuedEvent:
    id: str
    type: str
    body: bytes
    attempts: int


class Store:
    def __init__(self, path: Path) -> None:
        # Only its owner may read the state (docs/security.md#files-on-disk): the folder
        # 0700, the database created 0600 before SQLite opens it, and SQLite gives its
        # -wal and -shm files the database file's mode (older, broader ones are narrowed).
        private_dir(path.parent)
        create_private(path)
        for journal in ("-wal", "-shm", "-journal"):
            narrow_file(path.with_name(path.name + journal))
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together, or none does."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # Intents

    def intent(self, intent_id: str) -> PaymentIntent | None:
        row = self._db.execute("SELECT data FROM intents WHERE id = ?", (intent_id,)).fetchone()
        return intents.from_record(json.loads(row[0])) if row is not None else None

    def insert_intent(self, intent: PaymentIntent) -> None:
        self._db.execute(
            "INSERT INTO intents (id, status, currency, created, authorized_at,"
            " amount_received, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (intent.id, intent.status, intent.currency, intent.created, intent.authorized_at,
             intent.amount_received, json.dumps(intent.record())))
        self._db.executemany(
            "INSERT OR IGNORE INTO intent_metadata (key, value, intent_id) VALUES (?, ?, ?)",
            [(key, params.metadata_text(value), intent.id)
             for key, value in intent.metadata.items()])

    def update_intent(self, intent: PaymentIntent) -> None:
        self._db.execute(
            "UPDATE intents SET status = ?, authorized_at = ?, amount_received = ?, data = ?"
            " WHERE id = ?",
            (intent.status, intent.authorized_at, intent.amount_received,
             json.dumps(intent.record()), intent.id))

    def search(self, key: str, value: str, limit: int) -> list[PaymentIntent]:
        rows = self._db.execute(
            "SELECT i.data FROM intent_metadata m JOIN intents i ON i.id = m.intent_id"
            " WHERE m.key = ? AND m.value = ? ORDER BY i.created DESC, i.rowid DESC LIMIT ?",
            (key, value, limit)).fetchall()
        return [intents.from_record(json.loads(row[0])) for row in rows]

    def recent(self, limit: int) -> list[PaymentIntent]:
        rows = self._db.execute(
            "SELECT data FROM intents ORDER BY created DESC, rowid DESC LIMIT ?",
            (limit,)).fetchall()
        return [intents.from_record(json.loads(row[0])) for row in rows]

    def lapse_candidates(self, authorized_before: float) -> list[str]:
        rows = self._db.execute(
            "SELECT id FROM intents WHERE status = 'requires_capture' AND authorized_at <= ?",
            (authorized_before,)).fetchall()
        return [row[0] for row in rows]

    # Payment methods

    def payment_method(self, method_id: str) -> PaymentMethod | None:
        row = self._db.execute("SELECT data FROM payment_methods WHERE id = ?",
                               (method_id,)).fetchone()
        return methods.from_record(json.loads(row[0])) if row is not None else None

    def insert_payment_method(self, method: PaymentMethod) -> None:
        self._db.execute("INSERT INTO payment_methods (id, data) VALUES (?, ?)",
                         (method.id, json.dumps(method.record())))

    # Idempotency keys

    def key(self, scope: str, key: str) -> StoredKey | None:
        row = self._db.execute(
            "SELECT fingerprint, created, status, body FROM idempotency_keys"
            " WHERE scope = ? AND key = ?", (scope, key)).fetchone()
        return StoredKey(row[0], row[1], row[2], row[3]) if row is not None else None

    def claim_key(self, scope: str, key: str, fingerprint: str, now: float) -> None:
        """The key row, first in the request's transaction (an expired one is replaced)."""
        self._db.execute(
            "INSERT OR REPLACE INTO idempotency_keys (scope, key, fingerprint, created)"
            " VALUES (?, ?, ?, ?)", (scope, key, fingerprint, now))

    def finish_key(self, scope: str, key: str, status: int, body: bytes) -> None:
        self._db.execute(
            "UPDATE idempotency_keys SET status = ?, body = ? WHERE scope = ? AND key = ?",
            (status, body, scope, key))

    def prune_keys(self, created_before: float) -> int:
        return self._db.execute("DELETE FROM idempotency_keys WHERE created < ?",
                                (created_before,)).rowcount

    # Webhook queue

    def enqueue(self, event_id: str, event_type: str, created: float, body: bytes,
                next_attempt_at: float) -> None:
        self._db.execute(
            "INSERT INTO webhook_events (id, type, created, body, next_attempt_at)"
            " VALUES (?, ?, ?, ?, ?)", (event_id, event_type, created, body, next_attempt_at))

    def claim_due(self, now: float, limit: int) -> list[QueuedEvent]:
        """Pending events due by ``now``, longest due first, leased to the caller until
        :meth:`record_attempt` (or :meth:`release_leases` after a restart)."""
        rows = self._db.execute(
            "SELECT seq, id, type, body, attempts FROM webhook_events"
            " WHERE state = 'pending' AND leased = 0 AND next_attempt_at <= ?"
            " ORDER BY next_attempt_at LIMIT ?", (now, limit)).fetchall()
        self._db.executemany("UPDATE webhook_events SET leased = 1 WHERE seq = ?",
                             [(row[0],) for row in rows])
        return [QueuedEvent(row[1], row[2], row[3], row[4]) for row in rows]

    def release_leases(self) -> int:
        """Deliveries cut short by a stop are due again."""
        return self._db.execute(
            "UPDATE webhook_events SET leased = 0 WHERE leased = 1").rowcount

    def next_due(self) -> float | None:
        row = self._db.execute("SELECT min(next_attempt_at) FROM webhook_events"
                               " WHERE state = 'pending' AND leased = 0").fetchone()
        return float(row[0]) if row[0] is not None else None

    def record_attempt(self, event_id: str, *, attempts: int, state: str,
                       next_attempt_at: float, last_status: int | None,
                       last_error: str | None, deliveries: int, now: float) -> None:
        self._db.execute(
            "UPDATE webhook_events SET attempts = ?, state = ?, next_attempt_at = ?, leased = 0,"
            " last_status = ?, last_error = ?, deliveries = deliveries + ?,"
            " finished_at = CASE WHEN ? = 'pending' THEN NULL ELSE ? END WHERE id = ?",
            (attempts, state, next_attempt_at, last_status, last_error, deliveries, state,
             now, event_id))

    def deliveries(self, limit: int) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT id, type, state, attempts, last_status, last_error, deliveries,"
            " created, next_attempt_at FROM webhook_events ORDER BY seq DESC LIMIT ?",
            (limit,)).fetchall()
        names = ("id", "type", "state", "attempts", "last_status", "last_error",
                 "deliveries", "created", "next_attempt_at")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def prune_events(self, finished_before: float) -> int:
        return self._db.execute(
            "DELETE FROM webhook_events WHERE finished_at < ?",
            (finished_before,)).rowcount

    # Statistics

    def stats(self) -> dict[str, Any]:
        by_status = dict(self._db.execute(
            "SELECT status, count(*) FROM intents GROUP BY status").fetchall())
        authorizations = self._db.execute(
            "SELECT count(*) FROM intents WHERE authorized_at IS NOT NULL").fetchone()[0]
        captured = self._db.execute(
            "SELECT currency, count(*), sum(amount_received) FROM intents"
            " WHERE status = 'succeeded' GROUP BY currency").fetchall()
        duplicates = [row[0] for row in self._db.execute(
            "SELECT value FROM intent_metadata WHERE key = 'operation_id'"
            " GROUP BY value HAVING count(*) > 1 ORDER BY value")]
        pending = self._db.execute(
            "SELECT state, count(*) FROM webhook_events GROUP BY state").fetchall()
        return {
            "intents": sum(by_status.values()), "intents_by_status": by_status,
            "authorizations": authorizations,
            "captures": sum(row[1] for row in captured),
            "captured_amount": {row[0]: row[2] for row in captured},
            "duplicate_operation_ids": duplicates,
            "webhooks_by_state": dict(pending),
        }
