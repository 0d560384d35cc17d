-- name: checkout_begin
SELECT order_id, operation_id, replayed, amount_minor, currency
FROM onsale_checkout_begin($1, $2, $3, $4, $5, $6, $7, $8);

-- name: apply
SELECT onsale_payment_apply($1, $2, $3, $4, $5, $6, $7) AS result;

-- name: apply_batch
-- core/capture_batch.py: capture answers of several operations in one transaction, each
-- applied in operation-id order (the order and operation locks of each, in one order
-- for every batch); one row per element, i from 1 in the order sent.
SELECT x.i, x.result
FROM (SELECT g.i, onsale_payment_apply(g.op, g.outcome, g.ref, g.failure, g.next_action::jsonb,
                                       g.source, $7) AS result
      FROM (SELECT u.op, u.outcome, u.ref, u.failure, u.next_action, u.source,
                   u.i::integer AS i
            FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[],
                        $6::text[]) WITH ORDINALITY AS u(op, outcome, ref, failure,
                                                        next_action, source, i)
            ORDER BY u.op OFFSET 0) AS g) AS x
ORDER BY x.i;

-- name: abandon
SELECT onsale_payment_abandon($1, $2) AS void_id;

-- name: operation
SELECT p.operation_id, p.order_id, p.kind, p.status, p.provider_ref, p.parent_operation_id,
       p.amount_minor, p.currency, parent.provider_ref AS parent_provider_ref
FROM payment_operations p
LEFT JOIN payment_operations parent ON parent.operation_id = p.parent_operation_id
WHERE p.operation_id = $1;

-- name: webhook_target
-- The operation a webhook speaks about: the authorization itself, or its
-- capture or void.
-- What it recorded (amount, currency, intent) is what the event's intent must match.
SELECT operation_id, status, amount_minor, currency, provider_ref FROM payment_operations
WHERE ($2 = 'AUTHORIZE' AND operation_id = $1 AND kind = 'AUTHORIZE')
   OR ($2 <> 'AUTHORIZE' AND parent_operation_id = $1 AND kind = $2);

-- name: order_for_account
SELECT o.order_id, o.hold_id, o.event_id, o.status, o.payment_status, o.amount_minor,
       o.currency, o.cancel_reason, o.created_at, o.updated_at, h.seats, h.ga, h.expires_at,
       h.grace_until,
       (SELECT p.next_action FROM payment_operations p
        WHERE p.order_id = o.order_id AND p.kind = 'AUTHORIZE' AND p.status = 'REQUIRES_ACTION'
          AND NOT EXISTS (SELECT 1 FROM payment_operations v  -- abandoned: being voided
                          WHERE v.parent_operation_id = p.operation_id AND v.kind = 'VOID')
        LIMIT 1) AS next_action,
       (SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                      'ticket_id', t.ticket_id, 'seat_id', t.seat_id,
                                      'ga_tier_id', t.ga_tier_id, 'place', t.place,
                                      'code', t.code,
                                      'issued_at', to_char(t.issued_at AT TIME ZONE 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
                                  ORDER BY t.seat_id, t.ga_tier_id, t.place), '[]')
        FROM tickets t WHERE t.order_id = o.order_id) AS tickets
FROM orders o JOIN holds h ON h.hold_id = o.hold_id
WHERE o.order_id = $1 AND o.account_id = $2;

-- name: record_webhook
INSERT INTO webhook_events (provider_event_id, event_type, provider_ref, outcome, payload)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (provider_event_id) DO NOTHING
RETURNING provider_event_id;

-- name: record_webhooks
-- core/webhook_batch.py: record-only deliveries in one statement, inserted in event-id
-- order (two batches never wait on each other's keys in a cycle); one row per element,
-- i from 1 in the order sent, stored false for a duplicate.
WITH given AS (
    SELECT g.provider_event_id, g.event_type, g.provider_ref, g.outcome, g.payload::jsonb,
           g.i::integer AS i
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
         WITH ORDINALITY AS g(provider_event_id, event_type, provider_ref, outcome, payload, i)
), stored AS (
    INSERT INTO webhook_events (provider_event_id, event_type, provider_ref, outcome, payload)
    SELECT provider_event_id, event_type, provider_ref, outcome, payload FROM given
    ORDER BY provider_event_id
    ON CONFLICT (provider_event_id) DO NOTHING
    RETURNING provider_event_id
)
SELECT g.i, s.provider_event_id IS NOT NULL AS stored
FROM given g LEFT JOIN stored s USING (provider_event_id)
ORDER BY g.i;

-- name: record_and_apply
-- A delivery that changes one operation, in one statement (its own transaction, one
-- round trip): the record first, so a concurrent duplicate waits on its key and then
-- finds it, returning no row and applying nothing; the apply runs only for the row
-- the insert returned. An apply that raises rolls the record back with it.
WITH recorded AS (
    INSERT INTO webhook_events (provider_event_id, event_type, provider_ref, outcome, payload)
    VALUES ($1, $2, $3, 'applied', $4)
    ON CONFLICT (provider_event_id) DO NOTHING
    RETURNING provider_event_id
)
SELECT onsale_payment_apply($5, $6, $7, $8, $9, 'webhook', $10) AS result FROM recorded;

-- name: claim_due
-- Lease a batch of open operations to this reconciler (SKIP LOCKED: several
-- reconcilers share the work; a crashed one's lease simply runs out).
UPDATE payment_operations p
SET next_check_at = now() + make_interval(secs => $2)
FROM (SELECT operation_id FROM payment_operations
      WHERE status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') AND next_check_at <= now()
      ORDER BY next_check_at
      LIMIT $1
      FOR UPDATE SKIP LOCKED) AS due,
     orders o, holds h
WHERE p.operation_id = due.operation_id AND o.order_id = p.order_id AND h.hold_id = o.hold_id
RETURNING p.operation_id, p.order_id, p.kind, p.status, p.provider_ref,
          p.parent_operation_id, p.amount_minor, p.currency,
          coalesce(h.grace_until, h.expires_at) <= now() AS past_grace;

-- name: recheck_later
UPDATE payment_operations
SET next_check_at = now() + make_interval(secs => $2), updated_at = now()
WHERE operation_id = $1 AND status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION');

-- name: backlog
SELECT count(*) AS open_operations,
       coalesce(extract(epoch FROM now() - min(created_at)
                                FILTER (WHERE status IN ('PENDING', 'UNKNOWN'))), 0)
           AS oldest_unknown_age
FROM payment_operations
WHERE status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION');
