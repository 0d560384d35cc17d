-- name: orders_of_account
-- One shard's part of a page of an account's orders ($1), newest first: those older
-- than the cursor ($2 created_at, $3 order_id; NULL: from the newest), at most $4
-- (core/order_list_rules.py merges the shards' parts). orders_account_idx serves it.
SELECT o.order_id, o.event_id, e.name AS event_name, e.venue_name, e.time_zone,
       e.starts_at,
       o.status, o.payment_status, o.amount_minor, o.currency, o.created_at,
       o.updated_at, h.seats, h.ga,
       (SELECT count(*) FROM tickets t WHERE t.order_id = o.order_id) AS ticket_count
FROM orders o
JOIN holds h ON h.hold_id = o.hold_id
JOIN events e ON e.event_id = o.event_id
WHERE o.account_id = $1
  AND ($2::timestamptz IS NULL OR (o.created_at, o.order_id) < ($2, $3::uuid))
ORDER BY o.created_at DESC, o.order_id DESC
LIMIT $4;
