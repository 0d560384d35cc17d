-- onsale_hold: hold exactly these seats, all or nothing, in one transaction
-- and one round trip (core/hold_store.py, core/sql/holds.sql). Returns
-- (status_code, body, lock_wait_ms, replayed): 201 and the hold, 409
-- seats_unavailable as a row (the common refusal), or the replayed response
-- of an earlier request with this key; the rare refusals raise (OS4xx).
--
-- Most attempts on a hot seat lose, so the losing path is cheap: the event
-- read and the seat read (which also sorts and de-duplicates) come first,
-- inline, and the replay check runs once, after the seat read: a twin
-- request with our key that committed before that read is therefore visible
-- to it. Every path still checks for a replay before it answers or writes:
-- the losing path here, the winning path under the advisory lock in
-- onsale_hold_limit. A key reused with another body is refused (409
-- idempotency_conflict) on both paths.

CREATE OR REPLACE FUNCTION onsale_hold(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_ttl integer;
    v_currency char(3);
    v_max_seats integer;
    v_max_tickets integer;
    v_onsale_at timestamptz;
    v_sorted integer[];
    v_found integer;
    v_taken integer[];
    v_prev record;
    v_replay jsonb;
    v_t0 timestamptz;
BEGIN
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
    lock_wait_ms := 0;
    replayed := true;
    SELECT e.hold_ttl_seconds, e.currency, e.max_seats_per_hold, e.max_tickets_per_account,
           e.onsale_at
    INTO v_ttl, v_currency, v_max_seats, v_max_tickets, v_onsale_at
    FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    IF cardinality(p_seat_ids) < 1 OR cardinality(p_seat_ids) > v_max_seats THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('max_seats_per_hold', v_max_seats)::text;
    END IF;

    -- Fail fast without locking when a seat is already taken in committed
    -- state; a seat that looks free here is still decided under the lock.
    SELECT count(*), array_agg(si.seat_id ORDER BY si.seat_id),
           array_agg(si.seat_id ORDER BY si.seat_id) FILTER (
               WHERE NOT (si.status = 'AVAILABLE'
                          OR (si.status = 'HELD' AND si.hold_expires_at <= now())))
    INTO v_found, v_sorted, v_taken
    FROM seat_inventory si
    WHERE si.event_id = p_event_id AND si.seat_id = ANY (p_seat_ids);
    IF v_found <> cardinality(p_seat_ids) THEN
        IF cardinality(p_seat_ids) <> (SELECT count(DISTINCT x) FROM unnest(p_seat_ids) AS x) THEN
            RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
                DETAIL = '{"reason": "duplicate"}';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('unknown_seat_ids', (
                SELECT jsonb_agg(x ORDER BY x) FROM unnest(p_seat_ids) AS x
                WHERE NOT EXISTS (SELECT 1 FROM seat_inventory si
                                  WHERE si.event_id = p_event_id AND si.seat_id = x)))::text;
    END IF;
    IF v_taken IS NOT NULL THEN
        SELECT k.digest, k.status_code, k.response INTO v_prev
        FROM idempotency_keys k WHERE k.account_id = p_account_id AND k.key = p_key;
        IF FOUND THEN
            IF v_prev.digest <> p_digest THEN
                RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict',
                    DETAIL = '{}';
            END IF;
            PERFORM onsale_durable();
            status_code := v_prev.status_code;
            body := v_prev.response;
            RETURN;
        END IF;
        status_code := 409;
        replayed := false;
        body := jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(v_taken));
        RETURN;
    END IF;

    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest,
                                  cardinality(v_sorted), v_max_tickets);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        RETURN;
    END IF;

    -- Lock the requested rows in seat_id order (the sort runs below the lock).
    v_t0 := clock_timestamp();
    SELECT array_agg(l.seat_id ORDER BY l.seat_id) FILTER (
               WHERE NOT (l.status = 'AVAILABLE'
                          OR (l.status = 'HELD' AND l.hold_expires_at <= now())))
    INTO v_taken
    FROM (SELECT si.seat_id, si.status, si.hold_expires_at
          FROM seat_inventory si
          WHERE si.event_id = p_event_id AND si.seat_id = ANY (v_sorted)
          ORDER BY si.seat_id
          FOR UPDATE) AS l;
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;

    IF v_taken IS NOT NULL THEN
        -- Under the advisory lock onsale_hold_limit found no replay, and a twin
        -- with our key needs that lock to commit: a plain 409.
        status_code := 409;
        replayed := false;
        body := jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(v_taken));
        RETURN;
    END IF;

    body := onsale_hold_commit(p_event_id, p_account_id, p_key, p_digest, v_sorted,
                               v_ttl, v_currency);
    status_code := 201;
    replayed := false;
END $$;
