"""core.event_rows: which of an event's tables move, in which order, and the
statements made for each."""

from __future__ import annotations

from onsale.core.event_rows import (
    EVENT_TABLES,
    checksum_sql,
    read_sql,
    tables_on,
    write_sql,
)


def names(tables: tuple[object, ...]) -> list[str]:
    return [t.name for t in tables]  # type: ignore[attr-defined]


def test_the_directory_keeps_its_catalogue_rows() -> None:
    assert names(tables_on(shard_is_directory=False)) == [
        "events", "venue_layouts", "price_tiers", "seats", "seat_inventory", "ga_tiers",
        "ga_buckets", "ga_rebalances"]
    assert names(tables_on(shard_is_directory=True)) == [
        "price_tiers", "seats", "seat_inventory", "ga_tiers", "ga_buckets", "ga_rebalances"]


def test_each_table_comes_after_what_its_foreign_keys_name() -> None:
    order = names(EVENT_TABLES)
    for child, parent in [("price_tiers", "events"), ("seats", "events"),
                          ("seat_inventory", "seats"), ("ga_tiers", "events"),
                          ("ga_buckets", "ga_tiers"), ("venue_layouts", "events")]:
        assert order.index(parent) < order.index(child), (child, parent)


def test_a_per_database_id_is_left_out_of_the_copy_and_the_checksum() -> None:
    rebalances = next(t for t in EVENT_TABLES if t.name == "ga_rebalances")
    assert "to_jsonb(t) - 'rebalance_id'" in read_sql(rebalances)
    assert "to_jsonb(t) - 'rebalance_id'" in checksum_sql(rebalances)
    seats = next(t for t in EVENT_TABLES if t.name == "seats")
    assert "ORDER BY seat_id" in read_sql(seats) and "ORDER BY seat_id" in checksum_sql(seats)
    written = write_sql(seats, ["event_id", "seat_id"])
    assert written.startswith('INSERT INTO seats ("event_id", "seat_id") OVERRIDING SYSTEM')
    assert "ORDER BY r.ordinality" in written
