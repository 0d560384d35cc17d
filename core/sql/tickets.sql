-- name: issue_tickets
SELECT onsale_issue_tickets($1);

-- name: issued_here
-- Tickets written by the current transaction (the caller's, just now).
SELECT count(*) FROM tickets WHERE order_id = $1 AND xmin = pg_current_xact_id()::xid;

-- name: issue_tickets_batch
-- core/tickets.py issue_batch: several orders (distinct), in order, in the caller's
-- transaction; then issued_here_batch counts what it wrote (a statement's own snapshot
-- does not see what the functions it calls insert).
SELECT o.order_id, onsale_issue_tickets(o.order_id) AS outcome
FROM unnest($1::uuid[]) WITH ORDINALITY AS o(order_id, n)
ORDER BY o.n;

-- name: issued_here_batch
SELECT order_id, count(*) AS issued FROM tickets
WHERE order_id = ANY ($1::uuid[]) AND xmin = pg_current_xact_id()::xid
GROUP BY order_id;

-- name: ticket_event
-- The event whose tickets the gate checks: it ends $2 hours after it starts
-- (ONSALE_TICKET_VALID_HOURS); now() is the database's clock.
SELECT event_id, starts_at + make_interval(hours => $2) AS ends_at, now() AS db_now
FROM events WHERE event_id = $1;

-- name: ticket_revocations
-- The tickets of an event a gate must refuse (docs/tickets.md#revocation): their order is
-- no longer confirmed and paid (cancelled, failed, refunded), or their seat or place
-- was taken back; revoked_at is the order's last change. $2: only orders changed after
-- it (NULL: all). A full scan of the shard's orders of the event: cached by its ETag.
SELECT t.ticket_id, o.updated_at AS revoked_at,
       CASE WHEN o.status <> 'CONFIRMED' THEN lower(o.status)
            WHEN o.payment_status <> 'CAPTURED' THEN lower(o.payment_status)
            ELSE 'released' END AS reason
FROM orders o JOIN tickets t ON t.order_id = o.order_id
WHERE o.event_id = $1 AND ($2::timestamptz IS NULL OR o.updated_at > $2)
  AND (o.status <> 'CONFIRMED' OR o.payment_status <> 'CAPTURED'
       OR (t.seat_id IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM order_items oi
               WHERE oi.order_id = t.order_id AND oi.seat_id = t.seat_id AND oi.valid))
       OR (t.ga_tier_id IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM ga_order_items gi
               WHERE gi.order_id = t.order_id AND gi.tier_id = t.ga_tier_id AND gi.valid
                 AND t.place BETWEEN 1 AND gi.quantity)))
ORDER BY o.updated_at, t.ticket_id;
