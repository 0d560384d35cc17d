"""Change capture per shard, the pure parts: slot names, the consumers a shard list asks
for, moves, the events a shard's consumer skips, and each shard's own keys."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from onsale.kernel.placement import Placement, ShardRow
from onsale.seatmap.bus import ALIVE, EPOCH, EVENTS, META, capture_keys
from onsale.seatmap.pgoutput import Begin, Column, Commit, Insert, Relation, Update
from onsale.seatmap.queries import identifier
from onsale.seatmap.sequencer import Entry, Rebuild, Sequencer
from onsale.seatmap.shard_plan import Target, capturing, foreign, plan, slot_name, targets
from onsale.seatmap.snapshot import SeatMap

DIRECTORY = "postgresql://dir/onsale"
S2 = "postgresql://pg2/onsale"
S3 = "postgresql://pg3/onsale"


def shards(*rows: ShardRow) -> dict[int, ShardRow]:
    return {r.shard_id: r for r in rows}


def test_shard_1_keeps_the_configured_slot_and_each_other_shard_gets_its_own() -> None:
    assert slot_name("onsale_seatmap", 1) == "onsale_seatmap"
    names = {slot_name("onsale_seatmap", n) for n in range(1, 200)}
    assert len(names) == 199  # two shards on one server never share a slot
    assert slot_name("onsale_seatmap", 2) == "onsale_seatmap_s2"


def test_a_long_slot_name_is_shortened_to_stay_an_identifier() -> None:
    base = "x" * 63
    for shard_id in (2, 32767):
        name = slot_name(base, shard_id)
        assert identifier(name) == name and name.endswith(f"_s{shard_id}")
    assert slot_name(base, 2) != slot_name(base, 3)


def test_every_shard_not_retired_is_captured_from_its_own_dsn() -> None:
    listed = shards(ShardRow(1, ""), ShardRow(2, S2, epoch=3), ShardRow(3, S3, "retired"))
    assert capturing(listed) == [1, 2]
    found = targets(listed, DIRECTORY, None)
    assert found == {1: Target(1, DIRECTORY, DIRECTORY, 1), 2: Target(2, S2, S2, 3)}


def test_the_replication_url_setting_is_shard_1s_alone() -> None:
    listed = shards(ShardRow(1, ""), ShardRow(2, S2))
    found = targets(listed, DIRECTORY, "postgresql://replicator@dir/onsale")
    assert found[1].replication_dsn == "postgresql://replicator@dir/onsale"
    assert found[1].dsn == DIRECTORY
    assert found[2].replication_dsn == S2


def test_a_shard_added_later_is_started_and_the_running_ones_are_left_alone() -> None:
    before = Placement(shards(ShardRow(1, "")))
    after = Placement(shards(ShardRow(1, ""), ShardRow(2, S2)))
    running = targets(before.shards, DIRECTORY, None)
    steps = plan(running, targets(after.shards, DIRECTORY, None), before, after)
    assert steps.start == (Target(2, S2, S2, 1),)
    assert steps.stop == () and steps.rebuild == {}
    # Read again with nothing changed: nothing to do.
    again = plan(targets(after.shards, DIRECTORY, None), targets(after.shards, DIRECTORY, None),
                 after, after)
    assert (again.start, again.stop, again.rebuild) == ((), (), {})


def test_a_new_dsn_or_epoch_restarts_the_consumer_and_a_retired_shard_stops() -> None:
    first = Placement(shards(ShardRow(1, ""), ShardRow(2, S2), ShardRow(3, S3)))
    running = targets(first.shards, DIRECTORY, None)
    failed_over = Placement(shards(ShardRow(1, ""), ShardRow(2, "postgresql://pg2b/onsale",
                                                              epoch=2),
                                   ShardRow(3, S3, "retired")))
    steps = plan(running, targets(failed_over.shards, DIRECTORY, None), first, failed_over)
    assert steps.stop == (2, 3)
    assert steps.start == (Target(2, "postgresql://pg2b/onsale", "postgresql://pg2b/onsale", 2),)
    raised = Placement(shards(ShardRow(1, "", epoch=2), ShardRow(2, S2), ShardRow(3, S3)))
    assert plan(running, targets(raised.shards, DIRECTORY, None), first, raised).stop == (1,)


def test_an_event_moved_onto_a_shard_makes_that_shards_consumer_rebuild() -> None:
    listed = shards(ShardRow(1, ""), ShardRow(2, S2))
    before = Placement(listed, {7: 1, 8: 1, 9: 2})
    after = Placement(listed, {7: 2, 8: 1, 9: 2, 10: 2})  # 7 moved; 10 is new
    running = targets(listed, DIRECTORY, None)
    assert plan(running, running, before, after).rebuild == {2: (7,)}
    assert plan(running, running, None, after).rebuild == {}  # the first reading


def test_a_consumer_skips_only_events_placed_on_another_shard() -> None:
    placement = Placement(shards(ShardRow(1, ""), ShardRow(2, S2)), {7: 1, 8: 2})
    assert not foreign(7, 1, placement)
    assert foreign(8, 1, placement)
    assert not foreign(8, 2, placement)
    assert not foreign(99, 1, placement)  # not placed yet: a new event of this shard


def _rel() -> Relation:
    cols = tuple(Column(False, n, 23, -1)
                 for n in ("event_id", "seat_id", "status", "hold_expires_at"))
    return Relation(100, "public", "seat_inventory", "d", cols)


def test_the_sequencer_ignores_the_rows_of_skipped_events() -> None:
    seq = Sequencer({7: SeatMap(7, 10, bytearray(b"00"))}, skip=lambda e: e == 8)
    seq.feed(_rel())
    seq.feed(Begin(50, 0, 1))
    seq.feed(Update(100, None, ["7", "1", "SOLD", None]))
    seq.feed(Update(100, None, ["8", "1", "SOLD", None]))  # not loaded, but skipped
    seq.feed(Insert(100, ["8", "3", "AVAILABLE", None]))
    out = seq.feed(Commit(0, 50, 60, 0))
    assert not any(isinstance(o, Rebuild) for o in out)
    assert [(o.event_id, o.changes) for o in out if isinstance(o, Entry)] == [(7, [(1, 3, None)])]
    assert 8 not in seq.maps


def test_each_shard_has_its_own_capture_keys_in_one_slot() -> None:
    first = capture_keys(1)
    assert (first.meta, first.events, first.alive) == (META, EVENTS, ALIVE)  # as before shards
    second, third = capture_keys(2), capture_keys(3)
    keys = [k for c in (first, second, third) for k in (c.meta, c.events, c.alive)]
    assert len(set(keys)) == len(keys)
    # The meta hashes, the event lists and the epoch counter share one slot: the epoch
    # script and the published mark each touch one slot.
    assert len({key_slot(k.encode()) for c in (first, second, third)
                for k in (c.meta, c.events)} | {key_slot(EPOCH.encode())}) == 1


def test_a_cdc_process_can_be_given_some_shards() -> None:
    """ONSALE_SEATMAP_SHARDS: one cdc process per busy shard spreads the consumers."""
    from onsale.kernel.placement import ShardRow
    from onsale.seatmap.config import shard_numbers

    listed = {1: ShardRow(1, ""), 2: ShardRow(2, "postgresql://s2/onsale"),
              3: ShardRow(3, "postgresql://s3/onsale", state="retired")}
    assert shard_numbers("") is None and shard_numbers(" 2, 3 ") == frozenset({2, 3})
    assert capturing(listed, shard_numbers("2,3")) == [2]  # a retired one still not
    assert sorted(targets(listed, DIRECTORY, None, frozenset({1}))) == [1]
    assert capturing(listed, None) == [1, 2]
    for bad in ("0", "x", "2,40000"):
        with pytest.raises(ValueError):
            shard_numbers(bad)
