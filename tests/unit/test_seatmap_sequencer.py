"""seatmap.sequencer: transactions → per-event deltas by commit LSN, replays, coalescing,
wire forms. Fed with the pgoutput messages captured from a real server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onsale.seatmap.pgoutput import (
    Begin,
    Commit,
    Insert,
    Message,
    Relation,
    Update,
    decode,
    format_lsn,
)
from onsale.seatmap.sequencer import (
    Entry,
    Heartbeat,
    Rebuild,
    SequenceError,
    Sequencer,
    coalesce,
    control_frame,
    delta_frame,
    parse_stream_entry,
    replay,
    stream_fields,
    stream_id,
)
from onsale.seatmap.snapshot import AVAILABLE, BLOCKED, HELD, SOLD, SeatMap

FIXTURE = Path(__file__).parent.parent / "fixtures" / "pgoutput.jsonl"
EXP = 1893553446  # 2030-01-02 03:04:05.678901+00, rounded up


def captured() -> list[tuple[str, object]]:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    return [(r["step"], decode(bytes.fromhex(r["payload"]))) for r in rows]


def run(seq: Sequencer) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for step, msg in captured():
        out.setdefault(step, []).extend(seq.feed(msg))  # type: ignore[arg-type]
    return out


def test_captured_stream_becomes_versioned_deltas() -> None:
    seq = Sequencer({})
    out = run(seq)
    new = out["create two events"]
    assert [(e.kind, e.event_id, e.reason) for e in new] == [  # type: ignore[attr-defined]
        ("reset", 1, "new"), ("reset", 2, "new")]
    created = new[0].to  # type: ignore[attr-defined]

    (hold,) = out["hold seats 1 and 2 of event 1"]
    assert isinstance(hold, Entry) and hold.kind == "delta"
    assert hold.frm == created and hold.to > created
    assert hold.changes == [(1, HELD, EXP), (2, HELD, EXP)]

    (sold,) = out["seat 1 to payment, then sold"]
    assert isinstance(sold, Entry)
    assert sold.frm == hold.to and sold.changes == [(1, SOLD, None)]  # last state wins
    (release,) = out["release seat 2"]
    assert isinstance(release, Entry) and release.changes == [(2, AVAILABLE, None)]
    assert out["a change to an unpublished column only"] == []  # nothing visible changed

    one, two = out["two events in one transaction"]
    assert isinstance(one, Entry) and isinstance(two, Entry)
    assert (one.event_id, one.frm, one.changes) == (1, release.to, [(3, BLOCKED, None)])
    assert (two.event_id, two.frm, two.changes) == (2, created, [(1, HELD, 1893553445)])
    assert one.to == two.to  # one transaction, one version

    (beat,) = out["heartbeat"]
    assert isinstance(beat, Heartbeat) and beat.content == b"beat-1"
    (freed,) = out["transactional message"]
    assert isinstance(freed, Entry) and freed.changes == [(1, AVAILABLE, None)]
    (gone,) = out["delete a seat"]
    assert isinstance(gone, Entry) and gone.changes == [(2, BLOCKED, None)]
    assert out["truncate"] == [Rebuild("seat_inventory was truncated")]
    assert seq.maps[1].version == one.to and seq.maps[2].version == gone.to
    assert seq.maps[1].status == b"304" and seq.maps[2].status == b"04"
    assert not seq.in_transaction and seq.position > gone.to


def test_replayed_transactions_are_recognised_by_lsn() -> None:
    first = Sequencer({})
    published = [e for step in run(first).values() for e in step if isinstance(e, Entry)]
    # A restart: state as published, and the server sends everything again.
    maps = {k: m.copy() for k, m in first.maps.items()}
    again = Sequencer(maps)
    replayed = [e for step in run(again).values() for e in step if isinstance(e, Entry)]
    # Every (event, transaction) is skipped: the deltas, the two creations, the no-op.
    assert replayed == [] and again.replayed == len(published) + 1
    assert {k: m.status for k, m in again.maps.items()} == {
        k: m.status for k, m in first.maps.items()}


def test_partial_replay_publishes_only_what_is_new() -> None:
    msgs = [m for _, m in captured()]
    full = Sequencer({})
    entries = [e for m in msgs for e in full.feed(m) if isinstance(e, Entry)]  # type: ignore[arg-type]
    # Published up to the third entry, then crashed: state and versions at that point.
    upto = entries[3]
    partial = Sequencer({})
    for m in msgs:
        partial.feed(m)  # type: ignore[arg-type]
        if isinstance(m, Commit) and m.commit_lsn == upto.to:
            break
    resumed = Sequencer(partial.maps)
    again = [e for m in msgs for e in resumed.feed(m) if isinstance(e, Entry)]  # type: ignore[arg-type]
    assert again == entries[4:]


def _rel() -> Relation:
    return next(m for _, m in captured() if isinstance(m, Relation))


def test_a_change_to_an_unloaded_event_asks_for_a_rebuild() -> None:
    rel = _rel()
    seq = Sequencer({})
    seq.feed(rel)
    seq.feed(Begin(500, 0, 9))
    seq.feed(Update(rel.oid, None, ("42", "1", "SOLD", None)))
    assert seq.feed(Commit(0, 500, 520, 0)) == [
        Rebuild("a change to event 42, which is not loaded")]


def test_rows_of_other_tables_and_foreign_messages_are_ignored() -> None:
    seq = Sequencer({1: SeatMap(1, 10, bytearray(b"0"))})
    seq.feed(Begin(500, 0, 9))
    seq.feed(Insert(999, ("x",)))
    assert seq.feed(Commit(0, 500, 520, 0)) == []
    assert seq.feed(Message(False, 600, "someone.else", b"")) == []
    assert seq.position == 601


def d(frm: int, to: int, *changes: tuple[int, int, int | None]) -> Entry:
    return Entry("delta", 1, frm, to, list(changes))


def test_coalesce_spans_the_tick_and_keeps_each_seats_last_state() -> None:
    merged = coalesce([d(10, 20, (5, HELD, 99), (6, HELD, 99)), d(20, 30, (5, AVAILABLE, None)),
                       d(30, 40, (1, SOLD, None))])
    assert (merged.frm, merged.to) == (10, 40)
    assert merged.changes == [(1, SOLD, None), (5, AVAILABLE, None), (6, HELD, 99)]
    single = d(1, 2)
    assert coalesce([single]) is single
    with pytest.raises(SequenceError):
        coalesce([d(10, 20), d(21, 30)])
    with pytest.raises(SequenceError):
        coalesce([])


def test_replay_applies_stored_deltas_after_a_snapshot() -> None:
    m = SeatMap(1, 20, bytearray(b"000"))
    replay(m, [d(10, 20, (1, SOLD, None)), d(20, 30, (2, HELD, 7)), d(30, 40, (2, SOLD, None))])
    assert (m.version, m.status, m.expires) == (40, bytearray(b"030"), {})  # 10→20 was in it
    with pytest.raises(SequenceError):
        replay(m, [d(41, 50)])
    with pytest.raises(SequenceError):
        replay(m, [Entry("reset", 1, None, 60)])


def test_wire_forms() -> None:
    delta = d(0x1_0000_0010, 0x1_0000_0020, (3, HELD, 1800000000), (4, AVAILABLE, None))
    assert stream_id(delta) == f"{0x1_0000_0020}-0"
    fields = stream_fields(delta)
    assert fields == {"k": "d", "f": "1/10", "t": "1/20", "c": "[[3,1,1800000000],[4,0]]"}
    raw = {k.encode(): v.encode() for k, v in fields.items()}
    assert parse_stream_entry(1, raw) == delta
    reset = Entry("reset", 1, None, 77, reason="rebuild")
    raw = {k.encode(): v.encode() for k, v in stream_fields(reset).items()}
    assert parse_stream_entry(1, raw) == reset
    frame = json.loads(delta_frame(delta))
    assert frame == {"type": "delta", "event_id": 1, "from": "1/10", "to": "1/20",
                     "changes": [[3, 1, 1800000000], [4, 0]]}
    assert json.loads(control_frame("reload", reason="overflow")) == {
        "type": "reload", "reason": "overflow"}
    assert format_lsn(delta.to) == frame["to"]


def test_a_publication_without_the_columns_a_map_needs_is_refused() -> None:
    from onsale.seatmap.pgoutput import Column, Relation
    from onsale.seatmap.sequencer import Sequencer

    def relation(name: str, *columns: str) -> Relation:
        return Relation(1, "public", name, "d",
                        tuple(Column(i == 0, c, 23, -1) for i, c in enumerate(columns)))

    seq = Sequencer({})
    seq.feed(relation("ga_buckets", "event_id", "tier_id", "stripe", "available"))  # complete
    seq.feed(relation("other_table", "x"))  # not ours: ignored
    for name, columns in (("seat_inventory", ("event_id", "seat_id", "status")),
                          ("ga_buckets", ("event_id", "tier_id", "stripe"))):
        try:
            seq.feed(relation(name, *columns))
        except ValueError as exc:
            assert name in str(exc) and "the server sent" in str(exc)
        else:
            raise AssertionError(f"{name} without all its columns was accepted")
