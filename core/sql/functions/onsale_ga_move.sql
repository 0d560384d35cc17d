-- onsale_ga_move: move the places of these GA holds that are counted as
-- p_from ('HELD' or 'SOLD') to p_to ('SOLD', a sale; or 'RETURNED', given
-- back to the stripes they came from), and the stripes' counts with them, in
-- one statement. Only a place row still in p_from moves, so a late or
-- duplicated call moves nothing twice. The stripes are locked first, in key
-- order (the lock order every GA function keeps). A return is logged in
-- ga_releases with p_reason and the hold's state before. Returns the number
-- of places moved. The caller holds the holds' row locks.

CREATE OR REPLACE FUNCTION onsale_ga_move(p_hold_ids uuid[], p_from text, p_to text,
                                          p_reason text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
BEGIN
    IF NOT (p_from IN ('HELD', 'SOLD') AND p_to IN ('SOLD', 'RETURNED') AND p_from <> p_to) THEN
        RAISE EXCEPTION 'onsale_ga_move: % to % is not a move', p_from, p_to;
    END IF;
    PERFORM 1 FROM ga_buckets b
    WHERE (b.event_id, b.tier_id, b.stripe) IN (
        SELECT p.event_id, p.tier_id, p.stripe FROM ga_hold_places p
        WHERE p.hold_id = ANY (p_hold_ids) AND p.status = p_from)
    ORDER BY b.event_id, b.tier_id, b.stripe
    FOR UPDATE OF b;
    WITH moved AS (
        UPDATE ga_hold_places p SET status = p_to
        FROM holds h
        WHERE p.hold_id = ANY (p_hold_ids) AND p.status = p_from AND h.hold_id = p.hold_id
        RETURNING p.hold_id, p.event_id, p.tier_id, p.stripe, p.quantity,
                  h.status AS hold_status, h.expires_at
    ), per_stripe AS (
        SELECT m.event_id, m.tier_id, m.stripe, sum(m.quantity)::integer AS q
        FROM moved m GROUP BY m.event_id, m.tier_id, m.stripe
    ), counted AS (
        UPDATE ga_buckets b
        SET available = b.available + CASE WHEN p_to = 'RETURNED' THEN s.q ELSE 0 END,
            held = b.held - CASE WHEN p_from = 'HELD' THEN s.q ELSE 0 END,
            sold = b.sold + CASE WHEN p_to = 'SOLD' THEN s.q ELSE 0 END
                          - CASE WHEN p_from = 'SOLD' THEN s.q ELSE 0 END,
            version = b.version + 1
        FROM per_stripe s
        WHERE b.event_id = s.event_id AND b.tier_id = s.tier_id AND b.stripe = s.stripe
    ), logged AS (
        INSERT INTO ga_releases (hold_id, event_id, tier_id, stripe, quantity, prior_status,
                                 prior_hold_status, prior_expires_at, reason)
        SELECT m.hold_id, m.event_id, m.tier_id, m.stripe, m.quantity, p_from, m.hold_status,
               m.expires_at, p_reason
        FROM moved m WHERE p_to = 'RETURNED'
    )
    SELECT coalesce(sum(m.quantity), 0) INTO v_n FROM moved m;
    RETURN v_n;
END $$;
