-- onsale_ga_take: take p_quantity places of a GA tier for a new hold, all or
-- nothing. First one conditional decrement of the stripe the hold's id hashes
-- to (one row locked: the common case on a tier with stock). When that stripe
-- has too few, it answers spread = true having written nothing, and the caller
-- ends the transaction and runs it again with p_spread: a decrement that failed
-- after waiting for the row may keep it locked, and the spread stage must take
-- its locks in order, holding none before (or two shoppers falling through at
-- once could deadlock). A row, not an error: a hot tier running dry would
-- fill the server log with errors. With
-- p_spread every stripe of the tier is locked in order (the sell-out check
-- sums them), expired holds of the tier are ended, and the places are taken
-- across stripes, starting at the hashed one. taken: [{stripe, quantity}] as
-- taken, or NULL with remaining = what is left (all stripes). The caller writes
-- the hold and its ga_hold_places in the same transaction.
-- requires: onsale_ga_expire_due

CREATE OR REPLACE FUNCTION onsale_ga_take(
    p_event_id bigint, p_tier_id smallint, p_hold_id uuid, p_quantity integer,
    p_stripes smallint, p_spread boolean, OUT taken jsonb, OUT remaining integer,
    OUT spread boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_first smallint := ((hashtextextended(p_hold_id::text, p_tier_id) & 9223372036854775807)
                         % p_stripes)::smallint;
    v_need integer := p_quantity;
    v_take integer;
    v_row record;
    v_locked smallint[];
BEGIN
    IF NOT p_spread THEN
        UPDATE ga_buckets b
        SET available = b.available - p_quantity, held = b.held + p_quantity,
            version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_first
          AND b.available >= p_quantity;
        IF NOT FOUND THEN
            spread := true;
            RETURN;
        END IF;
        taken := jsonb_build_array(jsonb_build_object('stripe', v_first, 'quantity', p_quantity));
        RETURN;
    END IF;

    -- Only the stripes locked here are counted and taken from: one added meanwhile
    -- (the tier given more stripes) is not ours to take from in this transaction.
    SELECT array_agg(l.stripe ORDER BY l.stripe) INTO v_locked
    FROM (SELECT b.stripe FROM ga_buckets b
          WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
          ORDER BY b.stripe FOR UPDATE) AS l;
    SELECT coalesce(sum(b.available), 0) INTO remaining
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
                        AND b.stripe = ANY (v_locked);
    IF remaining < p_quantity THEN
        PERFORM onsale_ga_expire_due(p_event_id, p_tier_id, 100);
        SELECT coalesce(sum(b.available), 0) INTO remaining
        FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
                            AND b.stripe = ANY (v_locked);
        IF remaining < p_quantity THEN
            RETURN;
        END IF;
    END IF;
    taken := '[]';
    -- Active stripes (below p_stripes) from the hashed one round, then retired ones.
    FOR v_row IN
        SELECT b.stripe, b.available FROM ga_buckets b
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.available > 0
          AND b.stripe = ANY (v_locked)
        ORDER BY b.stripe >= p_stripes, (b.stripe - v_first + 1000) % 1000
    LOOP
        EXIT WHEN v_need = 0;
        v_take := least(v_need, v_row.available);
        UPDATE ga_buckets b
        SET available = b.available - v_take, held = b.held + v_take, version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_row.stripe;
        taken := taken || jsonb_build_object('stripe', v_row.stripe, 'quantity', v_take);
        v_need := v_need - v_take;
    END LOOP;
    IF v_need > 0 THEN  -- cannot happen with every counted stripe locked: a guard
        RAISE EXCEPTION 'ga take guard: % of % places taken', p_quantity - v_need, p_quantity;
    END IF;
    remaining := NULL;
END $$;
