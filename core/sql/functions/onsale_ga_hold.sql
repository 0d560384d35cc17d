-- onsale_ga_hold: hold p_quantity places of a GA tier, all or nothing, in one
-- transaction and one round trip (core/hold_store.py). The same answers and
-- rules as onsale_hold: (status_code, body, lock_wait_ms, replayed) with 201
-- and the hold, or 409 sold_out / insufficient_quantity (with what is left)
-- as a row, or the replay of an earlier request with this key; the rare
-- refusals raise (OS4xx). A tier that looks short in committed state, with
-- no expired hold to give places back, is refused before any lock (after
-- the replay check); otherwise the account's advisory lock and limits come
-- first (onsale_hold_limit), then the stripes (onsale_ga_take; p_spread: see
-- there). status_code 0: nothing written, run the statement again with
-- p_spread true.
-- requires: onsale_ga_take, onsale_ga_short, onsale_hold_limit, onsale_owned

CREATE OR REPLACE FUNCTION onsale_ga_hold(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_tier_id smallint,
    p_quantity integer, p_spread boolean,
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_event record;
    v_tier record;
    v_left bigint;
    v_replay jsonb;
    v_owned bigint;
    v_take record;
    v_t0 timestamptz;
    v_hold_id uuid := onsale_new_id();  -- names its shard (docs/scaling.md)
    v_expires timestamptz;
    v_line jsonb;
    v_inserted integer;
BEGIN
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
    lock_wait_ms := 0;
    replayed := true;
    SELECT e.hold_ttl_seconds, e.currency, e.max_tickets_per_account, e.onsale_at
    INTO v_event FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_event.onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_event.onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    SELECT t.name, t.price_minor, t.max_per_hold, t.max_per_account, t.stripes INTO v_tier
    FROM ga_tiers t WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'ga_tier_not_found',
            DETAIL = jsonb_build_object('tier_id', p_tier_id)::text;
    END IF;
    IF p_quantity < 1 OR p_quantity > v_tier.max_per_hold THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_quantity',
            DETAIL = jsonb_build_object('max_per_hold', v_tier.max_per_hold)::text;
    END IF;

    -- Fail fast without locking: too few places in committed state, and no
    -- expired hold of the tier whose places are about to come back.
    SELECT coalesce(sum(b.available), 0) INTO v_left
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    IF v_left < p_quantity AND NOT EXISTS (
            SELECT 1 FROM holds h
            WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
              AND h.status = 'HELD' AND h.expires_at <= now()) THEN
        v_replay := onsale_replay(p_account_id, p_key, p_digest);
        IF v_replay IS NOT NULL THEN
            status_code := (v_replay ->> 'status_code')::integer;
            body := v_replay -> 'body';
            RETURN;
        END IF;
        status_code := 409;
        replayed := false;
        body := onsale_ga_short(v_left::integer, p_quantity);
        RETURN;
    END IF;

    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest, p_quantity,
                                  v_event.max_tickets_per_account);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        RETURN;
    END IF;
    IF v_tier.max_per_account IS NOT NULL THEN
        v_owned := onsale_owned(p_event_id, p_account_id, p_tier_id);
        IF v_owned + p_quantity > v_tier.max_per_account THEN
            RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
                DETAIL = jsonb_build_object('limit', v_tier.max_per_account, 'owned', v_owned,
                                            'requested', p_quantity,
                                            'tier_id', p_tier_id)::text;
        END IF;
    END IF;

    v_t0 := clock_timestamp();
    SELECT * INTO v_take
    FROM onsale_ga_take(p_event_id, p_tier_id, v_hold_id, p_quantity, v_tier.stripes,
                        p_spread);
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
    replayed := false;
    IF v_take.spread THEN
        status_code := 0;
        RETURN;
    END IF;
    IF v_take.taken IS NULL THEN
        -- Under the advisory lock onsale_hold_limit found no replay: a plain 409.
        status_code := 409;
        body := onsale_ga_short(v_take.remaining, p_quantity);
        RETURN;
    END IF;

    -- The full TTL from the moment of the claim, however long we waited for locks.
    v_expires := clock_timestamp() + make_interval(secs => v_event.hold_ttl_seconds);
    v_line := jsonb_build_object('tier_id', p_tier_id, 'name', v_tier.name,
                                 'quantity', p_quantity, 'price_minor', v_tier.price_minor);
    body := jsonb_build_object(
        'hold_id', v_hold_id, 'event_id', p_event_id, 'status', 'HELD',
        'expires_at', to_char(v_expires AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'seats', '[]'::jsonb, 'ga', v_line,
        'amount_minor', p_quantity * v_tier.price_minor, 'currency', v_event.currency);
    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id)
    VALUES (p_account_id, p_key, p_digest, 201, body, v_hold_id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry', DETAIL = '{}';
    END IF;
    INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids, seats,
                       seat_count, amount_minor, currency, expires_at, ga_tier_id, ga)
    VALUES (v_hold_id, p_event_id, p_account_id, p_key, 'HELD', '{}', '[]', p_quantity,
            p_quantity * v_tier.price_minor, v_event.currency, v_expires, p_tier_id, v_line);
    INSERT INTO ga_hold_places (hold_id, event_id, tier_id, stripe, quantity)
    SELECT v_hold_id, p_event_id, p_tier_id, (x ->> 'stripe')::smallint,
           (x ->> 'quantity')::integer
    FROM jsonb_array_elements(v_take.taken) AS x;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (p_event_id, v_hold_id, 'hold.created', body);
    status_code := 201;
END $$;
