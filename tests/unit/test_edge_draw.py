"""edge.draw: the commitment, the order, and the published-document check."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from onsale.core.draw_seed import commitment, new_seed, verify_commitment
from onsale.edge.draw import draw_key, draw_order, main, verify_document

SEED = "00" * 32
PEOPLE = [f"0000000{i}-0000-0000-0000-000000000000" for i in range(8)]


def test_commitment_is_sha256_hex_of_the_seed() -> None:
    assert commitment("abc") == hashlib.sha256(b"abc").hexdigest()
    assert verify_commitment("abc", commitment("abc"))
    assert not verify_commitment("abd", commitment("abc"))
    assert len(new_seed()) == 64 and new_seed() != new_seed()


def test_order_is_by_hmac_of_the_seed_over_each_id() -> None:
    key = hmac.new(SEED.encode(), PEOPLE[0].encode(), hashlib.sha256).hexdigest()
    assert draw_key(SEED, PEOPLE[0]) == key
    order = draw_order(SEED, PEOPLE)
    assert sorted(order) == sorted(PEOPLE)
    assert [draw_key(SEED, p) for p in order] == sorted(draw_key(SEED, p) for p in PEOPLE)


def test_order_does_not_depend_on_arrival_and_changes_with_the_seed() -> None:
    assert draw_order(SEED, PEOPLE) == draw_order(SEED, list(reversed(PEOPLE)))
    assert draw_order(SEED, PEOPLE + PEOPLE[:2]) == draw_order(SEED, PEOPLE)
    assert draw_order(SEED, PEOPLE) != draw_order("11" * 32, PEOPLE)


def test_a_published_document_checks_out_or_says_why_not() -> None:
    doc = {"seed": SEED, "commitment": commitment(SEED), "participants": PEOPLE,
           "order": draw_order(SEED, PEOPLE)}
    assert verify_document(doc) == []
    assert verify_document({**doc, "commitment": commitment("x")}) == [
        "sha256(seed) does not match the published commitment"]
    assert verify_document({**doc, "order": PEOPLE}) == [
        "the published order differs from the recomputed order"]
    assert verify_document({**doc, "seed": None}) == ["the seed is not revealed yet"]


def test_the_command_recomputes_the_order(tmp_path: Path, capsys: object) -> None:
    doc = {"seed": SEED, "commitment": commitment(SEED), "participants": PEOPLE,
           "order": draw_order(SEED, PEOPLE)}
    path = tmp_path / "draw.json"
    path.write_text(json.dumps(doc))
    assert main([str(path)]) == 0
    path.write_text(json.dumps({**doc, "order": PEOPLE}))
    assert main([str(path)]) == 1
    assert main([]) == 2


def test_the_command_takes_every_page_and_notices_a_missing_or_foreign_one(
        tmp_path: Path) -> None:
    base = {"seed": SEED, "commitment": commitment(SEED), "participant_count": len(PEOPLE)}
    half = len(PEOPLE) // 2
    one, two = tmp_path / "1.json", tmp_path / "2.json"
    one.write_text(json.dumps({**base, "participants": PEOPLE[:half]}))
    two.write_text(json.dumps({**base, "participants": PEOPLE[half:]}))
    assert main([str(one), str(two)]) == 0
    assert main([str(one)]) == 1
    other = "f" * 64
    two.write_text(json.dumps({**base, "seed": other, "commitment": commitment(other),
                               "participants": PEOPLE[half:]}))
    assert main([str(one), str(two)]) == 1
