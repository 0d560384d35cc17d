-- onsale_checkout_begin: step 1 of a checkout (docs/payments.md). One
-- transaction validates the hold (ours, HELD, enough time left, the ticket
-- limit, every seat still ours at the held price), creates the order
-- (PENDING; one per hold, reused after a decline) and its AUTHORIZE
-- operation, and moves hold and seats to PAYMENT_PENDING with a one-time
-- bounded grace. The authorization itself runs afterwards, outside any
-- transaction (core/payments.py). Returns the order and the operation to
-- send; a replay (same key, same body) returns what the first request
-- created. A GA hold's places are checked the same way (ga_hold_places,
-- at the tier's current price); they stay counted as held while in payment.
-- requires: onsale_owned

CREATE OR REPLACE FUNCTION onsale_checkout_begin(
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
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
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
        PERFORM onsale_durable();
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
    v_owned := onsale_owned(v_event, p_account_id);
    IF v_owned > v_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', v_max, 'owned', v_owned, 'requested', 0)::text;
    END IF;

    IF v_hold.ga_tier_id IS NOT NULL THEN
        -- The places (moved only under the hold's row lock, which we hold).
        SELECT coalesce(sum(p.quantity), 0) INTO v_ok FROM ga_hold_places p
        WHERE p.hold_id = p_hold_id AND p.status = 'HELD';
        SELECT v_ok * t.price_minor INTO v_amount FROM ga_tiers t
        WHERE t.event_id = v_event AND t.tier_id = v_hold.ga_tier_id;
    ELSE
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
    END IF;
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
