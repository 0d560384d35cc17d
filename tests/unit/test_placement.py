"""onsale.kernel.placement: an event's shard, an id's shard, a new event's home."""

from __future__ import annotations

import uuid

import pytest

from onsale.kernel.placement import (
    Home,
    Placement,
    ShardRow,
    choose_shard,
    home_of_new_event,
    masked_dsn,
    shard_refusal,
)
from onsale.kernel.shard_ids import stamp

MADE = uuid.UUID("019ade7a-9480-7123-8abc-def012345678")  # 1764669166720 ms
TWO = {1: ShardRow(1, "", stamped_since_ms=1764669166000),
       2: ShardRow(2, "postgresql://shard2/onsale", stamped_since_ms=1764669166500)}


def test_an_event_lives_where_it_was_placed() -> None:
    p = Placement(TWO, {7: 2, 8: 1})
    assert (p.shard_of_event(7), p.shard_of_event(8), p.shard_of_event(9)) == (2, 1, None)
    assert p.with_event(9, 2).shard_of_event(9) == 2
    assert p.shard_of_event(9) is None  # the value is not changed in place


def test_with_one_shard_every_event_is_its_own() -> None:
    p = Placement({1: ShardRow(1, "")})
    assert p.shard_of_event(12345) == 1


def test_an_id_names_a_listed_shard_or_none() -> None:
    p = Placement(TWO)
    assert p.shard_of_id(stamp(MADE, 2)) == 2
    assert p.shard_of_id(stamp(MADE, 3)) is None      # no shard 3
    assert p.shard_of_id(uuid.uuid4()) is None        # not a UUIDv7
    legacy = Placement({1: ShardRow(1, "", stamped_since_ms=1764669166721), 2: TWO[2]})
    assert legacy.shard_of_id(MADE) == 1              # made before shard 1 stamped ids


def test_a_new_event_goes_to_the_active_shard_with_fewest_events_on_sale() -> None:
    three = {**TWO, 3: ShardRow(3, "x", state="retired")}
    assert choose_shard(three, {1: 4, 2: 1, 3: 0}) == 2
    assert choose_shard(three, {1: 1, 2: 1}) == 1
    assert choose_shard(three, {}) == 1
    with pytest.raises(ValueError):
        choose_shard({3: three[3]}, {})


def test_a_shard_asked_for_must_be_listed_and_active() -> None:
    three = {**TWO, 3: ShardRow(3, "x", state="retired")}
    assert [shard_refusal(three, s) for s in (1, 2, 3, 4)] == [
        None, None, "shard_not_active", "shard_not_found"]
    # Asked for: that shard even if it is the busiest; refused if it cannot take events.
    assert home_of_new_event(three, {2: 9}, 2) == Home(2)
    assert home_of_new_event(three, {}, 3) == Home(None, "shard_not_active")
    assert home_of_new_event(three, {}, 4) == Home(None, "shard_not_found")
    # Not asked for: the fewest on sale; none active at all is refused.
    assert home_of_new_event(three, {1: 2, 2: 1}, None) == Home(2)
    assert home_of_new_event({3: three[3]}, {}, None) == Home(None, "shard_not_active")


def test_a_printed_dsn_hides_its_password() -> None:
    assert masked_dsn("postgresql://onsale:s3cret@db2:5433/onsale?sslmode=require") == (
        "postgresql://onsale:***@db2:5433/onsale?sslmode=require")
    assert masked_dsn("postgresql://db2/onsale") == "postgresql://db2/onsale"
    assert masked_dsn("") == "(the directory's database)"
