-- onsale_ga_set_stripes: give a GA tier p_n active stripes (0 .. p_n - 1),
-- on sale or not. New stripes start empty; stripes past p_n are retired
-- (holds prefer the active ones; their available places are drained by the
-- next rebalance, which the caller runs). No count changes here, so capacity
-- is conserved trivially, and no stripe is locked or waited for: only the
-- tier row, FOR NO KEY UPDATE (a hold's foreign-key check on it, FOR KEY
-- SHARE, must not wait behind this), and only missing stripes are inserted
-- (probing an existing one would wait for a hold updating it). Returns the
-- tier's previous stripe count.

CREATE OR REPLACE FUNCTION onsale_ga_set_stripes(p_event_id bigint, p_tier_id smallint,
                                                 p_n smallint)
RETURNS smallint LANGUAGE plpgsql AS $$
DECLARE
    v_old smallint;
BEGIN
    IF p_n < 1 OR p_n > 64 THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_request',
            DETAIL = '{"reason": "stripes must be from 1 to 64"}';
    END IF;
    SELECT t.stripes INTO v_old FROM ga_tiers t
    WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'ga_tier_not_found',
            DETAIL = jsonb_build_object('tier_id', p_tier_id)::text;
    END IF;
    INSERT INTO ga_buckets (event_id, tier_id, stripe, available)
    SELECT p_event_id, p_tier_id, s, 0 FROM generate_series(0, p_n - 1) AS s
    WHERE NOT EXISTS (SELECT 1 FROM ga_buckets b WHERE b.event_id = p_event_id
                                                  AND b.tier_id = p_tier_id AND b.stripe = s)
    ON CONFLICT (event_id, tier_id, stripe) DO NOTHING;
    UPDATE ga_tiers SET stripes = p_n WHERE event_id = p_event_id AND tier_id = p_tier_id;
    RETURN v_old;
END $$;
