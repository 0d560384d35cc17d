-- onsale_hold_commit: write the hold on seats already locked by the caller
-- (sorted ids): seats HELD with the full TTL from the moment of the claim, a
-- seat taken over from an expired hold logged in hold_releases as
-- 'reclaimed', the hold row, the idempotency record and the outbox row
-- hold.created, all in the caller's transaction. If a concurrent twin with
-- the same key got there first, everything rolls back and the caller retries
-- (OSRTY), which then replays the twin's response.
-- Called by onsale_hold and onsale_hold_best.

CREATE OR REPLACE FUNCTION onsale_hold_commit(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    p_ttl integer, p_currency char(3)
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_hold_id uuid := onsale_new_id();  -- names its shard (docs/scaling.md)
    -- The full TTL from the moment of the claim, however long we waited for locks.
    v_expires timestamptz := clock_timestamp() + make_interval(secs => p_ttl);
    v_seats jsonb;
    v_amount bigint;
    v_body jsonb;
    v_inserted integer;
    v_claimed integer;
BEGIN
    -- The claim predicate again, as a second guard; a seat taken over from an
    -- expired hold is logged as reclaimed, with the state it had.
    WITH claimed AS (
        UPDATE seat_inventory si
        SET status = 'HELD', hold_id = v_hold_id, hold_expires_at = v_expires,
            order_id = NULL, version = si.version + 1
        WHERE si.event_id = p_event_id AND si.seat_id = ANY (p_seat_ids)
          AND (si.status = 'AVAILABLE' OR (si.status = 'HELD' AND si.hold_expires_at <= now()))
        RETURNING si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    ), reclaimed AS (
        INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                                   prior_expires_at, reason)
        SELECT c.prior_hold_id, p_event_id, c.seat_id, c.prior_hold_id, c.prior_status,
               c.prior_expires_at, 'reclaimed'
        FROM claimed c WHERE c.prior_hold_id IS NOT NULL
    )
    SELECT count(*) INTO v_claimed FROM claimed;
    IF v_claimed <> cardinality(p_seat_ids) THEN
        RAISE EXCEPTION 'claim guard: % of % seats claimable under lock', v_claimed,
            cardinality(p_seat_ids);
    END IF;

    SELECT jsonb_agg(jsonb_build_object(
               'seat_id', s.seat_id, 'section', s.section, 'row', s.row_label,
               'number', s.number, 'tier', pt.name, 'price_minor', pt.price_minor)
               ORDER BY s.seat_id),
           sum(pt.price_minor)
    INTO v_seats, v_amount
    FROM unnest(p_seat_ids) AS x(seat_id)
    JOIN seat_inventory si ON si.event_id = p_event_id AND si.seat_id = x.seat_id
    JOIN seats s ON s.event_id = p_event_id AND s.seat_id = x.seat_id
    JOIN price_tiers pt ON pt.event_id = p_event_id AND pt.tier_id = s.tier_id
                       AND pt.price_version = si.price_version;

    v_body := jsonb_build_object(
        'hold_id', v_hold_id, 'event_id', p_event_id, 'status', 'HELD',
        'expires_at', to_char(v_expires AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'seats', v_seats, 'amount_minor', v_amount, 'currency', p_currency);

    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id)
    VALUES (p_account_id, p_key, p_digest, 201, v_body, v_hold_id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry', DETAIL = '{}';
    END IF;

    INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids, seats,
                       seat_count, amount_minor, currency, expires_at)
    VALUES (v_hold_id, p_event_id, p_account_id, p_key, 'HELD', p_seat_ids, v_seats,
            cardinality(p_seat_ids), v_amount, p_currency, v_expires);
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (p_event_id, v_hold_id, 'hold.created', v_body);
    RETURN v_body;
END $$;
