-- 0006: checkout. The seed's sequence (steps 5-6, follow-up 2):
--   1. onsale_checkout_begin: one transaction validates the hold, creates the
--      order and an AUTHORIZE operation, and moves hold and seats to
--      PAYMENT_PENDING with a one-time bounded grace;
--   2. the authorization runs outside any transaction (core/payments.py);
--   3. onsale_payment_apply records every provider answer (response, webhook
--      or query). An authorization sells the seats in one transaction (SOLD,
--      CONFIRMED, outbox order.confirmed) and creates the CAPTURE operation;
--   4. the capture runs after that commit;
--   5. an authorization for a hold that is no longer ours creates a VOID; a
--      capture that definitively failed is compensated (audited) before any
--      ticket exists; a decline returns the hold to HELD while its original
--      deadline lasts, or releases it.
-- State only moves forward: a definitive operation never changes again, and
-- a late authorization for a failed one is voided, never sold.
--
-- Lock order, as in 0002: per-(event, account) advisory lock -> hold row ->
-- seat rows in seat_id order -> order row -> operation rows.

ALTER TABLE idempotency_keys ADD COLUMN scope text NOT NULL DEFAULT 'hold'
    CHECK (scope IN ('hold', 'checkout'));
ALTER TABLE hold_releases DROP CONSTRAINT hold_releases_reason_check;
ALTER TABLE hold_releases ADD CONSTRAINT hold_releases_reason_check
    CHECK (reason IN ('expired', 'released', 'reclaimed', 'payment_failed', 'compensated'));
DROP FUNCTION onsale_confirm_hold(uuid, uuid);
-- FAILED: the payment never happened (not found at the provider past the grace).
ALTER TABLE orders DROP CONSTRAINT orders_payment_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_payment_status_check
    CHECK (payment_status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORIZED', 'CAPTURED',
                              'DECLINED', 'UNKNOWN', 'VOIDED', 'CAPTURE_FAILED', 'FAILED'));

-- Release the seats of a hold in payment (or sold, for a compensation) and
-- end the hold. The caller holds the hold row lock.
CREATE FUNCTION onsale_release_paid_hold(p_hold_id uuid, p_from text, p_reason text,
                                         p_hold_status text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_hold record;
    v_n integer;
BEGIN
    SELECT h.event_id, h.seat_ids INTO v_hold FROM holds h WHERE h.hold_id = p_hold_id;
    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;
    WITH released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, order_id = NULL,
            version = si.version + 1
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = p_from
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id,
                  old.status AS prior_status, old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status,
           r.prior_expires_at, p_reason
    FROM released r;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    UPDATE holds SET status = p_hold_status, updated_at = now() WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || lower(p_hold_status),
            jsonb_build_object('hold_id', p_hold_id, 'reason', p_reason));
    RETURN v_n;
END $$;

-- Step 1. Returns the order and the AUTHORIZE operation to send; a replay
-- (same key, same body) returns what the first request created.
CREATE FUNCTION onsale_checkout_begin(
    p_hold_id uuid, p_account_id uuid, p_key text, p_digest text, p_payment_method text,
    p_grace_seconds integer, p_min_remaining_seconds integer, p_first_check_seconds integer,
    OUT order_id uuid, OUT operation_id uuid, OUT replayed boolean,
    OUT amount_minor bigint, OUT currency char(3)
) LANGUAGE plpgsql AS $$
DECLARE
    v_event bigint;
    v_hold record;
    v_prev record;
    v_order record;
    v_max integer;
    v_owned bigint;
    v_ok integer;
    v_amount bigint;
    v_grace timestamptz;
BEGIN
    replayed := false;
    SELECT h.event_id INTO v_event FROM holds h
    WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_account_id::text, v_event));

    -- Under the lock a twin with our key has either committed or not begun.
    SELECT k.digest, k.response INTO v_prev FROM idempotency_keys k
    WHERE k.account_id = p_account_id AND k.key = p_key;
    IF FOUND THEN
        IF v_prev.digest <> p_digest THEN
            RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict',
                DETAIL = '{}';
        END IF;
        order_id := (v_prev.response ->> 'order_id')::uuid;
        operation_id := (v_prev.response ->> 'operation_id')::uuid;
        SELECT o.amount_minor, o.currency INTO amount_minor, currency
        FROM orders o WHERE o.order_id = (v_prev.response ->> 'order_id')::uuid;
        replayed := true;
        RETURN;
    END IF;

    SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = p_hold_id FOR UPDATE;
    SELECT o.order_id, o.status INTO v_order FROM orders o WHERE o.hold_id = p_hold_id;
    IF v_hold.status = 'CONFIRMED' THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_checked_out',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    IF v_hold.status = 'PAYMENT_PENDING' THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'checkout_in_progress',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    IF v_hold.status <> 'HELD' OR v_hold.expires_at <= now() THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('hold_status', CASE WHEN v_hold.status = 'HELD'
                                                       THEN 'EXPIRED' ELSE v_hold.status END)::text;
    END IF;
    -- Too little time left to pay: refuse to start an authorization rather
    -- than extend the hold (follow-up 2).
    IF v_hold.expires_at - now() < make_interval(secs => p_min_remaining_seconds) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expiring',
            DETAIL = jsonb_build_object(
                'expires_at', to_char(v_hold.expires_at AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'min_remaining_seconds', p_min_remaining_seconds)::text;
    END IF;

    SELECT e.max_tickets_per_account INTO v_max FROM events e WHERE e.event_id = v_event;
    SELECT coalesce(sum(h.seat_count), 0) INTO v_owned FROM holds h
    WHERE h.event_id = v_event AND h.account_id = p_account_id
      AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
           OR (h.status = 'HELD' AND h.expires_at > now()));
    IF v_owned > v_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', v_max, 'owned', v_owned, 'requested', 0)::text;
    END IF;

    -- The seats, locked in order: still ours, and the total at their current
    -- price version (client totals are never used).
    SELECT count(*) FILTER (WHERE l.hold_id = p_hold_id AND l.status = 'HELD'),
           sum(pt.price_minor)
    INTO v_ok, v_amount
    FROM (SELECT si.seat_id, si.hold_id, si.status, si.price_version
          FROM seat_inventory si
          WHERE si.event_id = v_event AND si.seat_id = ANY (v_hold.seat_ids)
          ORDER BY si.seat_id
          FOR UPDATE) AS l
    JOIN seats s ON s.event_id = v_event AND s.seat_id = l.seat_id
    JOIN price_tiers pt ON pt.event_id = v_event AND pt.tier_id = s.tier_id
                       AND pt.price_version = l.price_version;
    -- now() is when this transaction began; after waiting for the seat locks
    -- the deadline is judged by the clock, so a hold that expired meanwhile
    -- does not start a payment.
    IF v_ok <> v_hold.seat_count OR v_hold.expires_at <= clock_timestamp() THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = '{"hold_status": "EXPIRED"}';
    END IF;
    IF v_amount <> v_hold.amount_minor THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'price_changed',
            DETAIL = jsonb_build_object('amount_minor', v_amount)::text;
    END IF;

    -- One order per hold; a new card after a decline reuses it.
    INSERT INTO orders AS o (hold_id, event_id, account_id, status, amount_minor, currency,
                             payment_status, checkout_key)
    VALUES (p_hold_id, v_event, p_account_id, 'PENDING', v_amount, v_hold.currency,
            'PENDING', p_key)
    ON CONFLICT (hold_id) DO UPDATE
        SET payment_status = 'PENDING', checkout_key = excluded.checkout_key, updated_at = now()
        WHERE o.status = 'PENDING'
    RETURNING o.order_id INTO order_id;
    IF order_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    INSERT INTO payment_operations (order_id, kind, amount_minor, currency, payment_method,
                                    next_check_at)
    VALUES (order_id, 'AUTHORIZE', v_amount, v_hold.currency, p_payment_method,
            now() + make_interval(secs => p_first_check_seconds))
    RETURNING payment_operations.operation_id INTO operation_id;

    v_grace := coalesce(v_hold.grace_until,
                        v_hold.expires_at + make_interval(secs => p_grace_seconds));
    UPDATE holds SET status = 'PAYMENT_PENDING', grace_until = v_grace, updated_at = now()
    WHERE hold_id = p_hold_id;
    UPDATE seat_inventory
    SET status = 'PAYMENT_PENDING', hold_expires_at = v_grace, version = version + 1
    WHERE event_id = v_event AND seat_id = ANY (v_hold.seat_ids) AND hold_id = p_hold_id;

    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id,
                                  scope)
    VALUES (p_account_id, p_key, p_digest, 200,
            jsonb_build_object('order_id', order_id, 'operation_id', operation_id),
            order_id, 'checkout');
    INSERT INTO payment_events (order_id, operation_id, action, detail)
    VALUES (order_id, operation_id, 'checkout_started',
            jsonb_build_object('hold_id', p_hold_id, 'amount_minor', v_amount,
                               'grace_until', v_grace));
    amount_minor := v_amount;
    currency := v_hold.currency;
END $$;

-- Steps 3-5: apply one provider answer to one operation. p_outcome:
--   AUTHORIZE: UNKNOWN, REQUIRES_ACTION, AUTHORIZED, DECLINED, NO_AUTHORIZATION
--   CAPTURE:   UNKNOWN, CAPTURED, CAPTURE_FAILED
--   VOID:      UNKNOWN, VOIDED, VOID_FAILED
-- Returns {applied, order_id, order_status, payment_status, follow_up} where
-- follow_up names an operation the caller must send now (CAPTURE or VOID).
CREATE FUNCTION onsale_payment_apply(
    p_operation_id uuid, p_outcome text, p_provider_ref text, p_failure_code text,
    p_next_action jsonb, p_source text, p_retry_seconds integer
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_op record;
    v_parent record;
    v_order record;
    v_hold record;
    v_ok integer;
    v_amount bigint;
    v_follow uuid;
    v_follow_kind text;
    v_applied boolean := true;
BEGIN
    SELECT p.*, o.account_id, o.event_id, o.hold_id INTO v_op
    FROM payment_operations p JOIN orders o ON o.order_id = p.order_id
    WHERE p.operation_id = p_operation_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'operation_not_found', DETAIL = '{}';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(v_op.account_id::text, v_op.event_id));
    SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = v_op.hold_id FOR UPDATE;
    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;
    SELECT o.* INTO v_order FROM orders o WHERE o.order_id = v_op.order_id FOR UPDATE;
    SELECT p.* INTO v_op FROM payment_operations p WHERE p.operation_id = p_operation_id
    FOR UPDATE;

    IF p_outcome = 'UNKNOWN' THEN
        IF v_op.status IN ('PENDING', 'UNKNOWN') THEN
            UPDATE payment_operations
            SET status = 'UNKNOWN', attempts = attempts + 1, updated_at = now(),
                next_check_at = now() + make_interval(secs => p_retry_seconds)
            WHERE operation_id = p_operation_id;
            IF v_order.status IN ('PENDING', 'CONFIRMED')
               AND v_order.payment_status NOT IN ('CAPTURED', 'VOIDED') THEN
                UPDATE orders SET payment_status = 'UNKNOWN', updated_at = now()
                WHERE order_id = v_order.order_id;
            END IF;
        ELSE
            v_applied := false;
        END IF;

    ELSIF v_op.kind = 'AUTHORIZE' THEN
        IF v_op.status = 'FAILED' AND p_outcome = 'AUTHORIZED' THEN
            -- An authorization that arrives after we gave up on it (released
            -- the seats): never sell, void it.
            UPDATE payment_operations SET provider_ref = coalesce(provider_ref, p_provider_ref),
                   updated_at = now()
            WHERE operation_id = p_operation_id;
            v_follow_kind := 'VOID';
        ELSIF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome = 'REQUIRES_ACTION' THEN
            IF v_op.status = 'REQUIRES_ACTION' THEN
                v_applied := false;
            ELSE
                UPDATE payment_operations
                SET status = 'REQUIRES_ACTION', provider_ref = coalesce(p_provider_ref, provider_ref),
                    next_action = p_next_action, updated_at = now(),
                    next_check_at = now() + make_interval(secs => p_retry_seconds)
                WHERE operation_id = p_operation_id;
                UPDATE orders SET payment_status = 'REQUIRES_ACTION', updated_at = now()
                WHERE order_id = v_order.order_id AND status = 'PENDING';
            END IF;
        ELSIF p_outcome = 'AUTHORIZED' THEN
            UPDATE payment_operations
            SET status = 'SUCCEEDED', provider_ref = coalesce(p_provider_ref, provider_ref),
                next_action = NULL, updated_at = now()
            WHERE operation_id = p_operation_id;
            -- The sale: the hold and every seat must still be ours, at the price.
            SELECT count(*) FILTER (WHERE si.hold_id = v_hold.hold_id
                                      AND si.status = 'PAYMENT_PENDING'),
                   sum(pt.price_minor)
            INTO v_ok, v_amount
            FROM seat_inventory si
            JOIN seats s ON s.event_id = si.event_id AND s.seat_id = si.seat_id
            JOIN price_tiers pt ON pt.event_id = si.event_id AND pt.tier_id = s.tier_id
                               AND pt.price_version = si.price_version
            WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids);
            IF v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING'
               AND v_ok = v_hold.seat_count AND v_amount = v_order.amount_minor
               AND v_op.amount_minor = v_order.amount_minor THEN
                INSERT INTO order_items (order_id, event_id, seat_id, price_minor)
                SELECT v_order.order_id, v_hold.event_id, (seat ->> 'seat_id')::integer,
                       (seat ->> 'price_minor')::bigint
                FROM jsonb_array_elements(v_hold.seats) AS seat;
                UPDATE seat_inventory
                SET status = 'SOLD', order_id = v_order.order_id, hold_expires_at = NULL,
                    version = version + 1
                WHERE event_id = v_hold.event_id AND seat_id = ANY (v_hold.seat_ids)
                  AND hold_id = v_hold.hold_id;
                UPDATE holds SET status = 'CONFIRMED', updated_at = now()
                WHERE hold_id = v_hold.hold_id;
                UPDATE orders SET status = 'CONFIRMED', payment_status = 'AUTHORIZED',
                       updated_at = now()
                WHERE order_id = v_order.order_id;
                INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
                VALUES (v_hold.event_id, v_order.order_id, 'order.confirmed',
                        jsonb_build_object('order_id', v_order.order_id,
                                           'hold_id', v_hold.hold_id,
                                           'account_id', v_order.account_id,
                                           'seat_ids', to_jsonb(v_hold.seat_ids),
                                           'amount_minor', v_order.amount_minor,
                                           'currency', v_order.currency));
                v_follow_kind := 'CAPTURE';
            ELSE
                UPDATE orders SET status = 'FAILED', cancel_reason = 'hold_lost', updated_at = now()
                WHERE order_id = v_order.order_id AND status = 'PENDING';
                v_follow_kind := 'VOID';
            END IF;
        ELSIF p_outcome IN ('DECLINED', 'NO_AUTHORIZATION') THEN
            UPDATE payment_operations
            SET status = 'FAILED', failure_code = coalesce(p_failure_code, lower(p_outcome)),
                provider_ref = coalesce(p_provider_ref, provider_ref), next_action = NULL,
                updated_at = now()
            WHERE operation_id = p_operation_id;
            IF v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING' THEN
                IF p_outcome = 'DECLINED' AND v_hold.expires_at > now() THEN
                    -- Another card may be tried until the original deadline.
                    UPDATE holds SET status = 'HELD', updated_at = now()
                    WHERE hold_id = v_hold.hold_id;
                    UPDATE seat_inventory
                    SET status = 'HELD', hold_expires_at = v_hold.expires_at,
                        version = version + 1
                    WHERE event_id = v_hold.event_id AND seat_id = ANY (v_hold.seat_ids)
                      AND hold_id = v_hold.hold_id AND status = 'PAYMENT_PENDING';
                    UPDATE orders SET payment_status = 'DECLINED', updated_at = now()
                    WHERE order_id = v_order.order_id;
                ELSE
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                    UPDATE orders
                    SET status = 'FAILED', updated_at = now(),
                        payment_status = CASE WHEN p_outcome = 'DECLINED' THEN 'DECLINED'
                                              ELSE 'FAILED' END,
                        cancel_reason = CASE WHEN p_outcome = 'DECLINED' THEN 'payment_declined'
                                             ELSE 'payment_not_completed' END
                    WHERE order_id = v_order.order_id;
                END IF;
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to an authorization', p_outcome;
        END IF;

    ELSIF v_op.kind = 'CAPTURE' THEN
        IF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome = 'CAPTURED' THEN
            UPDATE payment_operations SET status = 'SUCCEEDED', updated_at = now(),
                   provider_ref = coalesce(p_provider_ref, provider_ref)
            WHERE operation_id = p_operation_id;
            UPDATE orders SET payment_status = 'CAPTURED', updated_at = now()
            WHERE order_id = v_order.order_id;
        ELSIF p_outcome = 'CAPTURE_FAILED' THEN
            UPDATE payment_operations SET status = 'FAILED', updated_at = now(),
                   failure_code = coalesce(p_failure_code, 'capture_failed')
            WHERE operation_id = p_operation_id;
            -- The audited compensation, before any ticket exists (tickets are
            -- issued only once the payment is captured).
            IF EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = v_order.order_id) THEN
                RAISE EXCEPTION 'order % has tickets; compensation needs an operator',
                    v_order.order_id;
            END IF;
            IF v_order.status = 'CONFIRMED' THEN
                UPDATE order_items SET valid = false WHERE order_id = v_order.order_id;
                PERFORM onsale_release_paid_hold(v_hold.hold_id, 'SOLD', 'compensated',
                                                 'RELEASED');
                UPDATE orders SET status = 'CANCELLED', payment_status = 'CAPTURE_FAILED',
                       cancel_reason = 'capture_failed', updated_at = now()
                WHERE order_id = v_order.order_id;
                INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
                VALUES (v_order.event_id, v_order.order_id, 'order.cancelled',
                        jsonb_build_object('order_id', v_order.order_id,
                                           'reason', 'capture_failed'));
                INSERT INTO payment_events (order_id, operation_id, action, detail)
                VALUES (v_order.order_id, p_operation_id, 'compensated',
                        jsonb_build_object('seat_ids', to_jsonb(v_hold.seat_ids),
                                           'failure_code', p_failure_code));
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to a capture', p_outcome;
        END IF;

    ELSIF v_op.kind = 'VOID' THEN
        IF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome IN ('VOIDED', 'VOID_FAILED') THEN
            UPDATE payment_operations
            SET status = CASE WHEN p_outcome = 'VOIDED' THEN 'SUCCEEDED' ELSE 'FAILED' END,
                failure_code = p_failure_code, updated_at = now()
            WHERE operation_id = p_operation_id;
            SELECT p.* INTO v_parent FROM payment_operations p
            WHERE p.operation_id = v_op.parent_operation_id FOR UPDATE;
            IF p_outcome = 'VOIDED' THEN
                UPDATE orders SET payment_status = 'VOIDED', updated_at = now()
                WHERE order_id = v_order.order_id AND status <> 'CONFIRMED';
            END IF;
            -- A void of an authorization still open (abandoned 3-D Secure,
            -- unknown past the grace) ends it: now the seats can go.
            IF v_parent.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION')
               AND p_outcome = 'VOIDED' THEN
                UPDATE payment_operations
                SET status = 'FAILED', failure_code = 'voided', updated_at = now()
                WHERE operation_id = v_parent.operation_id;
                IF v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING' THEN
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                    UPDATE orders SET status = 'FAILED', cancel_reason = 'payment_not_completed',
                           updated_at = now()
                    WHERE order_id = v_order.order_id;
                END IF;
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to a void', p_outcome;
        END IF;
    END IF;

    IF v_follow_kind IS NOT NULL THEN
        INSERT INTO payment_operations (order_id, kind, parent_operation_id, amount_minor,
                                        currency, provider_ref, next_check_at)
        VALUES (v_order.order_id, v_follow_kind, p_operation_id, v_op.amount_minor,
                v_op.currency, coalesce(p_provider_ref, v_op.provider_ref),
                now() + make_interval(secs => p_retry_seconds))
        ON CONFLICT DO NOTHING
        RETURNING operation_id INTO v_follow;
        IF v_follow IS NULL THEN  -- already created by an earlier delivery
            SELECT p.operation_id INTO v_follow FROM payment_operations p
            WHERE p.parent_operation_id = p_operation_id AND p.kind = v_follow_kind
              AND p.status IN ('PENDING', 'UNKNOWN');
        END IF;
    END IF;
    IF v_applied THEN
        INSERT INTO payment_events (order_id, operation_id, action, detail)
        VALUES (v_order.order_id, p_operation_id, lower(v_op.kind) || ':' || lower(p_outcome),
                jsonb_build_object('source', p_source, 'failure_code', p_failure_code,
                                   'follow_up', v_follow_kind));
    END IF;
    SELECT o.status, o.payment_status INTO v_order FROM orders o
    WHERE o.order_id = v_op.order_id;
    RETURN jsonb_build_object(
        'applied', v_applied, 'order_id', v_op.order_id, 'order_status', v_order.status,
        'payment_status', v_order.payment_status,
        'follow_up', CASE WHEN v_follow IS NULL THEN NULL ELSE
            jsonb_build_object('operation_id', v_follow, 'kind', v_follow_kind,
                               'provider_ref', coalesce(p_provider_ref, v_op.provider_ref))
            END);
END $$;

-- Give up on an open authorization past its grace (3-D Secure never
-- finished): create the VOID that, once the provider confirms it, releases
-- the seats. Returns the VOID operation to send (existing one if any).
CREATE FUNCTION onsale_payment_abandon(p_operation_id uuid, p_provider_ref text)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_op record;
    v_void uuid;
BEGIN
    SELECT p.* INTO v_op FROM payment_operations p
    WHERE p.operation_id = p_operation_id FOR UPDATE;
    IF v_op.kind <> 'AUTHORIZE' OR v_op.status NOT IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') THEN
        RETURN NULL;
    END IF;
    INSERT INTO payment_operations (order_id, kind, parent_operation_id, amount_minor, currency,
                                    provider_ref)
    VALUES (v_op.order_id, 'VOID', p_operation_id, v_op.amount_minor, v_op.currency,
            coalesce(p_provider_ref, v_op.provider_ref))
    ON CONFLICT DO NOTHING
    RETURNING operation_id INTO v_void;
    IF v_void IS NULL THEN
        SELECT p.operation_id INTO v_void FROM payment_operations p
        WHERE p.parent_operation_id = p_operation_id AND p.kind = 'VOID';
    END IF;
    INSERT INTO payment_events (order_id, operation_id, action, detail)
    VALUES (v_op.order_id, p_operation_id, 'abandoned', jsonb_build_object('void', v_void));
    RETURN v_void;
END $$;
