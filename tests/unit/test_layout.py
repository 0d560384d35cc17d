"""core.layout: generated venue layouts and the columnar venue document."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from functools import cache

import pytest

from onsale.core.layout import DEFAULT_TIERS, Seat, _row_label, generate, venue_document

SIZES = [1, 2, 3, 7, 10, 49, 50, 51, 99, 125, 126, 200, 333, 999, 1000, 1001, 4096, 12_345,
         50_000]
TIERS = [{"tier_id": i, "name": n, "price_minor": p}
         for i, (n, p) in enumerate(DEFAULT_TIERS, start=1)]


@cache
def _layout(total: int, tiers: int) -> tuple[Seat, ...]:
    return tuple(generate(total, tiers=tiers))


def layout(total: int, tiers: int = len(DEFAULT_TIERS)) -> tuple[Seat, ...]:
    """Generated once per (total, tiers) for the whole module."""
    return _layout(total, tiers)


# --- generate ------------------------------------------------------------------------------


@pytest.mark.parametrize("total", SIZES)
def test_exact_seat_count(total: int) -> None:
    assert len(layout(total)) == total


@pytest.mark.parametrize("total", SIZES)
def test_seat_ids_are_contiguous_and_in_order(total: int) -> None:
    assert [s.seat_id for s in layout(total)] == list(range(1, total + 1))


@pytest.mark.parametrize("total", SIZES)
def test_ranks_are_a_permutation(total: int) -> None:
    assert sorted(s.rank for s in layout(total)) == list(range(1, total + 1))


@pytest.mark.parametrize("total", SIZES)
def test_positions_are_unique(total: int) -> None:
    keys = {(s.section, s.row_label, s.number) for s in layout(total)}
    assert len(keys) == total


@pytest.mark.parametrize("total", SIZES)
def test_seat_ids_follow_section_row_number_order(total: int) -> None:
    seats = layout(total)

    def key(s: Seat) -> tuple[int, int, str, int]:
        return (int(s.section[1:]), len(s.row_label), s.row_label, s.number)

    assert sorted(seats, key=key) == list(seats)


@pytest.mark.parametrize("total", SIZES)
def test_field_shapes(total: int) -> None:
    for s in layout(total):
        assert s.section.startswith("S") and s.section[1:].isdigit()
        assert 1 <= int(s.section[1:]) <= 20
        assert s.row_label.isalpha() and s.row_label.isupper()
        assert 1 <= s.number <= 50
        assert math.isfinite(s.x) and math.isfinite(s.y)
        assert round(s.x, 2) == s.x and round(s.y, 2) == s.y


@pytest.mark.parametrize("total", SIZES)
def test_sections_are_numbered_from_one_without_gaps(total: int) -> None:
    sections = {int(s.section[1:]) for s in layout(total)}
    assert sections == set(range(1, len(sections) + 1))


@pytest.mark.parametrize("total", SIZES)
def test_rows_and_numbers_start_at_the_front_and_have_no_gaps(total: int) -> None:
    rows: dict[str, set[str]] = defaultdict(set)
    numbers: dict[tuple[str, str], list[int]] = defaultdict(list)
    for s in layout(total):
        rows[s.section].add(s.row_label)
        numbers[(s.section, s.row_label)].append(s.number)
    for labels in rows.values():
        assert labels == {_row_label(i) for i in range(len(labels))}
    for nums in numbers.values():
        assert nums == list(range(1, len(nums) + 1))


@pytest.mark.parametrize("tiers", [1, 2, 3, 5, 10])
@pytest.mark.parametrize("total", [1, 7, 200, 1000, 12_345])
def test_tiers_within_range(total: int, tiers: int) -> None:
    used = {s.tier_id for s in layout(total, tiers)}
    assert used <= set(range(1, tiers + 1))
    assert 1 in used


@pytest.mark.parametrize("tiers", [2, 3, 5, 10])
def test_every_tier_is_used_in_a_deep_venue(tiers: int) -> None:
    assert {s.tier_id for s in layout(12_345, tiers)} == set(range(1, tiers + 1))


def test_default_tiers_in_the_largest_venue() -> None:
    assert {s.tier_id for s in layout(50_000)} == {1, 2, 3}


def test_single_tier_means_tier_one_everywhere() -> None:
    assert {s.tier_id for s in layout(1000, 1)} == {1}


@pytest.mark.parametrize("total", [200, 1000, 50_000])
def test_tiers_never_improve_towards_the_back(total: int) -> None:
    by_column: dict[tuple[str, int], list[Seat]] = defaultdict(list)
    for s in layout(total):
        by_column[(s.section, s.number)].append(s)
    for column in by_column.values():
        tiers = [s.tier_id for s in column]  # front to back, seat ids ascend
        assert tiers == sorted(tiers)


@pytest.mark.parametrize("total", [7, 50, 200, 1000, 50_000])
def test_front_rows_rank_better_than_back_rows(total: int) -> None:
    by_column: dict[tuple[str, int], list[Seat]] = defaultdict(list)
    for s in layout(total):
        by_column[(s.section, s.number)].append(s)
    for column in by_column.values():
        ranks = [s.rank for s in column]
        assert ranks == sorted(ranks)


@pytest.mark.parametrize("total", [1, 7, 50, 200, 1000, 50_000])
def test_best_seat_is_front_row_and_premium(total: int) -> None:
    best = min(layout(total), key=lambda s: s.rank)
    assert best.row_label == "A"
    assert best.tier_id == 1


def test_best_seat_is_in_the_central_section() -> None:
    seats = layout(1000)  # three sections: S2 is the centre
    assert {s.section for s in seats} == {"S1", "S2", "S3"}
    assert min(seats, key=lambda s: s.rank).section == "S2"


@pytest.mark.parametrize("total", [2, 7, 50, 1000])
def test_generate_is_deterministic(total: int) -> None:
    assert generate(total) == generate(total)


@pytest.mark.parametrize("total", [7, 200, 1000, 50_000])
def test_seats_do_not_overlap(total: int) -> None:
    """Seats sit 1.1 apart in a row and 1.2 apart between rows; no two seats of the map
    may be drawn closer than half a seat pitch (let alone on the same spot)."""
    seats = layout(total)
    grid: dict[tuple[int, int], list[Seat]] = defaultdict(list)
    for s in seats:
        grid[(math.floor(s.x), math.floor(s.y))].append(s)
    too_close = []
    for (gx, gy), cell in grid.items():
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for a in cell:
                    for b in grid.get((gx + dx, gy + dy), ()):
                        if a.seat_id < b.seat_id and math.hypot(a.x - b.x, a.y - b.y) < 0.55:
                            too_close.append((a.seat_id, b.seat_id))
    same_spot = total - len({(s.x, s.y) for s in seats})
    assert not too_close, (
        f"{len(too_close)} seat pairs overlap ({same_spot} seats share an exact position), "
        f"e.g. {too_close[:3]}"
    )


@pytest.mark.parametrize("total", [0, -1])
def test_no_seats_is_an_error(total: int) -> None:
    with pytest.raises(ValueError):
        generate(total)


@pytest.mark.parametrize("tiers", [0, -3])
def test_no_tiers_is_an_error(tiers: int) -> None:
    with pytest.raises(ValueError):
        generate(10, tiers=tiers)


@pytest.mark.parametrize(
    ("index", "label"),
    [(0, "A"), (1, "B"), (25, "Z"), (26, "AA"), (27, "AB"), (51, "AZ"), (52, "BA"),
     (701, "ZZ"), (702, "AAA")],
)
def test_row_labels(index: int, label: str) -> None:
    assert _row_label(index) == label


def test_row_labels_are_distinct() -> None:
    labels = [_row_label(i) for i in range(2000)]
    assert len(set(labels)) == len(labels)


# --- venue_document ------------------------------------------------------------------------


def test_venue_document_is_columnar() -> None:
    seats = list(layout(7))
    body, _ = venue_document(42, seats, TIERS)
    doc = json.loads(body)
    assert doc["event_id"] == 42
    assert doc["seat_count"] == 7
    assert doc["tiers"] == TIERS
    assert doc["columns"] == ["seat_id", "section", "row", "number", "x", "y", "tier_id"]
    assert set(doc["seats"]) == set(doc["columns"])
    for column in doc["columns"]:
        assert len(doc["seats"][column]) == 7
    assert doc["seats"]["seat_id"] == [s.seat_id for s in seats]
    assert doc["seats"]["section"] == [s.section for s in seats]
    assert doc["seats"]["row"] == [s.row_label for s in seats]
    assert doc["seats"]["number"] == [s.number for s in seats]
    assert doc["seats"]["x"] == [s.x for s in seats]
    assert doc["seats"]["y"] == [s.y for s in seats]
    assert doc["seats"]["tier_id"] == [s.tier_id for s in seats]


def test_venue_document_does_not_leak_rank() -> None:
    body, _ = venue_document(1, list(layout(7)), TIERS)
    assert "rank" not in json.loads(body)["seats"]


def test_venue_document_is_compact() -> None:
    body, _ = venue_document(1, list(layout(50)), TIERS)
    assert ": " not in body and ", " not in body


def test_venue_document_rows_reassemble_to_seats() -> None:
    seats = list(layout(1000))
    doc = json.loads(venue_document(9, seats, TIERS)[0])
    cols = doc["seats"]
    rebuilt = [tuple(cols[c][i] for c in doc["columns"]) for i in range(doc["seat_count"])]
    assert rebuilt == [(s.seat_id, s.section, s.row_label, s.number, s.x, s.y, s.tier_id)
                       for s in seats]


def test_etag_shape() -> None:
    _, etag = venue_document(1, list(layout(7)), TIERS)
    assert len(etag) == 32
    int(etag, 16)


def test_etag_is_stable_for_the_same_input() -> None:
    a = venue_document(5, generate(200), TIERS)
    b = venue_document(5, generate(200), [dict(t) for t in TIERS])
    assert a == b


def test_etag_changes_when_the_input_changes() -> None:
    seats = list(layout(200))
    body, etag = venue_document(5, seats, TIERS)
    variants = [
        venue_document(6, seats, TIERS),
        venue_document(5, list(layout(201)), TIERS),
        venue_document(5, seats[:-1], TIERS),
        venue_document(5, seats, [{**TIERS[0], "price_minor": 15001}, *TIERS[1:]]),
        venue_document(5, seats, TIERS[:2]),
        venue_document(5, list(layout(200, 2)), TIERS),
        venue_document(5, [*seats[:-1], Seat(**{**seats[-1].__dict__, "x": seats[-1].x + 1})],
                       TIERS),
    ]
    etags = [etag, *(v[1] for v in variants)]
    assert len(set(etags)) == len(etags)
    assert all(v[0] != body for v in variants)
