-- onsale_release: release a hold by its owner. Idempotent: releasing a
-- released or expired hold returns it unchanged; a hold in payment or sold
-- is refused (OS409 hold_not_releasable). A hold whose deadline already
-- passed ends as EXPIRED, whoever gets to it first. A GA hold's places go
-- back to their stripes (onsale_ga_move).
-- requires: onsale_ga_move

CREATE OR REPLACE FUNCTION onsale_release(p_hold_id uuid, p_account_id uuid)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_hold record;
BEGIN
    SELECT h.hold_id, h.event_id, h.status, h.seat_ids,
           CASE WHEN h.expires_at <= now() THEN 'expired' ELSE 'released' END AS outcome
    INTO v_hold
    FROM holds h WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    IF v_hold.status IN ('PAYMENT_PENDING', 'CONFIRMED') THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_not_releasable',
            DETAIL = jsonb_build_object('status', v_hold.status)::text;
    END IF;
    IF v_hold.status <> 'HELD' THEN
        RETURN p_hold_id;
    END IF;

    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;

    WITH released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD'
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           v_hold.outcome
    FROM released r;

    PERFORM onsale_ga_move(ARRAY[p_hold_id], 'HELD', 'RETURNED', v_hold.outcome);

    -- A hold whose deadline already passed ends as EXPIRED, whether its owner
    -- or the sweeper gets to it first.
    UPDATE holds SET status = upper(v_hold.outcome), updated_at = now()
    WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || v_hold.outcome,
            jsonb_build_object('hold_id', p_hold_id));
    RETURN p_hold_id;
END $$;
