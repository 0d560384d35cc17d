-- Each query returns the rows that violate one invariant (docs/invariants.md).

-- name: one_valid_sale_per_seat
SELECT oi.event_id, oi.seat_id, count(*) AS valid_sales, array_agg(o.order_id) AS orders
FROM order_items oi JOIN orders o ON o.order_id = oi.order_id
WHERE oi.valid AND o.status = 'CONFIRMED'
GROUP BY oi.event_id, oi.seat_id
HAVING count(*) > 1;

-- name: confirmed_orders_own_their_seats
-- Set-based, so it stays fast at a sell-out: items whose seat is not SOLD to
-- the order, and seats pointing at an order that has no item for them.
SELECT DISTINCT oi.order_id, oi.event_id
FROM order_items oi
JOIN orders o ON o.order_id = oi.order_id AND o.status = 'CONFIRMED'
LEFT JOIN seat_inventory si ON si.event_id = oi.event_id AND si.seat_id = oi.seat_id
WHERE oi.valid
  AND (si.status IS DISTINCT FROM 'SOLD' OR si.order_id IS DISTINCT FROM oi.order_id)
UNION
SELECT si.order_id, si.event_id
FROM seat_inventory si
JOIN orders o ON o.order_id = si.order_id AND o.status = 'CONFIRMED'
LEFT JOIN order_items oi ON oi.order_id = si.order_id AND oi.seat_id = si.seat_id AND oi.valid
WHERE oi.order_id IS NULL;

-- name: sold_seats_point_to_confirmed_orders
SELECT si.event_id, si.seat_id, si.order_id, o.status AS order_status
FROM seat_inventory si LEFT JOIN orders o ON o.order_id = si.order_id
WHERE si.status = 'SOLD' AND (o.order_id IS NULL OR o.status NOT IN ('CONFIRMED', 'PENDING'));

-- name: releases_touch_only_their_hold
-- Invariant 4: a release changed only the hold it names, and an expiry or a
-- reclaim only touched a hold whose deadline had passed.
SELECT release_id, hold_id, event_id, seat_id, prior_hold_id, prior_status,
       prior_expires_at, reason, released_at
FROM hold_releases
WHERE prior_hold_id IS DISTINCT FROM hold_id
   OR prior_status <> 'HELD'
   OR (reason IN ('expired', 'reclaimed')
       AND (prior_expires_at IS NULL OR prior_expires_at > released_at));

-- name: held_seats_belong_to_their_hold
-- From the seat: a held seat's hold exists, lists it, is in the same state
-- and has the same deadline.
SELECT si.event_id, si.seat_id, si.status, si.hold_id, h.status AS hold_status
FROM seat_inventory si LEFT JOIN holds h ON h.hold_id = si.hold_id
WHERE si.status IN ('HELD', 'PAYMENT_PENDING')
  AND (h.hold_id IS NULL OR h.event_id <> si.event_id
       OR NOT (si.seat_id = ANY (h.seat_ids))
       OR h.status <> si.status
       OR h.expires_at <> si.hold_expires_at);

-- name: live_holds_own_all_their_seats
-- From the hold: a live hold still owns every seat it lists (no seat of a
-- live hold was taken over by another).
SELECT h.hold_id, h.event_id, h.status, s AS seat_id, si.hold_id AS seat_hold_id,
       si.status AS seat_status
FROM holds h
CROSS JOIN LATERAL unnest(h.seat_ids) AS s
LEFT JOIN seat_inventory si ON si.event_id = h.event_id AND si.seat_id = s
WHERE (h.status = 'PAYMENT_PENDING' OR (h.status = 'HELD' AND h.expires_at > now()))
  AND (si.hold_id IS DISTINCT FROM h.hold_id OR si.status IS DISTINCT FROM h.status);

-- name: active_holds_within_account_limit
SELECT h.event_id, h.account_id, sum(h.seat_count) AS owned, e.max_tickets_per_account
FROM holds h JOIN events e ON e.event_id = h.event_id
WHERE h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
   OR (h.status = 'HELD' AND h.expires_at > now())
GROUP BY h.event_id, h.account_id, e.max_tickets_per_account
HAVING sum(h.seat_count) > e.max_tickets_per_account;

-- name: replays_created_no_new_state
-- Invariant 5: one key, one request, one hold: the key's record names the
-- hold made under it, and (within the 24 h retention) every hold has its
-- key's record.
SELECT k.account_id, k.key, k.resource_id, h.hold_id, 'key names another hold' AS problem
FROM idempotency_keys k
LEFT JOIN holds h ON h.account_id = k.account_id AND h.idempotency_key = k.key
WHERE k.response IS NULL OR k.resource_id IS DISTINCT FROM h.hold_id
UNION ALL
SELECT h.account_id, h.idempotency_key, NULL, h.hold_id, 'hold without its key record'
FROM holds h
WHERE h.created_at > now() - interval '23 hours'
  AND NOT EXISTS (SELECT 1 FROM idempotency_keys k
                  WHERE k.account_id = h.account_id AND k.key = h.idempotency_key
                    AND k.resource_id = h.hold_id);
