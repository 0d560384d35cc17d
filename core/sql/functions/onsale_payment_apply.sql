-- onsale_payment_apply: steps 3-5 of a checkout (docs/payments.md): apply
-- one provider answer (a response, a webhook or a query) to one operation.
-- p_outcome:
--   AUTHORIZE: UNKNOWN, REQUIRES_ACTION, AUTHORIZED, DECLINED, NO_AUTHORIZATION
--   CAPTURE:   UNKNOWN, CAPTURED, CAPTURE_FAILED
--   VOID:      UNKNOWN, VOIDED, VOID_FAILED
-- Returns {applied, mismatch, order_id, order_status, payment_status, follow_up, order}:
-- follow_up names an operation to send now (CAPTURE or VOID); order: see its RETURN.
--
-- State only moves forward: a definitive operation never changes again.
--   * An authorization sells the seats in one transaction (SOLD, CONFIRMED,
--     outbox order.confirmed) and creates the CAPTURE, sent after the commit.
--   * An authorization that cannot be sold (hold lost, price changed, or
--     abandoned by the reconciler: a VOID exists) fails the order, frees the
--     seats at once (no capture will ever be sent for them) and is voided.
--   * A late authorization for an operation already failed is voided, never
--     sold; a void of it that had found nothing (the intent did not exist
--     yet) is reopened, so it is cancelled rather than left open.
--   * A decline returns the hold to HELD while its original deadline lasts,
--     or releases it; a capture that definitively failed is compensated
--     (audited) before any ticket exists.
--   * UNKNOWN and CAPTURED answers change no seat, so they lock only the
--     order and the operation (the tail of the lock ladder), not the account,
--     the hold and its seats.
--   * A GA hold sells, frees or compensates its places the same way, through
--     onsale_ga_move (its stripes are the last locks taken).
--   * An answer about another PaymentIntent than the one the operation
--     recorded (p_provider_ref differs from a stored provider_ref), checked
--     under the operation's lock, is applied as UNKNOWN with failure code
--     'mismatch_id'; so is an UNKNOWN the caller already found contradicting
--     the operation (failure code 'mismatch_<field>': amount and currency are
--     checked in core/payment_rules.py against the same immutable columns).
--   * The order's payment_status is its newest authorization's: an UNKNOWN or a
--     VOIDED about one the order has replaced (a late answer to a declined
--     card) leaves it as it is.
--     Either is logged in payment_events as '<kind>:mismatch' and returned as
--     mismatch = true: it never sells, captures, voids or releases anything
--     (docs/payments.md#answers-that-do-not-match-their-operation).
-- requires: onsale_ga_move, onsale_release_paid_hold

CREATE OR REPLACE FUNCTION onsale_payment_apply(
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
    v_void record;
    v_mismatch boolean := false;
    v_superseded boolean;
BEGIN
    SELECT p.*, o.account_id, o.event_id, o.hold_id INTO v_op
    FROM payment_operations p JOIN orders o ON o.order_id = p.order_id
    WHERE p.operation_id = p_operation_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'operation_not_found', DETAIL = '{}';
    END IF;
    IF p_outcome IN ('UNKNOWN', 'CAPTURED') THEN
        -- Only the operation and the order's payment status change: no seat
        -- moves, so only the tail of the lock ladder (order, operation) is taken.
        SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = v_op.hold_id;
    ELSE
        PERFORM pg_advisory_xact_lock(hashtextextended(v_op.account_id::text, v_op.event_id));
        SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = v_op.hold_id FOR UPDATE;
        PERFORM 1 FROM seat_inventory si
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
        ORDER BY si.seat_id FOR UPDATE;
    END IF;
    SELECT o.* INTO v_order FROM orders o WHERE o.order_id = v_op.order_id FOR UPDATE;
    SELECT p.* INTO v_op FROM payment_operations p WHERE p.operation_id = p_operation_id
    FOR UPDATE;
    IF p_outcome <> 'UNKNOWN' AND p_provider_ref IS NOT NULL AND v_op.provider_ref IS NOT NULL
       AND p_provider_ref <> v_op.provider_ref THEN
        p_outcome := 'UNKNOWN';  -- needs no more locks than were taken above
        p_failure_code := 'mismatch_id';
    END IF;
    v_mismatch := p_outcome = 'UNKNOWN' AND starts_with(coalesce(p_failure_code, ''), 'mismatch_');
    -- An answer about an authorization the order has since replaced (a declined card,
    -- then another checkout) never writes the order's payment_status: that is the
    -- newer authorization's. Read under the order's lock, which checkout_begin takes.
    v_superseded := EXISTS (
        SELECT 1 FROM payment_operations a, payment_operations newer
        WHERE a.operation_id = coalesce(v_op.parent_operation_id, v_op.operation_id)
          AND newer.order_id = v_op.order_id AND newer.kind = 'AUTHORIZE'
          AND newer.created_at > a.created_at);

    IF p_outcome = 'UNKNOWN' THEN
        IF v_op.status IN ('PENDING', 'UNKNOWN') THEN
            UPDATE payment_operations
            SET status = 'UNKNOWN', attempts = attempts + 1, updated_at = now(),
                next_check_at = now() + make_interval(secs => p_retry_seconds)
            WHERE operation_id = p_operation_id;
            IF v_order.status IN ('PENDING', 'CONFIRMED') AND NOT v_superseded
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
            -- A void that found nothing to cancel (the intent did not exist
            -- yet) is sent again, now that there is one.
            UPDATE payment_operations
            SET status = 'PENDING', provider_ref = p_provider_ref, failure_code = NULL,
                updated_at = now(), next_check_at = now()
            WHERE parent_operation_id = p_operation_id AND kind = 'VOID' AND status = 'SUCCEEDED'
              AND failure_code IN ('no_such_intent', 'not_found')
              AND p_provider_ref IS NOT NULL;
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
            -- The sale: the hold and every seat (or place) must still be ours, at the price.
            IF v_hold.ga_tier_id IS NOT NULL THEN
                SELECT coalesce(sum(p.quantity), 0) INTO v_ok FROM ga_hold_places p
                WHERE p.hold_id = v_hold.hold_id AND p.status = 'HELD';
                SELECT v_ok * t.price_minor INTO v_amount FROM ga_tiers t
                WHERE t.event_id = v_hold.event_id AND t.tier_id = v_hold.ga_tier_id;
            ELSE
                SELECT count(*) FILTER (WHERE si.hold_id = v_hold.hold_id
                                          AND si.status = 'PAYMENT_PENDING'),
                       sum(pt.price_minor)
                INTO v_ok, v_amount
                FROM seat_inventory si
                JOIN seats s ON s.event_id = si.event_id AND s.seat_id = si.seat_id
                JOIN price_tiers pt ON pt.event_id = si.event_id AND pt.tier_id = s.tier_id
                                   AND pt.price_version = si.price_version
                WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids);
            END IF;
            SELECT p.operation_id, p.status INTO v_void FROM payment_operations p
            WHERE p.parent_operation_id = p_operation_id AND p.kind = 'VOID';
            IF v_void.operation_id IS NULL
               AND v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING'
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
                IF v_hold.ga_tier_id IS NOT NULL THEN
                    INSERT INTO ga_order_items (order_id, event_id, tier_id, quantity, price_minor)
                    VALUES (v_order.order_id, v_hold.event_id, v_hold.ga_tier_id, v_ok,
                            v_amount / v_ok);
                    PERFORM onsale_ga_move(ARRAY[v_hold.hold_id], 'HELD', 'SOLD', 'sold');
                END IF;
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
                                           'ga', v_hold.ga,
                                           'amount_minor', v_order.amount_minor,
                                           'currency', v_order.currency));
                v_follow_kind := 'CAPTURE';
            ELSE
                -- Not ours to sell any more (the reconciler gave up on it and
                -- is voiding it, or the hold or price changed): void, and free
                -- the seats now; no capture will ever be sent for them.
                UPDATE orders
                SET status = 'FAILED', updated_at = now(),
                    cancel_reason = CASE WHEN v_void.operation_id IS NULL THEN 'hold_lost'
                                         ELSE 'payment_abandoned' END
                WHERE order_id = v_order.order_id AND status = 'PENDING';
                IF v_hold.status = 'PAYMENT_PENDING' THEN
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                END IF;
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
                UPDATE ga_order_items SET valid = false WHERE order_id = v_order.order_id;
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
            IF p_outcome = 'VOIDED' AND NOT v_superseded THEN
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
    IF v_mismatch THEN  -- every one, applied or not: the operators' trail
        INSERT INTO payment_events (order_id, operation_id, action, detail)
        VALUES (v_order.order_id, p_operation_id, lower(v_op.kind) || ':mismatch',
                jsonb_build_object('source', p_source, 'failure_code', p_failure_code,
                                   'provider_ref', p_provider_ref,
                                   'recorded_ref', v_op.provider_ref, 'applied', v_applied));
    ELSIF v_applied THEN
        INSERT INTO payment_events (order_id, operation_id, action, detail)
        VALUES (v_order.order_id, p_operation_id, lower(v_op.kind) || ':' || lower(p_outcome),
                jsonb_build_object('source', p_source, 'failure_code', p_failure_code,
                                   'follow_up', v_follow_kind));
    END IF;
    SELECT o.status, o.payment_status, o.amount_minor, o.currency, o.cancel_reason,
           o.created_at, o.updated_at
    INTO v_order FROM orders o
    WHERE o.order_id = v_op.order_id;
    RETURN jsonb_build_object(
        'applied', v_applied, 'mismatch', v_mismatch, 'order_id', v_op.order_id,
        'order_status', v_order.status,
        'payment_status', v_order.payment_status,
        'follow_up', CASE WHEN v_follow IS NULL THEN NULL ELSE
            jsonb_build_object('operation_id', v_follow, 'kind', v_follow_kind,
                               'provider_ref', coalesce(p_provider_ref, v_op.provider_ref))
            END,
        -- After an answer about the order's newest authorization: the order's
        -- other fields as this transaction left them (no next action, no ticket
        -- can exist yet when it applied), so a checkout answers without reading
        -- the order again (core/read_model.py checkout_order_json).
        'order', CASE WHEN v_op.kind = 'AUTHORIZE' AND NOT v_superseded THEN jsonb_build_object(
            'hold_id', v_hold.hold_id, 'event_id', v_hold.event_id,
            'amount_minor', v_order.amount_minor, 'currency', v_order.currency,
            'seats', v_hold.seats, 'ga', v_hold.ga, 'cancel_reason', v_order.cancel_reason,
            'hold_expires_at', to_char(v_hold.expires_at AT TIME ZONE 'UTC',
                                       'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'payment_deadline', to_char(v_hold.grace_until AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'created_at', to_char(v_order.created_at AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'updated_at', to_char(v_order.updated_at AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) END);
END $$;
