-- onsale_issue_tickets: issue the tickets of an order from its
-- order.confirmed message (core/tickets.py), one per seat or GA place. Idempotent: a duplicate delivery
-- issues nothing new. Tickets wait for the capture, so a compensation
-- (capture definitively failed) always comes before any ticket.
--   'issued'     tickets written now
--   'duplicate'  they already existed
--   'wait'       confirmed, payment not captured yet: deliver again later
--   'cancelled'  the order is not (or no longer) confirmed: nothing to issue

CREATE OR REPLACE FUNCTION onsale_issue_tickets(p_order_id uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_order record;
    v_count integer;
BEGIN
    SELECT o.order_id, o.status, o.payment_status, o.event_id INTO v_order
    FROM orders o WHERE o.order_id = p_order_id FOR SHARE;
    IF NOT FOUND OR v_order.status <> 'CONFIRMED' THEN
        RETURN 'cancelled';
    END IF;
    IF v_order.payment_status <> 'CAPTURED' THEN
        RETURN 'wait';
    END IF;
    INSERT INTO tickets (order_id, event_id, seat_id, code)
    SELECT p_order_id, oi.event_id, oi.seat_id,
           upper(replace(gen_random_uuid()::text, '-', ''))
    FROM order_items oi WHERE oi.order_id = p_order_id AND oi.valid
    ON CONFLICT (order_id, seat_id) DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    -- One ticket per GA place: place 1 .. quantity of each tier bought.
    WITH issued AS (
        INSERT INTO tickets (order_id, event_id, ga_tier_id, place, code)
        SELECT p_order_id, gi.event_id, gi.tier_id, n,
               upper(replace(gen_random_uuid()::text, '-', ''))
        FROM ga_order_items gi CROSS JOIN LATERAL generate_series(1, gi.quantity) AS n
        WHERE gi.order_id = p_order_id AND gi.valid
        ON CONFLICT (order_id, ga_tier_id, place) WHERE ga_tier_id IS NOT NULL DO NOTHING
        RETURNING 1
    )
    SELECT v_count + count(*) INTO v_count FROM issued;
    RETURN CASE WHEN v_count > 0 THEN 'issued' ELSE 'duplicate' END;
END $$;
