-- Each query returns the rows that violate one invariant (docs/invariants.md).
-- They run in one repeatable-read snapshot (core/audit.py), taken at the first
-- query; "now" is statement_timestamp(), never earlier than that snapshot,
-- because now() is the transaction's start, before it: a hold expired and
-- reclaimed in between would look like a live hold that lost its seats.

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
WHERE si.status = 'SOLD' AND (o.order_id IS NULL OR o.status <> 'CONFIRMED');

-- name: releases_touch_only_their_hold
-- Invariant 4: a release changed only the hold it names, and an expiry or a
-- reclaim only touched a hold whose deadline had passed. Seats in payment
-- are released only by a payment that failed (confirmed by the provider), and
-- sold seats only by an audited compensation.
SELECT release_id, hold_id, event_id, seat_id, prior_hold_id, prior_status,
       prior_expires_at, reason, released_at
FROM hold_releases
WHERE prior_hold_id IS DISTINCT FROM hold_id
   OR prior_status <> CASE reason WHEN 'payment_failed' THEN 'PAYMENT_PENDING'
                                  WHEN 'compensated' THEN 'SOLD'
                                  ELSE 'HELD' END
   OR (reason IN ('expired', 'reclaimed')
       AND (prior_expires_at IS NULL OR prior_expires_at > released_at))
   OR (reason = 'payment_failed' AND EXISTS (
           -- released while an authorization of its order was still open
           SELECT 1 FROM orders o JOIN payment_operations p ON p.order_id = o.order_id
           WHERE o.hold_id = hold_releases.hold_id AND p.kind = 'AUTHORIZE'
             AND p.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION')))
   OR (reason = 'compensated' AND NOT EXISTS (
           SELECT 1 FROM payment_events pe JOIN orders o ON o.order_id = pe.order_id
           WHERE o.hold_id = hold_releases.hold_id AND pe.action = 'compensated'));

-- name: held_seats_belong_to_their_hold
-- From the seat: a held seat's hold exists, lists it, is in the same state
-- and has the same deadline.
SELECT si.event_id, si.seat_id, si.status, si.hold_id, h.status AS hold_status
FROM seat_inventory si LEFT JOIN holds h ON h.hold_id = si.hold_id
WHERE si.status IN ('HELD', 'PAYMENT_PENDING')
  AND (h.hold_id IS NULL OR h.event_id <> si.event_id
       OR NOT (si.seat_id = ANY (h.seat_ids))
       OR h.status <> si.status
       OR CASE si.status WHEN 'PAYMENT_PENDING' THEN h.grace_until ELSE h.expires_at END
          IS DISTINCT FROM si.hold_expires_at);

-- name: live_holds_own_all_their_seats
-- From the hold: a live hold still owns every seat it lists (no seat of a
-- live hold was taken over by another).
SELECT h.hold_id, h.event_id, h.status, s AS seat_id, si.hold_id AS seat_hold_id,
       si.status AS seat_status
FROM holds h
CROSS JOIN LATERAL unnest(h.seat_ids) AS s
LEFT JOIN seat_inventory si ON si.event_id = h.event_id AND si.seat_id = s
WHERE (h.status = 'PAYMENT_PENDING' OR (h.status = 'HELD' AND h.expires_at > statement_timestamp()))
  AND (si.hold_id IS DISTINCT FROM h.hold_id OR si.status IS DISTINCT FROM h.status);

-- name: confirmed_holds_agree_with_their_seats
-- A hold's state and its seats tell one story: a sold seat's order rests on a
-- CONFIRMED hold (a hold that turned EXPIRED or RELEASED while its seats stayed
-- SOLD contradicts them), and a CONFIRMED hold has every seat it lists SOLD under
-- its id (not HELD, not AVAILABLE). A compensated sale releases the seats and
-- ends the hold in one statement, so it never shows here.
SELECT si.event_id, si.seat_id, h.hold_id, h.status AS hold_status,
       si.status AS seat_status
FROM seat_inventory si
JOIN orders o ON o.order_id = si.order_id
JOIN holds h ON h.hold_id = o.hold_id
WHERE si.status = 'SOLD' AND h.status <> 'CONFIRMED'
UNION ALL
SELECT h.event_id, s, h.hold_id, h.status, si.status
FROM holds h
CROSS JOIN LATERAL unnest(h.seat_ids) AS s
LEFT JOIN seat_inventory si ON si.event_id = h.event_id AND si.seat_id = s
WHERE h.status = 'CONFIRMED'
  AND (si.status IS DISTINCT FROM 'SOLD' OR si.hold_id IS DISTINCT FROM h.hold_id);

-- name: active_holds_within_account_limit
SELECT h.event_id, h.account_id, sum(h.seat_count) AS owned, e.max_tickets_per_account
FROM holds h JOIN events e ON e.event_id = h.event_id
WHERE h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
   OR (h.status = 'HELD' AND h.expires_at > statement_timestamp())
GROUP BY h.event_id, h.account_id, e.max_tickets_per_account
HAVING sum(h.seat_count) > e.max_tickets_per_account;

-- name: replays_created_no_new_state
-- Invariant 5: one key, one request, one hold: the key's record names the
-- hold made under it, and (within the 24 h retention) every hold has its
-- key's record.
SELECT k.account_id, k.key, k.resource_id, h.hold_id, 'key names another hold' AS problem
FROM idempotency_keys k
LEFT JOIN holds h ON h.account_id = k.account_id AND h.idempotency_key = k.key
WHERE k.scope = 'hold' AND (k.response IS NULL OR k.resource_id IS DISTINCT FROM h.hold_id)
UNION ALL
-- A checkout key names one order of the same account, and the operation it
-- started belongs to that order.
SELECT k.account_id, k.key, k.resource_id, NULL, 'checkout key names no order of its account'
FROM idempotency_keys k
WHERE k.scope = 'checkout' AND NOT EXISTS (
    SELECT 1 FROM orders o JOIN payment_operations p ON p.order_id = o.order_id
    WHERE o.order_id = k.resource_id AND o.account_id = k.account_id
      AND p.operation_id = (k.response ->> 'operation_id')::uuid)
UNION ALL
SELECT h.account_id, h.idempotency_key, NULL, h.hold_id, 'hold without its key record'
FROM holds h
WHERE h.created_at > statement_timestamp() - interval '23 hours'
  AND NOT EXISTS (SELECT 1 FROM idempotency_keys k
                  WHERE k.account_id = h.account_id AND k.key = h.idempotency_key
                    AND k.resource_id = h.hold_id);

-- name: payment_pending_holds_have_an_open_payment
-- A seat is in payment only while an authorization's outcome is open (or a
-- void that will end it is on its way): never left behind by a finished one.
SELECT h.hold_id, h.event_id, o.order_id, o.status AS order_status
FROM holds h LEFT JOIN orders o ON o.hold_id = h.hold_id
WHERE h.status = 'PAYMENT_PENDING'
  AND NOT EXISTS (SELECT 1 FROM payment_operations p
                  WHERE p.order_id = o.order_id AND p.kind IN ('AUTHORIZE', 'VOID')
                    AND p.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION'));

-- name: confirmed_orders_were_authorized
SELECT o.order_id, o.status, o.payment_status
FROM orders o
WHERE o.status = 'CONFIRMED'
  AND NOT EXISTS (SELECT 1 FROM payment_operations p
                  WHERE p.order_id = o.order_id AND p.kind = 'AUTHORIZE'
                    AND p.status = 'SUCCEEDED');

-- name: tickets_only_for_paid_orders
SELECT t.ticket_id, t.order_id, o.status, o.payment_status
FROM tickets t JOIN orders o ON o.order_id = t.order_id
WHERE o.status <> 'CONFIRMED' OR o.payment_status <> 'CAPTURED'
   OR (t.seat_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM order_items oi
           WHERE oi.order_id = t.order_id AND oi.seat_id = t.seat_id AND oi.valid))
   -- a GA ticket is for place 1..quantity of a tier the order bought
   OR (t.ga_tier_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM ga_order_items gi
           WHERE gi.order_id = t.order_id AND gi.tier_id = t.ga_tier_id AND gi.valid
             AND t.place BETWEEN 1 AND gi.quantity));

-- name: ended_orders_own_no_seats
SELECT o.order_id, o.status, si.event_id, si.seat_id, si.status AS seat_status
FROM orders o
JOIN holds h ON h.hold_id = o.hold_id
JOIN seat_inventory si ON si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
WHERE o.status IN ('FAILED', 'CANCELLED')
  AND (si.order_id = o.order_id
       OR (si.hold_id = h.hold_id AND si.status IN ('PAYMENT_PENDING', 'SOLD')));

-- name: ga_capacity_conserved
-- General admission: over a tier's stripes, available + held + sold is its
-- capacity, always (holds, expiries, sales and rebalances only move places).
SELECT t.event_id, t.tier_id, t.capacity,
       coalesce(sum(b.available + b.held + b.sold), 0) AS counted
FROM ga_tiers t LEFT JOIN ga_buckets b ON b.event_id = t.event_id AND b.tier_id = t.tier_id
GROUP BY t.event_id, t.tier_id, t.capacity
HAVING coalesce(sum(b.available + b.held + b.sold), 0) <> t.capacity;

-- name: ga_no_stripe_negative
SELECT b.event_id, b.tier_id, b.stripe, b.available, b.held, b.sold
FROM ga_buckets b
WHERE b.available < 0 OR b.held < 0 OR b.sold < 0;

-- name: ga_places_counted_once
-- A stripe's held and sold are exactly the places that GA holds have there
-- in those states.
SELECT b.event_id, b.tier_id, b.stripe, b.held, b.sold,
       coalesce(p.held, 0) AS places_held, coalesce(p.sold, 0) AS places_sold
FROM ga_buckets b
LEFT JOIN (SELECT event_id, tier_id, stripe,
                  sum(quantity) FILTER (WHERE status = 'HELD') AS held,
                  sum(quantity) FILTER (WHERE status = 'SOLD') AS sold
           FROM ga_hold_places WHERE status <> 'RETURNED'
           GROUP BY event_id, tier_id, stripe) p
       ON p.event_id = b.event_id AND p.tier_id = b.tier_id AND p.stripe = b.stripe
WHERE b.held <> coalesce(p.held, 0) OR b.sold <> coalesce(p.sold, 0);

-- name: ga_holds_own_their_places
-- From the hold: a live GA hold (HELD before its deadline, or in payment) has
-- all its places held; a sold one has them all sold; an ended one has none
-- left (an expired hold not yet swept may still hold them).
SELECT h.hold_id, h.event_id, h.ga_tier_id, h.status, h.seat_count AS quantity,
       coalesce(sum(p.quantity) FILTER (WHERE p.status = 'HELD'), 0) AS held,
       coalesce(sum(p.quantity) FILTER (WHERE p.status = 'SOLD'), 0) AS sold
FROM holds h LEFT JOIN ga_hold_places p ON p.hold_id = h.hold_id
WHERE h.ga_tier_id IS NOT NULL
GROUP BY h.hold_id
HAVING CASE
    WHEN h.status = 'PAYMENT_PENDING'
         OR (h.status = 'HELD' AND h.expires_at > statement_timestamp())
        THEN coalesce(sum(p.quantity) FILTER (WHERE p.status = 'HELD'), 0) <> h.seat_count
          OR coalesce(sum(p.quantity) FILTER (WHERE p.status = 'SOLD'), 0) <> 0
    WHEN h.status = 'CONFIRMED'
        THEN coalesce(sum(p.quantity) FILTER (WHERE p.status = 'SOLD'), 0) <> h.seat_count
          OR coalesce(sum(p.quantity) FILTER (WHERE p.status = 'HELD'), 0) <> 0
    WHEN h.status = 'HELD'  -- expired, not yet swept
        THEN coalesce(sum(p.quantity) FILTER (WHERE p.status = 'SOLD'), 0) <> 0
    ELSE coalesce(sum(p.quantity) FILTER (WHERE p.status <> 'RETURNED'), 0) <> 0
    END
   OR coalesce(sum(p.quantity), 0) <> h.seat_count;

-- name: ga_sold_places_point_to_confirmed_orders
-- A sold place belongs to a confirmed order (its payment may still be being
-- reconciled: captured later or compensated) with a valid GA line for it.
SELECT p.hold_id, p.event_id, p.tier_id, p.stripe, p.quantity, o.order_id,
       o.status AS order_status
FROM ga_hold_places p
LEFT JOIN orders o ON o.hold_id = p.hold_id
LEFT JOIN ga_order_items gi ON gi.order_id = o.order_id AND gi.tier_id = p.tier_id AND gi.valid
WHERE p.status = 'SOLD'
  AND (o.order_id IS NULL OR o.status <> 'CONFIRMED' OR gi.order_id IS NULL);

-- name: ga_releases_touch_only_their_hold
-- A return gave back places the hold itself had on that stripe, once: an
-- expiry only of a hold whose deadline had passed, a release by its owner
-- only of a live hold, places in payment only when its payment failed, sold
-- places only by an audited compensation.
SELECT r.release_id, r.hold_id, r.stripe, r.quantity, r.reason, r.prior_status,
       r.prior_hold_status, r.prior_expires_at, r.released_at
FROM ga_releases r
LEFT JOIN ga_hold_places p ON p.hold_id = r.hold_id AND p.stripe = r.stripe
WHERE p.hold_id IS NULL OR p.status <> 'RETURNED' OR p.quantity <> r.quantity
   OR p.event_id <> r.event_id OR p.tier_id <> r.tier_id
   OR (SELECT count(*) FROM ga_releases r2
       WHERE r2.hold_id = r.hold_id AND r2.stripe = r.stripe) > 1
   OR r.prior_status <> CASE r.reason WHEN 'compensated' THEN 'SOLD' ELSE 'HELD' END
   OR r.prior_hold_status <> CASE r.reason WHEN 'payment_failed' THEN 'PAYMENT_PENDING'
                                           WHEN 'compensated' THEN 'CONFIRMED'
                                           ELSE 'HELD' END
   OR (r.reason = 'expired' AND r.prior_expires_at > r.released_at)
   OR (r.reason = 'released' AND r.prior_expires_at <= r.released_at)
   OR (r.reason = 'payment_failed' AND EXISTS (
           -- returned while an authorization of its order was still open
           SELECT 1 FROM orders o JOIN payment_operations op ON op.order_id = o.order_id
           WHERE o.hold_id = r.hold_id AND op.kind = 'AUTHORIZE'
             AND op.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION')))
   OR (r.reason = 'compensated' AND NOT EXISTS (
           SELECT 1 FROM payment_events pe JOIN orders o ON o.order_id = pe.order_id
           WHERE o.hold_id = r.hold_id AND pe.action = 'compensated'));

-- name: ga_ended_orders_own_no_places
-- A FAILED or CANCELLED order keeps no valid GA line and no place held or sold
-- for it (its places went back to their stripes).
SELECT o.order_id, o.status, gi.tier_id, gi.quantity, 'valid line' AS problem
FROM orders o JOIN ga_order_items gi ON gi.order_id = o.order_id
WHERE o.status IN ('FAILED', 'CANCELLED') AND gi.valid
UNION ALL
SELECT o.order_id, o.status, p.tier_id, p.quantity, 'places not returned'
FROM orders o JOIN ga_hold_places p ON p.hold_id = o.hold_id
WHERE o.status IN ('FAILED', 'CANCELLED') AND p.status <> 'RETURNED';

-- name: ga_returned_places_were_released
-- The other direction of ga_releases_touch_only_their_hold: places shown as
-- given back have the release that gave them back (its reason and prior
-- state), so no return escapes the checks on releases.
SELECT p.hold_id, p.event_id, p.tier_id, p.stripe, p.quantity
FROM ga_hold_places p
WHERE p.status = 'RETURNED'
  AND NOT EXISTS (SELECT 1 FROM ga_releases r
                  WHERE r.hold_id = p.hold_id AND r.stripe = p.stripe);

-- name: ga_order_lines_match_their_places
-- A confirmed order's valid GA line is what was sold: its quantity is the
-- hold's quantity and the places sold for it, and quantity times its price
-- is the order's amount (a GA hold has no seats).
SELECT o.order_id, gi.tier_id, gi.quantity, gi.price_minor, o.amount_minor,
       h.seat_count AS hold_quantity, h.ga_tier_id AS hold_tier,
       coalesce((SELECT sum(p.quantity) FROM ga_hold_places p
                 WHERE p.hold_id = o.hold_id AND p.status = 'SOLD'), 0) AS places_sold
FROM orders o
JOIN ga_order_items gi ON gi.order_id = o.order_id AND gi.valid
JOIN holds h ON h.hold_id = o.hold_id
WHERE o.status = 'CONFIRMED'
  AND (gi.quantity <> h.seat_count
       OR gi.tier_id IS DISTINCT FROM h.ga_tier_id
       OR gi.quantity::bigint * gi.price_minor <> o.amount_minor
       OR gi.quantity <> coalesce((SELECT sum(p.quantity) FROM ga_hold_places p
                                   WHERE p.hold_id = o.hold_id AND p.status = 'SOLD'), 0));

-- name: ga_holds_within_tier_limit
-- A tier's own per-account limit (max_per_account, fixed at creation): the
-- places an account has in live GA holds, in payment and sold, per tier.
SELECT h.event_id, h.account_id, h.ga_tier_id AS tier_id, sum(h.seat_count) AS owned,
       t.max_per_account
FROM holds h
JOIN ga_tiers t ON t.event_id = h.event_id AND t.tier_id = h.ga_tier_id
WHERE t.max_per_account IS NOT NULL
  AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
       OR (h.status = 'HELD' AND h.expires_at > statement_timestamp()))
GROUP BY h.event_id, h.account_id, h.ga_tier_id, t.max_per_account
HAVING sum(h.seat_count) > t.max_per_account;
