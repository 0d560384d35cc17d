-- onsale_hold_batch: several seat hold requests for one event in one
-- transaction and one round trip (core/seat_batch.py gathers the requests
-- that arrive together). Element i asks for the seats p_seat_ids[j] whose
-- p_elements[j] = i. Each element gets the answer onsale_hold would give it,
-- run alone after the elements before it, or says that it must go there alone:
--   status_code 201 with the hold, or 409 with a refusal's body
--     (seats_unavailable with the seats, ticket_limit_exceeded with its
--     figures), or the replay of an earlier request with this key (replayed);
--   status_code NULL: anything unusual (no such event, the sale not open, a
--     seat count out of bounds, an unknown or repeated seat, a key reused for
--     another request, a hold whose key record has expired, an account that
--     already has an element in this batch): nothing was written for it; run
--     onsale_hold for it alone, which answers or raises as it does.
-- The same stages as onsale_hold, each for every element at once:
--   1. fail fast without locks: an element with a seat taken in committed
--      state gets its replay, or 409 seats_unavailable (with, in stage 3, the
--      seats of it that elements before it won);
--   2. every other element's account lock (in lock-key order, so two batches
--      never wait on each other in a cycle), then under it the replay check
--      and the ticket limit;
--   3. every seat those elements still ask for, locked in seat order by one
--      statement; then in arrival order: an element with a seat an element
--      before it won gets 409 seats_unavailable (alone, after that one, it
--      would fail fast on it, before its limit); one over its limit gets 409
--      ticket_limit_exceeded; one with a seat taken in the database gets 409
--      seats_unavailable; the others win;
--   4. the winners' holds written by onsale_hold_commit, in (account, key)
--      order (the key records' order, as two batches could otherwise each
--      wait for the other's key row).
-- All or nothing for the batch: any error leaves nothing, and the caller runs
-- every element alone.
-- requires: onsale_hold_commit, onsale_owned

CREATE OR REPLACE FUNCTION onsale_hold_batch(
    p_event_id bigint, p_accounts uuid[], p_keys text[], p_digests text[],
    p_seat_ids integer[], p_elements integer[]
) RETURNS TABLE (i integer, status_code integer, body jsonb, lock_wait_ms double precision,
                 replayed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer := cardinality(p_accounts);
    v_event record;
    v_status integer[] := array_fill(NULL::integer, ARRAY[v_n]);
    v_body jsonb[] := array_fill(NULL::jsonb, ARRAY[v_n]);
    v_replayed boolean[] := array_fill(false, ARRAY[v_n]);
    v_locked boolean[] := array_fill(false, ARRAY[v_n]);  -- reached the seat locks
    v_want boolean[] := array_fill(false, ARRAY[v_n]);
    v_failed boolean[] := array_fill(false, ARRAY[v_n]);  -- failed fast: 409
    v_over jsonb[] := array_fill(NULL::jsonb, ARRAY[v_n]);  -- over the ticket limit
    v_seats integer[];  -- element k's seats, sorted: p_seat_ids in v_from[k]..v_to[k]
    v_from integer[] := array_fill(0, ARRAY[v_n]);
    v_to integer[] := array_fill(-1, ARRAY[v_n]);
    v_mine integer[];
    v_seen uuid[] := '{}';
    v_blocked integer[] := '{}';
    v_claimed integer[] := '{}';
    v_taken integer[];
    v_lock bigint;
    v_k integer;
    v_prev record;
    v_row record;
    v_owned bigint;
    v_t0 timestamptz;
    v_wait double precision := 0;
BEGIN
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
    SELECT e.hold_ttl_seconds, e.currency, e.max_seats_per_hold, e.max_tickets_per_account,
           e.onsale_at
    INTO v_event FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND OR now() < v_event.onsale_at THEN  -- each alone: it raises the refusal
        RETURN QUERY SELECT g, NULL::integer, NULL::jsonb, 0::double precision, false
                     FROM generate_series(1, v_n) AS g;
        RETURN;
    END IF;

    -- Every element's seats, sorted, in one array (v_from/v_to: its slice).
    SELECT array_agg(x.s ORDER BY x.k, x.s) INTO v_seats
    FROM unnest(p_seat_ids, p_elements) AS x(s, k);
    FOR v_row IN SELECT x.k, min(x.n) AS first, max(x.n) AS last
                 FROM (SELECT u.k, row_number() OVER (ORDER BY u.k, u.s) AS n
                       FROM unnest(p_seat_ids, p_elements) AS u(s, k)) AS x
                 WHERE x.k BETWEEN 1 AND v_n GROUP BY x.k LOOP
        v_from[v_row.k] := v_row.first;
        v_to[v_row.k] := v_row.last;
    END LOOP;

    -- 1. Fail fast, without locks: the seats' committed state, every element at once.
    FOR v_row IN
        SELECT x.k, count(*) AS asked, count(DISTINCT x.s) AS distinct_asked,
               count(si.seat_id) AS found,
               array_agg(si.seat_id ORDER BY si.seat_id) FILTER (
                   WHERE si.seat_id IS NOT NULL
                     AND NOT (si.status = 'AVAILABLE'
                              OR (si.status = 'HELD' AND si.hold_expires_at <= now())))
                   AS taken
        FROM unnest(p_seat_ids, p_elements) AS x(s, k)
        LEFT JOIN seat_inventory si ON si.event_id = p_event_id AND si.seat_id = x.s
        WHERE x.k BETWEEN 1 AND v_n
        GROUP BY x.k
    LOOP
        CONTINUE WHEN v_row.asked > v_event.max_seats_per_hold  -- alone: invalid_seats
                   OR v_row.asked <> v_row.distinct_asked OR v_row.found <> v_row.asked;
        IF v_row.taken IS NULL THEN
            v_locked[v_row.k] := true;  -- on to the locks
            CONTINUE;
        END IF;
        SELECT ik.digest, ik.status_code, ik.response INTO v_prev
        FROM idempotency_keys ik
        WHERE ik.account_id = p_accounts[v_row.k] AND ik.key = p_keys[v_row.k];
        IF NOT FOUND THEN
            v_failed[v_row.k] := true;
            v_status[v_row.k] := 409;
            v_body[v_row.k] := jsonb_build_object('code', 'seats_unavailable',
                                                  'unavailable_seat_ids', to_jsonb(v_row.taken));
        ELSIF v_prev.digest = p_digests[v_row.k] THEN
            v_status[v_row.k] := v_prev.status_code;
            v_body[v_row.k] := v_prev.response;
            v_replayed[v_row.k] := true;
            PERFORM onsale_durable();
        END IF;  -- else NULL: onsale_hold raises idempotency_conflict
    END LOOP;

    -- 2. The account locks, then under them the replay and the ticket limit.
    FOR v_lock IN SELECT DISTINCT hashtextextended(p_accounts[k]::text, p_event_id)
                  FROM generate_series(1, v_n) AS k WHERE v_locked[k]
                  ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(v_lock);
    END LOOP;
    FOR k IN 1 .. v_n LOOP
        CONTINUE WHEN NOT v_locked[k];
        v_locked[k] := false;
        CONTINUE WHEN p_accounts[k] = ANY (v_seen);  -- alone, after this batch
        v_seen := v_seen || p_accounts[k];
        SELECT ik.digest, ik.status_code, ik.response INTO v_prev
        FROM idempotency_keys ik WHERE ik.account_id = p_accounts[k] AND ik.key = p_keys[k];
        IF FOUND THEN
            IF v_prev.digest = p_digests[k] THEN
                v_status[k] := v_prev.status_code;
                v_body[k] := v_prev.response;
                v_replayed[k] := true;
                PERFORM onsale_durable();
            END IF;  -- else NULL: onsale_hold raises idempotency_conflict
            CONTINUE;
        END IF;
        -- A hold made under this key whose key record has expired: alone, to get
        -- its idempotency_conflict (the hold's insert would fail the whole batch).
        CONTINUE WHEN EXISTS (SELECT 1 FROM holds h WHERE h.account_id = p_accounts[k]
                                                      AND h.idempotency_key = p_keys[k]);
        v_owned := onsale_owned(p_event_id, p_accounts[k]);
        IF v_owned + (v_to[k] - v_from[k] + 1) > v_event.max_tickets_per_account THEN
            -- Its answer unless a seat of it goes to an element before it: alone,
            -- after that one, it would fail fast on the seat before the limit.
            v_over[k] := jsonb_build_object('code', 'ticket_limit_exceeded',
                                            'limit', v_event.max_tickets_per_account,
                                            'owned', v_owned,
                                            'requested', v_to[k] - v_from[k] + 1);
        END IF;
        v_locked[k] := true;
    END LOOP;

    -- 3. Lock every seat still asked for, in seat order; then decide in arrival order.
    IF true = ANY (v_locked) THEN
        v_t0 := clock_timestamp();
        SELECT coalesce(array_agg(l.seat_id) FILTER (
                   WHERE NOT (l.status = 'AVAILABLE'
                              OR (l.status = 'HELD' AND l.hold_expires_at <= now()))), '{}')
        INTO v_blocked
        FROM (SELECT si.seat_id, si.status, si.hold_expires_at
              FROM seat_inventory si
              WHERE si.event_id = p_event_id
                AND si.seat_id = ANY (ARRAY(SELECT v_seats[j]
                                            FROM generate_series(1, v_n) AS k,
                                                 generate_series(v_from[k], v_to[k]) AS j
                                            WHERE v_locked[k]))
              ORDER BY si.seat_id
              FOR UPDATE) AS l;
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
    END IF;
    FOR k IN 1 .. v_n LOOP
        CONTINUE WHEN NOT (v_locked[k] OR v_failed[k]);
        v_mine := v_seats[v_from[k]:v_to[k]];
        IF v_failed[k] THEN  -- failed fast: alone, after the elements before it, it
            -- would also find taken the seats of its that they won
            CONTINUE WHEN NOT v_mine && v_claimed;
            SELECT array_agg(s ORDER BY s) INTO v_taken FROM unnest(v_mine) AS s
            WHERE s = ANY (v_claimed) OR v_body[k] -> 'unavailable_seat_ids' @> to_jsonb(s);
            v_body[k] := jsonb_set(v_body[k], '{unavailable_seat_ids}', to_jsonb(v_taken));
            CONTINUE;
        END IF;
        SELECT array_agg(s ORDER BY s) INTO v_taken
        FROM unnest(v_mine) AS s WHERE s = ANY (v_blocked) OR s = ANY (v_claimed);
        IF v_over[k] IS NOT NULL AND NOT v_mine && v_claimed THEN
            v_status[k] := 409;  -- the limit, as alone (checked before the seat locks)
            v_body[k] := v_over[k];
            v_locked[k] := false;
            CONTINUE;
        END IF;
        IF v_taken IS NOT NULL THEN
            v_status[k] := 409;
            v_body[k] := jsonb_build_object('code', 'seats_unavailable',
                                            'unavailable_seat_ids', to_jsonb(v_taken));
            v_locked[k] := NOT v_mine && v_claimed;  -- alone: the fail-fast's, no wait
            CONTINUE;
        END IF;
        v_claimed := v_claimed || v_mine;
        v_want[k] := true;
    END LOOP;

    -- 4. The winners' holds (a twin with a key got in first: OSRTY, every element alone).
    FOR v_k IN SELECT g FROM generate_series(1, v_n) AS g WHERE v_want[g]
               ORDER BY p_accounts[g], p_keys[g] LOOP
        v_body[v_k] := onsale_hold_commit(p_event_id, p_accounts[v_k], p_keys[v_k],
                                          p_digests[v_k], v_seats[v_from[v_k]:v_to[v_k]],
                                          v_event.hold_ttl_seconds, v_event.currency);
        v_status[v_k] := 201;
    END LOOP;

    RETURN QUERY SELECT k, v_status[k], v_body[k],
                        CASE WHEN v_locked[k] THEN v_wait ELSE 0 END, v_replayed[k]
                 FROM generate_series(1, v_n) AS k;
END $$;
