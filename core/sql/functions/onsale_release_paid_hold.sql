-- onsale_release_paid_hold: release the seats of a hold in payment (or sold,
-- for a compensation), log them in hold_releases with p_reason, and end the
-- hold with p_hold_status (outbox hold.<status>). The caller holds the hold
-- row lock. A GA hold's places (held while in payment, or sold) go back to
-- their stripes. Called by onsale_payment_apply.
-- requires: onsale_ga_move

CREATE OR REPLACE FUNCTION onsale_release_paid_hold(p_hold_id uuid, p_from text, p_reason text,
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
    v_n := v_n + onsale_ga_move(ARRAY[p_hold_id],
                                CASE WHEN p_from = 'SOLD' THEN 'SOLD' ELSE 'HELD' END,
                                'RETURNED', p_reason);
    UPDATE holds SET status = p_hold_status, updated_at = now() WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || lower(p_hold_status),
            jsonb_build_object('hold_id', p_hold_id, 'reason', p_reason));
    RETURN v_n;
END $$;
