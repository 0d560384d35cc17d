-- onsale_expire_hold: release one expired hold by id (the sweeper's
-- predicate, exposed so a delayed expiry message can be replayed safely).
-- Returns the number of seats (or GA places) released.
-- requires: onsale_ga_move

CREATE OR REPLACE FUNCTION onsale_expire_hold(p_hold_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
BEGIN
    -- The documented lock order: the hold row before its seats.
    PERFORM 1 FROM holds WHERE hold_id = p_hold_id FOR UPDATE;
    WITH h AS (SELECT event_id, seat_ids FROM holds WHERE hold_id = p_hold_id),
    locked AS (
        SELECT si.event_id, si.seat_id FROM seat_inventory si, h
        WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.seat_id
        FOR UPDATE OF si
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF EXISTS (SELECT 1 FROM holds WHERE hold_id = p_hold_id AND ga_tier_id IS NOT NULL
                                     AND status = 'HELD' AND expires_at <= now()) THEN
        v_n := v_n + onsale_ga_move(ARRAY[p_hold_id], 'HELD', 'RETURNED', 'expired');
    END IF;
    WITH done AS (
        UPDATE holds SET status = 'EXPIRED', updated_at = now()
        WHERE hold_id = p_hold_id AND status = 'HELD' AND expires_at <= now()
        RETURNING hold_id, event_id
    )
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
    FROM done;
    RETURN v_n;
END $$;
