-- 0007: shards and the directory (docs/scaling.md).
-- requires: onsale_new_id, onsale_shards_forward, onsale_placement_notify
--
-- Every database onsale writes inventory to is a shard; one of them, or a database of
-- its own, is also the directory: accounts, the event catalogue, the shard list and the
-- placement of each event. Every database gets the same tables; a shard that is not the
-- directory leaves the directory's tables empty. A single-database deployment is shard 1,
-- whose directory is the same database (onsale migrate records it there).
--
-- shard_identity: which shard this database is, and since when its ids carry the number
-- (onsale_new_id). Ids made before, by uuidv7() alone, are all shard 1's: a database that
-- already holds events becomes shard 1 here; an empty one is given its number by
-- onsale migrate (shard 1) or onsale shard add (the next free number).

CREATE TABLE shard_identity (
    only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    shard_id      smallint NOT NULL CHECK (shard_id BETWEEN 1 AND 32767),
    stamped_since timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO shard_identity (shard_id) SELECT 1 WHERE EXISTS (SELECT FROM events);

-- The directory's list. dsn '' is the directory's own database. The epoch only moves
-- forward: a failover raises it (docs/scaling.md#the-shard-list).
CREATE TABLE shards (
    shard_id      smallint PRIMARY KEY CHECK (shard_id BETWEEN 1 AND 32767),
    dsn           text NOT NULL,
    state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'retired')),
    epoch         bigint NOT NULL DEFAULT 1 CHECK (epoch >= 1),
    stamped_since timestamptz NOT NULL,
    added_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX shards_dsn_key ON shards (dsn);

CREATE TRIGGER shards_forward BEFORE UPDATE ON shards
    FOR EACH ROW EXECUTE FUNCTION onsale_shards_forward();

INSERT INTO shards (shard_id, dsn, stamped_since)
SELECT 1, '', stamped_since FROM shard_identity;

-- Where each event's inventory lives. A process caches it and is told of a change
-- (NOTIFY onsale_placement, payload the event id); nothing on a request's path reads it.
CREATE TABLE event_placement (
    event_id  bigint PRIMARY KEY REFERENCES events,
    shard_id  smallint NOT NULL REFERENCES shards,
    placed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_placement_shard_idx ON event_placement (shard_id);
INSERT INTO event_placement (event_id, shard_id) SELECT event_id, 1 FROM events;

CREATE TRIGGER event_placement_notify AFTER INSERT OR UPDATE OR DELETE ON event_placement
    FOR EACH ROW EXECUTE FUNCTION onsale_placement_notify();

-- Accounts live in the directory; a shard's holds and orders name them without a
-- foreign key (the session vouches for the account).
ALTER TABLE holds DROP CONSTRAINT holds_account_id_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_account_id_fkey;

-- New ids name their shard.
ALTER TABLE orders ALTER COLUMN order_id SET DEFAULT onsale_new_id();
ALTER TABLE payment_operations ALTER COLUMN operation_id SET DEFAULT onsale_new_id();
ALTER TABLE tickets ALTER COLUMN ticket_id SET DEFAULT onsale_new_id();
