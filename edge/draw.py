"""The auditable random draw of a pre-queue (pure; also a command anyone can run).

Before the sale opens the event publishes ``commitment = sha256(seed)`` (hex
of the seed's ASCII bytes). When the sale opens, everyone in the pre-queue is
ordered by ``HMAC-SHA256(key=seed, msg=participant_id)`` (hex, ascending;
ties, which do not happen in practice, by the id itself) and given places 1..n
in that order. After the draw the seed and the participant ids are published,
so anyone can check the commitment and recompute the order:

    python -m onsale.edge.draw draw.json          # the document GET .../queue/draw returns

prints the order and exits 1 if the seed does not match its commitment or
the recomputed order differs from the published one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from onsale.core.draw_seed import verify_commitment


def draw_key(seed: str, participant: str) -> str:
    return hmac.new(seed.encode("ascii"), participant.encode("ascii"), hashlib.sha256).hexdigest()


def draw_order(seed: str, participants: Iterable[str]) -> list[str]:
    """The participants in drawn order (duplicates counted once)."""
    return sorted(set(participants), key=lambda p: (draw_key(seed, p), p))


def verify_document(doc: dict[str, object]) -> list[str]:
    """Problems found in a published draw document (empty: it checks out)."""
    problems: list[str] = []
    seed, published = doc.get("seed"), doc.get("commitment")
    participants, order = doc.get("participants"), doc.get("order")
    if not isinstance(seed, str) or not isinstance(published, str):
        return ["the seed is not revealed yet"]
    if not verify_commitment(seed, published):
        problems.append("sha256(seed) does not match the published commitment")
    if not isinstance(participants, list) or not all(isinstance(p, str) for p in participants):
        return [*problems, "participants must be a list of ids"]
    recomputed = draw_order(seed, participants)
    if order is not None and order != recomputed:
        problems.append("the published order differs from the recomputed order")
    return problems


def merge_pages(pages: list[dict[str, object]]) -> tuple[dict[str, object], list[str]]:
    """One document from the pages of a published draw, and what is wrong
    with them as a set (a missing page, or pages of different draws)."""
    problems: list[str] = []
    first = pages[0]
    participants: list[object] = []
    for page in pages:
        if (page.get("seed"), page.get("commitment")) != (first.get("seed"),
                                                           first.get("commitment")):
            problems.append("the pages are not from the same draw")
        found = page.get("participants")
        participants += found if isinstance(found, list) else []
    count = first.get("participant_count")
    if isinstance(count, int) and count != len(participants):
        problems.append(f"{len(participants)} participants in the pages, {count} published: "
                        "fetch every page (follow `next`)")
    return {**first, "participants": participants}, problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m onsale.edge.draw DRAW_JSON_FILE... (every page; - for stdin)",
              file=sys.stderr)
        return 2
    pages = [json.loads(sys.stdin.read() if a == "-" else Path(a).read_text()) for a in args]
    doc, problems = merge_pages(pages)
    problems += verify_document(doc)
    seed, participants = doc.get("seed"), doc.get("participants")
    if isinstance(seed, str) and isinstance(participants, list):
        for place, participant in enumerate(draw_order(seed, map(str, participants)), 1):
            print(place, participant)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
