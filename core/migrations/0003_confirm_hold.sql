-- 0003: the sale step. Checkout calls this once the payment is authorized:
-- re-lock the seats, check hold id, status, deadline and price, then SOLD +
-- CONFIRMED order + outbox in one transaction. Idempotent on the hold.
CREATE FUNCTION onsale_confirm_hold(p_hold_id uuid, p_account_id uuid)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_event bigint;
    v_hold record;
    v_order uuid;
    v_ok integer;
    v_amount bigint;
BEGIN
    -- Lock order: the account's advisory lock (as the limit check takes it),
    -- then the hold row, then the seats.
    SELECT h.event_id INTO v_event FROM holds h
    WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_account_id::text, v_event));
    SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = p_hold_id FOR UPDATE;
    IF v_hold.status = 'CONFIRMED' THEN
        SELECT order_id INTO v_order FROM orders WHERE hold_id = p_hold_id;
        RETURN v_order;
    END IF;
    IF v_hold.status NOT IN ('HELD', 'PAYMENT_PENDING')
       OR (v_hold.status = 'HELD' AND v_hold.expires_at <= now()) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('status', v_hold.status)::text;
    END IF;

    SELECT count(*) FILTER (WHERE l.hold_id = p_hold_id AND l.status = v_hold.status),
           sum(pt.price_minor)
    INTO v_ok, v_amount
    FROM (SELECT si.seat_id, si.hold_id, si.status, si.price_version
          FROM seat_inventory si
          WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          ORDER BY si.seat_id
          FOR UPDATE) AS l
    JOIN seats s ON s.event_id = v_hold.event_id AND s.seat_id = l.seat_id
    JOIN price_tiers pt ON pt.event_id = v_hold.event_id AND pt.tier_id = s.tier_id
                       AND pt.price_version = l.price_version;
    -- now() is when this transaction began; after waiting for locks, judge the
    -- deadline by the clock, so a hold that expired meanwhile is not sold.
    IF v_hold.status = 'HELD' AND v_hold.expires_at <= clock_timestamp() THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('status', 'EXPIRED')::text;
    END IF;
    IF v_ok <> v_hold.seat_count THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'seats_unavailable',
            DETAIL = '{"reason": "hold_lost"}';
    END IF;
    IF v_amount <> v_hold.amount_minor THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'price_changed',
            DETAIL = jsonb_build_object('amount_minor', v_amount)::text;
    END IF;

    INSERT INTO orders (hold_id, event_id, account_id, status, amount_minor, currency)
    VALUES (p_hold_id, v_hold.event_id, p_account_id, 'CONFIRMED', v_amount, v_hold.currency)
    RETURNING order_id INTO v_order;
    INSERT INTO order_items (order_id, event_id, seat_id, price_minor)
    SELECT v_order, v_hold.event_id, (seat ->> 'seat_id')::integer, (seat ->> 'price_minor')::bigint
    FROM jsonb_array_elements(v_hold.seats) AS seat;
    UPDATE seat_inventory
    SET status = 'SOLD', order_id = v_order, hold_expires_at = NULL, version = version + 1
    WHERE event_id = v_hold.event_id AND seat_id = ANY (v_hold.seat_ids) AND hold_id = p_hold_id;
    UPDATE holds SET status = 'CONFIRMED', updated_at = now() WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, v_order, 'order.confirmed',
            jsonb_build_object('order_id', v_order, 'hold_id', p_hold_id,
                               'seat_ids', to_jsonb(v_hold.seat_ids), 'amount_minor', v_amount));
    RETURN v_order;
END $$;
