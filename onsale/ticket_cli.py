"""``onsale ticket verify|new-key`` (docs/tickets.md): a gate's check of one ticket.

``verify VALUE`` checks a ticket's signed value against an event's public keys (the
document ``GET /api/events/{id}/ticket-keys`` returns, from ``--keys FILE`` offline or
fetched from ``--url``) and, when given, its revoked tickets (``--revocations FILE``, or
fetched with ``--url``). It prints the verdict and exits 0 when the ticket is valid, 1
when it is not (the reason on the first line), 2 when the keys or revocations cannot be
read. ``new-key KID`` prints a new ``kid:key`` for ONSALE_TICKET_SIGNING_KEYS."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from onsale.core.ticket_token import (
    new_key_line,
    read_keys_document,
    read_revocations,
    unverified_event,
    verify,
)


class TicketCommandError(RuntimeError):
    """Keys or revocations that cannot be read or fetched; the message is one line."""


def add_parser(sub: Any) -> None:
    ticket = sub.add_parser("ticket", help="check a ticket at the gate, offline "
                            "(docs/tickets.md)")
    tsub = ticket.add_subparsers(dest="ticket_command", required=True)
    check = tsub.add_parser("verify", help="verify a ticket's signed value; exit 0 valid, "
                            "1 invalid (with the reason)")
    check.add_argument("value", help="the value the ticket's QR code holds (OT1.…)")
    source = check.add_mutually_exclusive_group(required=True)
    source.add_argument("--keys", type=Path, metavar="FILE",
                        help="the event's ticket-keys document (offline)")
    source.add_argument("--url", help="fetch the keys and the revocations from this "
                        "onsale (core or onsale dev)")
    check.add_argument("--revocations", type=Path, metavar="FILE",
                       help="the event's ticket-revocations document")
    check.add_argument("--json", action="store_true", help="the verdict as one JSON object")
    check.set_defaults(func=cmd_verify)
    key = tsub.add_parser("new-key", help="print a new kid:key for "
                          "ONSALE_TICKET_SIGNING_KEYS")
    key.add_argument("kid", help="its key id: 1-32 of A-Z a-z 0-9 _ -")
    key.set_defaults(func=cmd_new_key)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TicketCommandError(f"cannot read {path}: {exc}") from None


def _fetch(url: str) -> Any:
    try:
        r = httpx.get(url, timeout=10)
    except httpx.HTTPError as exc:
        raise TicketCommandError(f"cannot fetch {url}: {exc}") from None
    if r.status_code != 200:
        raise TicketCommandError(f"{url} answered {r.status_code}: {r.text[:200]}")
    return r.json()


def documents(args: argparse.Namespace) -> tuple[Any, Any | None]:
    """The keys document and the revocations document (None: not given)."""
    revocations = None if args.revocations is None else _read_json(args.revocations)
    if args.keys is not None:
        return _read_json(args.keys), revocations
    event = unverified_event(args.value)
    if event is None:
        return {"event_id": -1, "keys": []}, revocations  # verify() says it is malformed
    base = f"{args.url.rstrip('/')}/api/events/{event}"
    if revocations is None:
        revocations = _fetch(f"{base}/ticket-revocations")
    return _fetch(f"{base}/ticket-keys"), revocations


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        keys_doc, revocations_doc = documents(args)
        event, keys = read_keys_document(keys_doc)
        revoked: frozenset[str] = frozenset()
        if revocations_doc is not None:
            revoked_event, revoked = read_revocations(revocations_doc)
            if revoked_event != event:
                raise TicketCommandError(f"the revocations are for event {revoked_event}, "
                                         f"the keys for event {event}")
    except (TicketCommandError, ValueError) as exc:
        print(f"onsale ticket verify: {exc}", file=sys.stderr)
        return 2
    verdict = verify(args.value, keys, now=datetime.now(UTC), revoked=revoked,
                     event=None if event < 0 else event)
    if args.json:
        print(json.dumps({"valid": verdict.ok, "reason": verdict.reason,
                          "detail": verdict.detail,
                          "ticket": None if verdict.claims is None else asdict(verdict.claims)}))
    else:
        print(f"{verdict.reason}: {verdict.detail}")
        if verdict.claims is not None:
            c = verdict.claims
            where = f"seat {c.seat}" if c.seat is not None else \
                f"GA tier {c.ga_tier}, place {c.place}"
            print(f"event {c.event}, {where}, ticket {c.ticket}, order {c.order}, "
                  f"issued {c.issued_at}, key {c.kid}")
    return 0 if verdict.ok else 1


def cmd_new_key(args: argparse.Namespace) -> int:
    try:
        print(new_key_line(args.kid))
    except ValueError as exc:
        print(f"onsale ticket new-key: {exc}", file=sys.stderr)
        return 2
    return 0
