-- 0008: a shard that fails over pauses its sales until onsale has resumed it
-- (docs/operations.md#failover).
--
-- shard_identity.timeline: the PostgreSQL timeline this shard was last resumed on. A
-- promotion starts a new timeline; while the primary's is higher, the shard has failed
-- over and not been resumed yet, and onsale_shard_serving() refuses new holds and
-- checkouts (503 inventory_unavailable). The worker's resume (core/failover.py) raises it
-- once the change capture, the reconciler and the audit have run on the new primary.
--
-- shards.patroni: the REST API of each Patroni node of the shard, when it is a Patroni
-- cluster ('{}' for a single server): onsale shard list shows the members, onsale shard
-- switchover asks the leader.

ALTER TABLE shard_identity ADD COLUMN timeline bigint NOT NULL DEFAULT 1
    CHECK (timeline >= 1);
ALTER TABLE shards ADD COLUMN patroni text[] NOT NULL DEFAULT '{}';
