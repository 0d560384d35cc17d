-- name: try_relay_lock
-- One publishing relay at a time, so batches reach the stream in order. The
-- two-int4 key space is separate from the bigint per-account keys of 0002.
SELECT pg_try_advisory_xact_lock(1869574516, 1);

-- name: claim_batch
-- The lowest unpublished rows, cut at the first one whose writer may still
-- have company: a row is ready once its transaction is older than every
-- transaction still running (txid < snapshot xmin). Rows after a row that is
-- not ready wait for it, so a lower id is never overtaken (docs/outbox.md).
WITH horizon AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin
), head AS (
    SELECT o.outbox_id, o.txid < h.xmin AS ready
    FROM outbox o CROSS JOIN horizon h
    WHERE o.published_at IS NULL
    ORDER BY o.outbox_id
    LIMIT $1
), cut AS (
    SELECT coalesce(min(outbox_id) FILTER (WHERE NOT ready), 9223372036854775807) AS outbox_id
    FROM head
)
SELECT o.outbox_id, o.event_id, o.aggregate_id, o.event_type, o.payload, o.created_at
FROM outbox o
WHERE o.published_at IS NULL
  AND o.outbox_id IN (SELECT head.outbox_id FROM head WHERE head.ready)
  AND o.outbox_id < (SELECT cut.outbox_id FROM cut)
ORDER BY o.outbox_id
FOR UPDATE OF o SKIP LOCKED;

-- name: mark_published
UPDATE outbox SET published_at = now() WHERE outbox_id = ANY ($1::bigint[]);

-- name: backlog
SELECT count(*) AS backlog,
       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_age
FROM outbox WHERE published_at IS NULL;

-- name: prune
-- Published rows past retention, taken from the low end of the primary key
-- (ids grow with time; there is no index on published_at). The caller
-- repeats while a batch deletes anything.
WITH head AS (
    SELECT outbox_id FROM outbox ORDER BY outbox_id LIMIT $2
)
DELETE FROM outbox o
USING head
WHERE o.outbox_id = head.outbox_id
  AND o.published_at IS NOT NULL
  AND o.published_at < now() - make_interval(secs => $1);
