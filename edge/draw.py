"""The auditable random draw of a pre-queue (pure; also a command anyone can run).

Before the sale opens the event publishes ``commitment = sha256(seed)`` (hex
of the seed's ASCII bytes) and, with a beacon (``ONSALE_BEACON``), the public
randomness beacon round it will mix in: the first round of a named drand chain
due after the sale opens. When the sale opens the pre-queue closes; the draw's
key is ``sha256(seed ‖ randomness)`` (hex; the seed's ASCII bytes, then the
round's 32 bytes of randomness), or the seed alone without a beacon or after the
operator's recorded fallback. Everyone in the pre-queue is ordered by
``HMAC-SHA256(key=key, msg=participant_id)`` (hex, ascending; ties, which do
not happen in practice, by the id itself) and given places 1..n in that order.
After the draw the seed, the round's signature and the participant ids are
published, so anyone can check the commitment, the round against the chain's
public key (offline), and recompute the order:

    python -m onsale.edge.draw draw.json          # the document GET .../queue/draw returns

prints the order and exits 1 if the seed does not match its commitment, the
round is not the chain's or not the one due, or the recomputed order differs
from the published one. A draw by the seed alone is said so on stderr.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from onsale.core.draw_seed import verify_commitment
from onsale.edge.beacon import BeaconError, Round, verify
from onsale.kernel.beacon_chain import KNOWN_HASHES, ChainError, chain_from_info, round_to_draw
from onsale.kernel.timefmt import parse_utc_iso


def draw_key(seed: str, participant: str) -> str:
    return hmac.new(seed.encode("ascii"), participant.encode("ascii"), hashlib.sha256).hexdigest()


def draw_order(seed: str, participants: Iterable[str]) -> list[str]:
    """The participants in drawn order (duplicates counted once)."""
    return sorted(set(participants), key=lambda p: (draw_key(seed, p), p))


def mixed_key(seed: str, randomness: bytes) -> str:
    """The key of a draw with a beacon round: sha256(seed ‖ randomness), hex."""
    return hashlib.sha256(seed.encode("ascii") + randomness).hexdigest()


def draw_key_of(seed: str, outcome: dict[str, Any] | None) -> str:
    """The key a draw orders by: the seed mixed with the beacon round's randomness, or
    the seed alone (no beacon committed, or the operator's fallback)."""
    if outcome is None or "fallback" in outcome:
        return seed
    return mixed_key(seed, bytes.fromhex(str(outcome["randomness"])))


def check_beacon(beacon: Any) -> tuple[str | None, list[str], list[str]]:
    """The key material of a published draw's ``beacon`` (the round's randomness, hex;
    None: the seed alone), the problems found, and notes for the reader."""
    if beacon is None:
        return None, [], ["no beacon: the draw is by the operator's seed alone, which the "
                          "operator knew before the draw"]
    try:
        committed, outcome = beacon["commitment"], beacon["outcome"]
        chain = chain_from_info(committed["chain"])
        closed_at = parse_utc_iso(str(beacon["closed_at"])).timestamp()
    except (KeyError, TypeError, ValueError, ChainError) as exc:
        return None, [f"the beacon part is malformed ({exc})"], []
    notes: list[str] = []
    known = KNOWN_HASHES.get(chain.hash)
    if known is None:
        notes.append(f"chain {chain.hash[:16]}… is not one this verifier knows: its public "
                     "key is the document's word")
    if outcome is None:
        return None, ["the beacon round is not recorded yet"], notes
    if "fallback" in outcome:
        notes.append(f"the operator drew with the seed alone, without the committed round "
                     f"{committed['round']}: {outcome['fallback'].get('reason')!s}")
        return None, [], notes
    due = round_to_draw(committed, closed_at)
    problems = []
    got = Round(int(outcome["round"]), str(outcome["signature"]),
                str(outcome.get("previous_signature") or ""))
    if got.number != due:
        problems.append(f"the draw used round {got.number}, not round {due}, the first due "
                        "after both the commitment's round and the pre-queue's close")
    try:
        randomness = verify(chain, got).hex()
    except BeaconError as exc:
        return None, [*problems, f"the beacon round does not check out: {exc}"], notes
    if randomness != outcome.get("randomness"):
        problems.append("the published randomness is not sha256 of the round's signature")
    return randomness, problems, notes


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
    randomness, found, _ = check_beacon(doc.get("beacon"))
    problems += found
    key = seed if randomness is None else mixed_key(seed, bytes.fromhex(randomness))
    recomputed = draw_order(key, participants)
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
        if ((page.get("seed"), page.get("commitment"), page.get("beacon"))
                != (first.get("seed"), first.get("commitment"), first.get("beacon"))):
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
    randomness, _, notes = check_beacon(doc.get("beacon"))
    for note in notes:
        print(f"NOTE: {note}", file=sys.stderr)
    seed, participants = doc.get("seed"), doc.get("participants")
    if isinstance(seed, str) and isinstance(participants, list):
        key = seed if randomness is None else mixed_key(seed, bytes.fromhex(randomness))
        for place, participant in enumerate(draw_order(key, map(str, participants)), 1):
            print(place, participant)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
