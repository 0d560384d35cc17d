-- Named queries of the seat-map change capture (seatmap/cdc.py, seatmap/routes.py).

-- name: publication_exists
SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1);

-- name: create_publication
-- Only the columns a seat map shows: smaller messages, less to decode. The
-- replica identity (the primary key) must be in the list.
CREATE PUBLICATION {publication} FOR TABLE seat_inventory (event_id, seat_id, status, hold_expires_at),
    ga_buckets (event_id, tier_id, stripe, available);

-- name: publication_has_ga
SELECT EXISTS (SELECT 1 FROM pg_publication_tables
               WHERE pubname = $1 AND schemaname = 'public' AND tablename = 'ga_buckets');

-- name: publication_add_ga
-- A publication made before general admission: its GA stripes join it.
ALTER PUBLICATION {publication} ADD TABLE ga_buckets (event_id, tier_id, stripe, available);

-- name: slot
SELECT slot_name, plugin, database, active, active_pid,
       confirmed_flush_lsn::text AS confirmed_flush_lsn, wal_status,
       invalidation_reason,
       GREATEST(pg_current_wal_lsn() - confirmed_flush_lsn, 0)::bigint AS lag_bytes,
       pg_current_wal_lsn()::text AS current_lsn
FROM pg_replication_slots WHERE slot_name = $1;

-- name: drop_slot
SELECT pg_drop_replication_slot($1);

-- name: try_lease
-- One consumer per slot: a session advisory lock, released when the session ends.
SELECT pg_try_advisory_lock(hashtextextended('onsale.seatmap.cdc:' || $1, 0));

-- name: heartbeat
-- A WAL record in this database that pgoutput passes on (prefix onsale.seatmap):
-- a quiet database still moves the slot, and its round trip measures the lag.
SELECT pg_logical_emit_message(false, 'onsale.seatmap', $1)::text;

-- name: load_inventory
SELECT event_id, seat_id, status, hold_expires_at FROM seat_inventory ORDER BY event_id, seat_id;

-- name: load_places
SELECT event_id, tier_id, stripe, available FROM ga_buckets ORDER BY event_id, tier_id, stripe;

-- name: event_places
SELECT tier_id, stripe, available FROM ga_buckets WHERE event_id = $1 ORDER BY tier_id, stripe;

-- name: event_inventory
SELECT seat_id, status, hold_expires_at FROM seat_inventory WHERE event_id = $1 ORDER BY seat_id;

-- name: current_lsn
SELECT pg_current_wal_lsn()::text;
