-- name: sold_by_event
-- The seed's "sales per event" (docs/operations.md#the-sales-figures): per event that has
-- not ended a day ago, seats sold and in holds or payment, and GA places sold. One row
-- per event, the newest events first, at most $1.
SELECT e.event_id,
       (SELECT count(*) FROM seat_inventory si
         WHERE si.event_id = e.event_id AND si.status = 'SOLD') AS seats_sold,
       (SELECT count(*) FROM seat_inventory si
         WHERE si.event_id = e.event_id AND si.status IN ('HELD', 'PAYMENT_PENDING'))
           AS seats_held,
       (SELECT coalesce(sum(gi.quantity), 0) FROM ga_order_items gi
          JOIN orders o USING (order_id)
         WHERE gi.event_id = e.event_id AND gi.valid AND o.status = 'CONFIRMED')
           AS places_sold
FROM events e
WHERE e.starts_at > now() - interval '1 day'
ORDER BY e.event_id DESC
LIMIT $1;

-- name: tickets_unreconciled
-- The seed's "ticket-issuance reconciliation differences": orders paid (CONFIRMED and
-- CAPTURED) more than $1 seconds ago, in the last day, whose tickets do not number their
-- valid seats plus places. Tickets are issued from the outbox once the capture is in; a
-- difference that stays is a consumer down or a bug (docs/outbox.md).
SELECT count(*) FROM orders o
WHERE o.status = 'CONFIRMED' AND o.payment_status = 'CAPTURED'
  AND o.updated_at < now() - make_interval(secs => $1)
  AND o.updated_at > now() - interval '1 day'
  AND (SELECT count(*) FROM tickets t WHERE t.order_id = o.order_id)
      <> (SELECT count(*) FROM order_items oi WHERE oi.order_id = o.order_id AND oi.valid)
         + (SELECT coalesce(sum(gi.quantity), 0) FROM ga_order_items gi
             WHERE gi.order_id = o.order_id AND gi.valid);
