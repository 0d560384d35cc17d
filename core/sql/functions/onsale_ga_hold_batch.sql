-- onsale_ga_hold_batch: several GA hold requests for one tier in one
-- transaction and one round trip (core/ga_batch.py gathers the requests that
-- arrive together). Each element i gets the answer onsale_ga_hold would give
-- it, or says that it must go there alone:
--   status_code 201 with the hold, or 409 with a refusal's body (ticket limit,
--     too few places: {code, ...}), or the replay of an earlier request with
--     this key (replayed true);
--   status_code 0: this batch's stripe had too few for it; nothing was written
--     for it: run onsale_ga_hold's spread stage for it alone;
--   status_code NULL: anything unusual (the sale not open, no such tier, a
--     quantity out of bounds, a key reused for another request, an account
--     that already has an element in this batch): nothing was written for it;
--     run onsale_ga_hold for it alone, which answers or raises as it does.
-- The same rules as onsale_ga_hold: an element asking more than the tier has
-- left in committed state (and no expired hold of the tier about to give
-- places back) is refused before any lock, after its replay check; then every
-- other account's advisory lock (in key order, so two batches never wait on
-- each other in a cycle), the limits under them, one stripe row (the one the
-- batch's first new hold id hashes to), taken in element order while it
-- lasts, then every hold, its places, key record and outbox row (key records
-- and holds in (account, key) order, as two batches on two events could
-- otherwise each wait for the other's key row). All or nothing for the batch:
-- any error leaves nothing, and the caller runs every element alone.
-- requires: onsale_ga_short, onsale_owned

CREATE OR REPLACE FUNCTION onsale_ga_hold_batch(
    p_event_id bigint, p_tier_id smallint, p_accounts uuid[], p_keys text[],
    p_digests text[], p_quantities integer[]
) RETURNS TABLE (i integer, status_code integer, body jsonb, lock_wait_ms double precision,
                 replayed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer := cardinality(p_accounts);
    v_event record;
    v_tier record;
    v_status integer[] := array_fill(NULL::integer, ARRAY[v_n]);
    v_body jsonb[] := array_fill(NULL::jsonb, ARRAY[v_n]);
    v_replayed boolean[] := array_fill(false, ARRAY[v_n]);
    v_hold uuid[] := array_fill(NULL::uuid, ARRAY[v_n]);
    v_want boolean[] := array_fill(false, ARRAY[v_n]);
    v_seen uuid[] := '{}';
    v_lock bigint;
    v_prev record;
    v_owned bigint;
    v_stripe smallint;
    v_avail integer;
    v_taken integer := 0;
    v_t0 timestamptz;
    v_wait double precision := 0;
    v_expires timestamptz;
    v_line jsonb;
    v_inserted integer;
    v_made integer := 0;
    v_open boolean := false;
    v_left bigint;
    v_short boolean[] := array_fill(false, ARRAY[v_n]);
BEGIN
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
    SELECT e.hold_ttl_seconds, e.currency, e.max_tickets_per_account, e.onsale_at
    INTO v_event FROM events e WHERE e.event_id = p_event_id;
    IF FOUND AND now() >= v_event.onsale_at THEN
        SELECT t.name, t.price_minor, t.max_per_hold, t.max_per_account, t.stripes
        INTO v_tier FROM ga_tiers t WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id;
        v_open := FOUND;
    END IF;
    IF NOT v_open THEN  -- no such event or tier, or not on sale: each alone
        RETURN QUERY SELECT g, NULL::integer, NULL::jsonb, 0::double precision, false
                     FROM generate_series(1, v_n) AS g;
        RETURN;
    END IF;

    -- Fail fast, as onsale_ga_hold: too few places in committed state, and no
    -- expired hold of the tier whose places are about to come back.
    SELECT coalesce(sum(b.available), 0) INTO v_left
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    IF EXISTS (SELECT 1 FROM unnest(p_quantities) AS q WHERE q > v_left) AND NOT EXISTS (
            SELECT 1 FROM holds h
            WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
              AND h.status = 'HELD' AND h.expires_at <= now()) THEN
        FOR k IN 1 .. v_n LOOP
            CONTINUE WHEN p_quantities[k] <= v_left OR p_quantities[k] < 1
                       OR p_quantities[k] > v_tier.max_per_hold;
            v_short[k] := true;
            SELECT ik.digest, ik.status_code, ik.response INTO v_prev
            FROM idempotency_keys ik
            WHERE ik.account_id = p_accounts[k] AND ik.key = p_keys[k];
            IF NOT FOUND THEN
                v_status[k] := 409;
                v_body[k] := onsale_ga_short(v_left::integer, p_quantities[k]);
            ELSIF v_prev.digest = p_digests[k] THEN
                v_status[k] := v_prev.status_code;
                v_body[k] := v_prev.response;
                v_replayed[k] := true;
                PERFORM onsale_durable();
            END IF;  -- else NULL: onsale_ga_hold raises idempotency_conflict
        END LOOP;
    END IF;

    FOR v_lock IN SELECT DISTINCT hashtextextended(p_accounts[k]::text, p_event_id)
                  FROM generate_subscripts(p_accounts, 1) AS k WHERE NOT v_short[k]
                  ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(v_lock);
    END LOOP;

    FOR k IN 1 .. v_n LOOP
        CONTINUE WHEN v_short[k] OR p_quantities[k] < 1
                   OR p_quantities[k] > v_tier.max_per_hold OR p_accounts[k] = ANY (v_seen);
        v_seen := v_seen || p_accounts[k];
        SELECT ik.digest, ik.status_code, ik.response INTO v_prev
        FROM idempotency_keys ik WHERE ik.account_id = p_accounts[k] AND ik.key = p_keys[k];
        IF FOUND THEN
            IF v_prev.digest = p_digests[k] THEN
                v_status[k] := v_prev.status_code;
                v_body[k] := v_prev.response;
                v_replayed[k] := true;
                PERFORM onsale_durable();
            END IF;  -- else NULL: onsale_ga_hold raises idempotency_conflict
            CONTINUE;
        END IF;
        -- A hold made under this key whose key record has expired: alone, to get
        -- its idempotency_conflict (the hold's insert would fail the whole batch).
        CONTINUE WHEN EXISTS (SELECT 1 FROM holds h WHERE h.account_id = p_accounts[k]
                                                      AND h.idempotency_key = p_keys[k]);
        v_owned := onsale_owned(p_event_id, p_accounts[k]);
        IF v_owned + p_quantities[k] > v_event.max_tickets_per_account THEN
            v_status[k] := 409;
            v_body[k] := jsonb_build_object('code', 'ticket_limit_exceeded',
                                            'limit', v_event.max_tickets_per_account,
                                            'owned', v_owned, 'requested', p_quantities[k]);
            CONTINUE;
        END IF;
        IF v_tier.max_per_account IS NOT NULL THEN
            v_owned := onsale_owned(p_event_id, p_accounts[k], p_tier_id);
            IF v_owned + p_quantities[k] > v_tier.max_per_account THEN
                v_status[k] := 409;
                v_body[k] := jsonb_build_object('code', 'ticket_limit_exceeded',
                                                'limit', v_tier.max_per_account,
                                                'owned', v_owned,
                                                'requested', p_quantities[k],
                                                'tier_id', p_tier_id);
                CONTINUE;
            END IF;
        END IF;
        v_want[k] := true;
        v_hold[k] := onsale_new_id();  -- names its shard (docs/scaling.md)
    END LOOP;

    IF true = ANY (v_want) THEN
        SELECT ((hashtextextended(h::text, p_tier_id) & 9223372036854775807)
                % v_tier.stripes)::smallint
        INTO v_stripe FROM unnest(v_hold) AS h WHERE h IS NOT NULL LIMIT 1;
        v_t0 := clock_timestamp();
        SELECT b.available INTO v_avail FROM ga_buckets b
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_stripe
        FOR UPDATE;
        v_avail := coalesce(v_avail, 0);  -- no such stripe row: nothing fits, all spread
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        v_expires := clock_timestamp() + make_interval(secs => v_event.hold_ttl_seconds);
        FOR k IN 1 .. v_n LOOP
            CONTINUE WHEN NOT v_want[k];
            IF p_quantities[k] > v_avail - v_taken THEN
                v_want[k] := false;
                v_hold[k] := NULL;
                v_status[k] := 0;  -- too few here: the spread stage, alone
                CONTINUE;
            END IF;
            v_taken := v_taken + p_quantities[k];
            v_line := jsonb_build_object('tier_id', p_tier_id, 'name', v_tier.name,
                                         'quantity', p_quantities[k],
                                         'price_minor', v_tier.price_minor);
            v_status[k] := 201;
            v_body[k] := jsonb_build_object(
                'hold_id', v_hold[k], 'event_id', p_event_id, 'status', 'HELD',
                'expires_at', to_char(v_expires AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'seats', '[]'::jsonb, 'ga', v_line,
                'amount_minor', p_quantities[k] * v_tier.price_minor,
                'currency', v_event.currency);
            v_made := v_made + 1;
        END LOOP;
    END IF;

    IF v_made > 0 THEN
        UPDATE ga_buckets b
        SET available = b.available - v_taken, held = b.held + v_taken,
            version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_stripe;
        INSERT INTO idempotency_keys (account_id, key, digest, status_code, response,
                                      resource_id)
        SELECT p_accounts[k], p_keys[k], p_digests[k], 201, v_body[k], v_hold[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY p_accounts[k], p_keys[k]
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_inserted = ROW_COUNT;
        IF v_inserted <> v_made THEN  -- a twin got in first: every element alone
            RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry',
                DETAIL = '{}';
        END IF;
        INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids,
                           seats, seat_count, amount_minor, currency, expires_at, ga_tier_id,
                           ga)
        SELECT v_hold[k], p_event_id, p_accounts[k], p_keys[k], 'HELD', '{}', '[]',
               p_quantities[k], p_quantities[k] * v_tier.price_minor, v_event.currency,
               v_expires, p_tier_id, v_body[k] -> 'ga'
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY p_accounts[k], p_keys[k];
        INSERT INTO ga_hold_places (hold_id, event_id, tier_id, stripe, quantity)
        SELECT v_hold[k], p_event_id, p_tier_id, v_stripe, p_quantities[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k];
        INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
        SELECT p_event_id, v_hold[k], 'hold.created', v_body[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY k;
    END IF;

    RETURN QUERY SELECT k, v_status[k], v_body[k],
                        CASE WHEN v_status[k] = 201 AND NOT v_replayed[k] THEN v_wait
                             ELSE 0 END,
                        v_replayed[k]
                 FROM generate_subscripts(p_accounts, 1) AS k;
END $$;
