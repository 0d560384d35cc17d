-- onsale_sweep: release one batch of expired holds (the sweeper,
-- core/sweeper.py). Only the predicate (hold_id, status HELD, deadline
-- passed by database time) releases a seat, so a late or duplicated sweep
-- cannot touch a newer hold or a sold seat. Rows are taken with SKIP LOCKED:
-- the sweeper never waits for a shopper. A GA hold gives its places back
-- to the stripes they came from (onsale_ga_move; counted in seats_released).
-- requires: onsale_ga_move

CREATE OR REPLACE FUNCTION onsale_sweep(p_batch integer, OUT holds_expired integer, OUT seats_released integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_due uuid[];
BEGIN
    SELECT coalesce(array_agg(d.hold_id), '{}') INTO v_due
    FROM (SELECT h.hold_id FROM holds h
          WHERE h.status = 'HELD' AND h.expires_at <= now()
          ORDER BY h.expires_at
          LIMIT p_batch
          FOR UPDATE SKIP LOCKED) AS d;

    WITH locked AS (
        SELECT si.event_id, si.seat_id, d.hold_id
        FROM holds d
        JOIN seat_inventory si ON si.event_id = d.event_id AND si.seat_id = ANY (d.seat_ids)
        WHERE d.hold_id = ANY (v_due)
          AND si.hold_id = d.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.event_id, si.seat_id
        FOR UPDATE OF si SKIP LOCKED
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = l.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING l.hold_id, si.event_id, si.seat_id, old.hold_id AS prior_hold_id,
                  old.status AS prior_status, old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT r.hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS seats_released = ROW_COUNT;
    seats_released := seats_released + onsale_ga_move(
        ARRAY(SELECT h.hold_id FROM holds h
              WHERE h.hold_id = ANY (v_due) AND h.ga_tier_id IS NOT NULL),
        'HELD', 'RETURNED', 'expired');

    -- A hold is finished once none of its seats is still held under its id
    -- (a seat re-claimed lazily by a newer hold no longer carries it).
    WITH done AS (
        UPDATE holds h SET status = 'EXPIRED', updated_at = now()
        WHERE h.hold_id = ANY (v_due) AND h.status = 'HELD'
          AND NOT EXISTS (SELECT 1 FROM seat_inventory si
                          WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
                            AND si.hold_id = h.hold_id AND si.status = 'HELD')
        RETURNING h.hold_id, h.event_id
    ), ob AS (
        INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
        SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
        FROM done
    )
    SELECT count(*) INTO holds_expired FROM done;
END $$;
