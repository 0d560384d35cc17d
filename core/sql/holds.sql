-- name: hold_seats
SELECT status_code, body, lock_wait_ms, replayed FROM onsale_hold($1, $2, $3, $4, $5);

-- name: hold_best
SELECT status_code, body, lock_wait_ms, replayed FROM onsale_hold_best($1, $2, $3, $4, $5, $6, $7);

-- name: hold_ga
SELECT status_code, body, lock_wait_ms, replayed FROM onsale_ga_hold($1, $2, $3, $4, $5, $6, $7);

-- name: hold_ga_batch
-- core/ga_batch.py: one row per element, i from 1 in the order sent.
SELECT i, status_code, body, lock_wait_ms, replayed
FROM onsale_ga_hold_batch($1, $2::smallint, $3::uuid[], $4::text[], $5::text[], $6::integer[]);

-- name: hold_seats_batch
-- core/seat_batch.py: one row per element, i from 1 in the order sent; element i's
-- seats are the $5 whose $6 is i.
SELECT i, status_code, body, lock_wait_ms, replayed
FROM onsale_hold_batch($1, $2::uuid[], $3::text[], $4::text[], $5::integer[], $6::integer[]);

-- name: get_hold
SELECT hold_id, event_id, status, seats, ga, amount_minor, currency, expires_at, created_at,
       now() AS db_now
FROM holds WHERE hold_id = $1 AND account_id = $2;

-- name: release_hold
SELECT onsale_release($1, $2);

-- name: sweep
SELECT holds_expired, seats_released FROM onsale_sweep($1);

-- name: sweep_backlog
SELECT count(*) AS backlog,
       coalesce(extract(epoch FROM now() - min(expires_at)), 0)::float8 AS oldest_age
FROM holds WHERE status = 'HELD' AND expires_at <= now();

-- name: prune_idempotency
DELETE FROM idempotency_keys
WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys
                        WHERE created_at < now() - make_interval(secs => $1)
                        LIMIT $2));

-- name: close_abandoned_orders
-- An order whose payment never completed (declined, then nobody paid) ends
-- when its hold ends: expired or released by its owner.
WITH closed AS (
    UPDATE orders o SET status = 'FAILED', cancel_reason = 'hold_ended', updated_at = now()
    FROM holds h
    WHERE h.hold_id = o.hold_id AND o.status = 'PENDING'
      AND h.status IN ('EXPIRED', 'RELEASED')
    RETURNING o.order_id
)
INSERT INTO payment_events (order_id, action, detail)
SELECT order_id, 'order_closed', '{"reason": "hold_ended"}' FROM closed;

-- name: hold_event
-- The event of one of this account's holds (the gate checks the token against it).
SELECT event_id FROM holds WHERE hold_id = $1 AND account_id = $2;
