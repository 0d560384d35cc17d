-- Named queries of the operator console's figures (edge/ops_dashboard.py).

-- name: open_payments
-- Payment operations of one event without a definitive outcome. The partial
-- index payment_operations_open_idx keeps the scan to open operations only.
SELECT count(*) FILTER (WHERE p.status = 'UNKNOWN') AS unknown,
       count(*) FILTER (WHERE p.status = 'PENDING') AS pending,
       count(*) FILTER (WHERE p.status = 'REQUIRES_ACTION') AS requires_action,
       coalesce(extract(epoch FROM now() - min(p.created_at)
                                FILTER (WHERE p.status = 'UNKNOWN')), 0)::float8
           AS oldest_unknown_seconds
FROM payment_operations p JOIN orders o ON o.order_id = p.order_id
WHERE p.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') AND o.event_id = $1;

-- name: event_settings
-- What the fairness lab takes from an event.
SELECT event_id, seat_count, max_tickets_per_account, hold_ttl_seconds,
       admission_rate_min, admission_rate_max, active_cap,
       extract(epoch FROM onsale_at - prequeue_at)::float8 AS prequeue_seconds
FROM events WHERE event_id = $1;
