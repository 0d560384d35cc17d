"""The background loops' figures carry their shard (docs/operations.md#metrics)."""

from __future__ import annotations

from onsale.core.metrics import SHARDED, Metrics


def test_each_shard_view_labels_its_own_figures_in_one_registry() -> None:
    m = Metrics()
    two = m.for_shard(2)
    m.sweeper_backlog.set(3)  # a Metrics is shard 1's
    two.sweeper_backlog.set(7)
    two.reconciled.labels(action="resent").inc()
    two.outbox_published.inc(5)
    get = m.registry.get_sample_value
    assert get("onsale_sweeper_backlog_holds", {"shard": "1"}) == 3
    assert get("onsale_sweeper_backlog_holds", {"shard": "2"}) == 7
    assert get("onsale_payment_reconciled_total", {"shard": "2", "action": "resent"}) == 1
    assert get("onsale_outbox_published_total", {"shard": "2"}) == 5
    assert get("onsale_outbox_published_total", {"shard": "1"}) == 0
    assert two.registry is m.registry and two.hold_outcomes is m.hold_outcomes


def test_every_sharded_family_has_the_label() -> None:
    m = Metrics()
    for name in SHARDED:
        family = m._families[name]
        assert "shard" in family._labelnames, name
