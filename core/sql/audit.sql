-- Each query returns the rows that violate one invariant (docs/invariants.md).

-- name: one_valid_sale_per_seat
SELECT oi.event_id, oi.seat_id, count(*) AS valid_sales, array_agg(o.order_id) AS orders
FROM order_items oi JOIN orders o ON o.order_id = oi.order_id
WHERE oi.valid AND o.status = 'CONFIRMED'
GROUP BY oi.event_id, oi.seat_id
HAVING count(*) > 1;

-- name: confirmed_orders_own_their_seats
SELECT o.order_id, o.event_id
FROM orders o
WHERE o.status = 'CONFIRMED'
  AND (EXISTS (SELECT 1 FROM order_items oi
               LEFT JOIN seat_inventory si ON si.event_id = oi.event_id AND si.seat_id = oi.seat_id
               WHERE oi.order_id = o.order_id AND oi.valid
                 AND (si.status IS DISTINCT FROM 'SOLD' OR si.order_id IS DISTINCT FROM o.order_id))
       OR EXISTS (SELECT 1 FROM seat_inventory si
                  WHERE si.event_id = o.event_id AND si.order_id = o.order_id
                    AND NOT EXISTS (SELECT 1 FROM order_items oi
                                    WHERE oi.order_id = o.order_id AND oi.seat_id = si.seat_id
                                      AND oi.valid)));

-- name: sold_seats_point_to_confirmed_orders
SELECT si.event_id, si.seat_id, si.order_id, o.status AS order_status
FROM seat_inventory si LEFT JOIN orders o ON o.order_id = si.order_id
WHERE si.status = 'SOLD' AND (o.order_id IS NULL OR o.status NOT IN ('CONFIRMED', 'PENDING'));

-- name: releases_touch_only_their_hold
SELECT release_id, hold_id, event_id, seat_id, prior_hold_id, prior_status, reason
FROM hold_releases
WHERE prior_hold_id IS DISTINCT FROM hold_id OR prior_status <> 'HELD';

-- name: held_seats_belong_to_their_hold
SELECT si.event_id, si.seat_id, si.status, si.hold_id, h.status AS hold_status
FROM seat_inventory si LEFT JOIN holds h ON h.hold_id = si.hold_id
WHERE si.status IN ('HELD', 'PAYMENT_PENDING')
  AND (h.hold_id IS NULL OR h.event_id <> si.event_id
       OR NOT (si.seat_id = ANY (h.seat_ids))
       OR h.status NOT IN ('HELD', 'PAYMENT_PENDING')
       OR h.expires_at <> si.hold_expires_at);

-- name: active_holds_within_account_limit
SELECT h.event_id, h.account_id, sum(h.seat_count) AS owned, e.max_tickets_per_account
FROM holds h JOIN events e ON e.event_id = h.event_id
WHERE h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
   OR (h.status = 'HELD' AND h.expires_at > now())
GROUP BY h.event_id, h.account_id, e.max_tickets_per_account
HAVING sum(h.seat_count) > e.max_tickets_per_account;

-- name: replays_created_no_new_state
SELECT k.account_id, k.key, k.status_code, k.resource_id
FROM idempotency_keys k
WHERE k.response IS NULL
   OR (k.resource_id IS NOT NULL
       AND (SELECT count(*) FROM holds h
            WHERE h.account_id = k.account_id AND h.idempotency_key = k.key) <> 1);
