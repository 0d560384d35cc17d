-- onsale_ga_expire_due: end up to p_limit expired GA holds of one tier and
-- give their places back, as the sweeper would (the same predicate: HELD,
-- deadline passed by database time; rows taken with SKIP LOCKED, so this
-- never waits for a checkout). A GA hold attempt that finds too few places
-- calls it before it answers, so an expired hold never makes a tier look
-- sold out. Returns the number of places returned.
-- requires: onsale_ga_move

CREATE OR REPLACE FUNCTION onsale_ga_expire_due(p_event_id bigint, p_tier_id smallint,
                                                p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_due uuid[];
    v_n integer;
BEGIN
    SELECT coalesce(array_agg(d.hold_id), '{}') INTO v_due
    FROM (SELECT h.hold_id FROM holds h
          WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
            AND h.status = 'HELD' AND h.expires_at <= now()
          ORDER BY h.expires_at
          LIMIT p_limit
          FOR UPDATE SKIP LOCKED) AS d;
    IF cardinality(v_due) = 0 THEN
        RETURN 0;
    END IF;
    v_n := onsale_ga_move(v_due, 'HELD', 'RETURNED', 'expired');
    WITH done AS (
        UPDATE holds SET status = 'EXPIRED', updated_at = now()
        WHERE hold_id = ANY (v_due) AND status = 'HELD' AND expires_at <= now()
        RETURNING hold_id, event_id
    )
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
    FROM done;
    RETURN v_n;
END $$;
