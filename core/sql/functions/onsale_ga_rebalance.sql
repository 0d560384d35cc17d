-- onsale_ga_rebalance: move available places between the stripes of one GA
-- tier (the quota control plane, core/ga_quota.py): p_deltas[i] is added to
-- stripe p_stripes[i]'s available, and they sum to zero, so the tier's
-- capacity is conserved in the one statement that moves them (no concurrent
-- transaction can see one side without the other). The plan was made from an
-- unlocked read: it is applied only if no stripe would go negative now, else
-- nothing moves and -1 is returned. One short transaction, waiting at most
-- p_lock_timeout_ms for each stripe (a hold's lock), so it never queues holds
-- behind it for long. Returns the places moved.

CREATE OR REPLACE FUNCTION onsale_ga_rebalance(
    p_event_id bigint, p_tier_id smallint, p_stripes smallint[], p_deltas integer[],
    p_reason text, p_lock_timeout_ms integer
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_timeout text := current_setting('lock_timeout');
    v_before jsonb;
    v_after jsonb;
    v_moved integer;
BEGIN
    IF cardinality(p_stripes) <> cardinality(p_deltas)
       OR (SELECT coalesce(sum(d), 0) FROM unnest(p_deltas) AS d) <> 0
       OR (SELECT count(DISTINCT s) FROM unnest(p_stripes) AS s) <> cardinality(p_stripes) THEN
        RAISE EXCEPTION 'onsale_ga_rebalance: deltas must pair with distinct stripes and sum to zero';
    END IF;
    PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
    PERFORM 1 FROM ga_buckets b
    WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
    ORDER BY b.stripe FOR UPDATE;
    PERFORM set_config('lock_timeout', v_timeout, true);
    IF EXISTS (SELECT 1 FROM unnest(p_stripes, p_deltas) AS d(stripe, delta)
               LEFT JOIN ga_buckets b ON b.event_id = p_event_id AND b.tier_id = p_tier_id
                                     AND b.stripe = d.stripe
               WHERE b.stripe IS NULL OR b.available + d.delta < 0) THEN
        RETURN -1;
    END IF;
    SELECT jsonb_object_agg(b.stripe, b.available ORDER BY b.stripe) INTO v_before
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    UPDATE ga_buckets b SET available = b.available + d.delta, version = b.version + 1
    FROM unnest(p_stripes, p_deltas) AS d(stripe, delta)
    WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = d.stripe
      AND d.delta <> 0;
    SELECT jsonb_object_agg(b.stripe, b.available ORDER BY b.stripe) INTO v_after
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    SELECT coalesce(sum(d), 0) INTO v_moved FROM unnest(p_deltas) AS d WHERE d > 0;
    IF v_moved > 0 THEN
        INSERT INTO ga_rebalances (event_id, tier_id, moved, before, after, reason)
        VALUES (p_event_id, p_tier_id, v_moved, v_before, v_after, p_reason);
    END IF;
    RETURN v_moved;
END $$;
