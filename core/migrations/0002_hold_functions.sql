-- 0002: the hold decision as one database round trip.
--
-- Rare refusals raise a stable error (SQLSTATE 'OS4xx', MESSAGE = the problem
-- code, DETAIL = JSON); the common one (seats taken) is returned as a 409 row.
-- Either way a refused decision has written nothing. core/hold_store.py maps
-- both.
--
-- Lock order, everywhere: per-(event, account) advisory lock -> hold row ->
-- seat rows in seat_id order -> idempotency row (inserted last, with the
-- response). The sweeper takes hold and seat rows with SKIP LOCKED and never
-- waits.

-- The stored response for (account, key), NULL if the key is new; a key
-- reused for a different request is refused.
CREATE FUNCTION onsale_replay(p_account_id uuid, p_key text, p_digest text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_prev record;
BEGIN
    SELECT k.digest, k.status_code, k.response INTO v_prev
    FROM idempotency_keys k WHERE k.account_id = p_account_id AND k.key = p_key;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_prev.digest <> p_digest THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict', DETAIL = '{}';
    END IF;
    RETURN jsonb_build_object('status_code', v_prev.status_code, 'body', v_prev.response);
END $$;

-- Replay a request that a concurrent twin (same key) completed while we
-- waited, or answer 409 seats_unavailable. Returned rather than raised: the
-- losing path has written nothing, and most attempts on a hot seat lose.
CREATE FUNCTION onsale_unavailable(
    p_account_id uuid, p_key text, p_digest text, p_taken integer[]
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_replay jsonb := onsale_replay(p_account_id, p_key, p_digest);
BEGIN
    IF v_replay IS NOT NULL THEN
        RETURN v_replay || '{"replayed": true}';
    END IF;
    RETURN jsonb_build_object(
        'status_code', 409, 'replayed', false,
        'body', jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(coalesce(p_taken, '{}'))));
END $$;

-- Load the event and check the request size. Returns the stored response
-- when the key was used before (replay, no new state).
CREATE FUNCTION onsale_hold_prelude(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_quantity integer,
    OUT replay jsonb, OUT ttl integer, OUT currency char(3), OUT max_tickets integer
) LANGUAGE plpgsql AS $$
DECLARE
    v_max_seats integer;
    v_onsale_at timestamptz;
BEGIN
    replay := onsale_replay(p_account_id, p_key, p_digest);
    IF replay IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT e.hold_ttl_seconds, e.currency, e.max_seats_per_hold, e.max_tickets_per_account,
           e.onsale_at
    INTO ttl, currency, v_max_seats, max_tickets, v_onsale_at
    FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    IF p_quantity < 1 OR p_quantity > v_max_seats THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('max_seats_per_hold', v_max_seats)::text;
    END IF;
END $$;

-- Serialise this account's holds for this event, then count what it owns:
-- live holds, holds in payment, and sold seats. A twin request with the same
-- key may have committed while we waited for the lock: its response is
-- returned (to be replayed) instead of counting its seats against us.
CREATE FUNCTION onsale_hold_limit(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text,
    p_quantity integer, p_max integer
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_current bigint;
    v_replay jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_account_id::text, p_event_id));
    v_replay := onsale_replay(p_account_id, p_key, p_digest);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay || '{"replayed": true}';
    END IF;
    SELECT coalesce(sum(h.seat_count), 0) INTO v_current
    FROM holds h
    WHERE h.event_id = p_event_id AND h.account_id = p_account_id
      AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
           OR (h.status = 'HELD' AND h.expires_at > now()));
    IF v_current + p_quantity > p_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', p_max, 'owned', v_current,
                                        'requested', p_quantity)::text;
    END IF;
    RETURN NULL;
END $$;

-- Write the hold on seats already locked by the caller (sorted ids). The
-- idempotency record commits with it; if a concurrent twin with the same key
-- got there first, everything rolls back and the caller retries (OSRTY),
-- which then replays the twin's response.
CREATE FUNCTION onsale_hold_commit(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    p_ttl integer, p_currency char(3)
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_hold_id uuid := uuidv7();
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

-- Hold exactly these seats, all or nothing.
CREATE FUNCTION onsale_hold(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_pre record;
    v_sorted integer[];
    v_found integer;
    v_taken integer[];
    v_replay jsonb;
    v_t0 timestamptz;
BEGIN
    lock_wait_ms := 0;
    replayed := true;
    SELECT * INTO v_pre
    FROM onsale_hold_prelude(p_event_id, p_account_id, p_key, p_digest, cardinality(p_seat_ids));
    IF v_pre.replay IS NOT NULL THEN
        status_code := (v_pre.replay ->> 'status_code')::integer;
        body := v_pre.replay -> 'body';
        RETURN;
    END IF;

    SELECT array_agg(DISTINCT x ORDER BY x) INTO v_sorted FROM unnest(p_seat_ids) AS x;
    IF cardinality(v_sorted) <> cardinality(p_seat_ids) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = '{"reason": "duplicate"}';
    END IF;

    -- Fail fast without locking when a seat is already taken in committed
    -- state: on a hot seat most attempts lose, and they should not queue for
    -- the row lock (and the winner's commit) only to learn that. A seat that
    -- looks free here is still decided under the lock below.
    SELECT count(*),
           array_agg(si.seat_id ORDER BY si.seat_id) FILTER (
               WHERE NOT (si.status = 'AVAILABLE'
                          OR (si.status = 'HELD' AND si.hold_expires_at <= now())))
    INTO v_found, v_taken
    FROM seat_inventory si
    WHERE si.event_id = p_event_id AND si.seat_id = ANY (v_sorted);
    IF v_found <> cardinality(v_sorted) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('unknown_seat_ids', (
                SELECT jsonb_agg(x ORDER BY x) FROM unnest(v_sorted) AS x
                WHERE NOT EXISTS (SELECT 1 FROM seat_inventory si
                                  WHERE si.event_id = p_event_id AND si.seat_id = x)))::text;
    END IF;
    IF v_taken IS NOT NULL THEN
        v_replay := onsale_unavailable(p_account_id, p_key, p_digest, v_taken);
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        replayed := (v_replay ->> 'replayed')::boolean;
        RETURN;
    END IF;

    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest,
                                  cardinality(v_sorted), v_pre.max_tickets);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        replayed := true;
        RETURN;
    END IF;

    -- Lock the requested rows in seat_id order (the sort runs below the lock).
    v_t0 := clock_timestamp();
    SELECT count(*),
           array_agg(l.seat_id ORDER BY l.seat_id) FILTER (
               WHERE NOT (l.status = 'AVAILABLE'
                          OR (l.status = 'HELD' AND l.hold_expires_at <= now())))
    INTO v_found, v_taken
    FROM (SELECT si.seat_id, si.status, si.hold_expires_at
          FROM seat_inventory si
          WHERE si.event_id = p_event_id AND si.seat_id = ANY (v_sorted)
          ORDER BY si.seat_id
          FOR UPDATE) AS l;
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;

    IF v_taken IS NOT NULL THEN
        v_replay := onsale_unavailable(p_account_id, p_key, p_digest, v_taken);
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        replayed := (v_replay ->> 'replayed')::boolean;
        RETURN;
    END IF;

    body := onsale_hold_commit(p_event_id, p_account_id, p_key, p_digest, v_sorted,
                               v_pre.ttl, v_pre.currency);
    status_code := 201;
    replayed := false;
END $$;

-- Best available: the n best-ranked free seats (adjacent in one row when
-- p_together), taken with SKIP LOCKED so concurrent shoppers do not queue
-- behind the same candidates.
CREATE FUNCTION onsale_hold_best(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text,
    p_quantity integer, p_section text, p_together boolean,
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_pre record;
    v_ids integer[];
    v_block integer[];
    v_skip integer[] := '{}';
    v_try integer;
    v_replay jsonb;
    v_t0 timestamptz;
BEGIN
    lock_wait_ms := 0;
    replayed := true;
    SELECT * INTO v_pre
    FROM onsale_hold_prelude(p_event_id, p_account_id, p_key, p_digest, p_quantity);
    IF v_pre.replay IS NOT NULL THEN
        status_code := (v_pre.replay ->> 'status_code')::integer;
        body := v_pre.replay -> 'body';
        RETURN;
    END IF;
    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest,
                                  p_quantity, v_pre.max_tickets);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        replayed := true;
        RETURN;
    END IF;

    v_t0 := clock_timestamp();
    IF NOT p_together THEN
        SELECT array_agg(c.seat_id) INTO v_ids
        FROM (SELECT si.seat_id
              FROM seats s
              JOIN seat_inventory si ON si.event_id = s.event_id AND si.seat_id = s.seat_id
              WHERE s.event_id = p_event_id
                AND (p_section IS NULL OR s.section = p_section)
                AND (si.status = 'AVAILABLE'
                     OR (si.status = 'HELD' AND si.hold_expires_at <= now()))
              ORDER BY s.rank
              LIMIT p_quantity
              FOR UPDATE OF si SKIP LOCKED) AS c;
    ELSE
        -- Find the best block with a plain read, then lock only its seats
        -- (SKIP LOCKED, predicate re-checked). If someone took part of it
        -- meanwhile, leave that block out and look again, a few times.
        FOR v_try IN 1..5 LOOP
            WITH cand AS MATERIALIZED (
                SELECT si.seat_id, s.section, s.row_label, s.number, s.rank
                FROM seats s
                JOIN seat_inventory si ON si.event_id = s.event_id AND si.seat_id = s.seat_id
                WHERE s.event_id = p_event_id
                  AND (p_section IS NULL OR s.section = p_section)
                  AND (si.status = 'AVAILABLE'
                       OR (si.status = 'HELD' AND si.hold_expires_at <= now()))
                  AND NOT (si.seat_id = ANY (v_skip))
                ORDER BY s.rank
                LIMIT 1000
            ), runs AS (
                SELECT c.*, c.number - row_number() OVER (
                           PARTITION BY c.section, c.row_label ORDER BY c.number) AS grp
                FROM cand c
            ), windows AS (
                -- Every block of p_quantity adjacent free seats in one row,
                -- scored by the ranks of its seats: the best block, not the first.
                SELECT count(*) OVER w AS n, sum(r.rank) OVER w AS score,
                       array_agg(r.seat_id) OVER w AS ids
                FROM runs r
                WINDOW w AS (PARTITION BY r.section, r.row_label, r.grp ORDER BY r.number
                             ROWS BETWEEN CURRENT ROW AND p_quantity - 1 FOLLOWING)
            )
            SELECT w.ids INTO v_block FROM windows w WHERE w.n = p_quantity
            ORDER BY w.score LIMIT 1;
            EXIT WHEN v_block IS NULL;
            SELECT array_agg(l.seat_id) INTO v_ids
            FROM (SELECT si.seat_id FROM seat_inventory si
                  WHERE si.event_id = p_event_id AND si.seat_id = ANY (v_block)
                    AND (si.status = 'AVAILABLE'
                         OR (si.status = 'HELD' AND si.hold_expires_at <= now()))
                  ORDER BY si.seat_id
                  FOR UPDATE SKIP LOCKED) AS l;
            EXIT WHEN coalesce(cardinality(v_ids), 0) = p_quantity;
            v_skip := v_skip || v_block;
            v_ids := NULL;
        END LOOP;
    END IF;
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;

    IF v_ids IS NULL OR cardinality(v_ids) < p_quantity THEN
        v_replay := onsale_unavailable(p_account_id, p_key, p_digest, '{}');
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        replayed := (v_replay ->> 'replayed')::boolean;
        RETURN;
    END IF;
    SELECT array_agg(x ORDER BY x) INTO v_ids FROM unnest(v_ids) AS x;

    body := onsale_hold_commit(p_event_id, p_account_id, p_key, p_digest, v_ids,
                               v_pre.ttl, v_pre.currency);
    status_code := 201;
    replayed := false;
END $$;

-- Release a hold by its owner. Idempotent: releasing a released or expired
-- hold returns it unchanged.
CREATE FUNCTION onsale_release(p_hold_id uuid, p_account_id uuid)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_hold record;
BEGIN
    SELECT h.hold_id, h.event_id, h.status, h.seat_ids,
           CASE WHEN h.expires_at <= now() THEN 'expired' ELSE 'released' END AS outcome
    INTO v_hold
    FROM holds h WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    IF v_hold.status IN ('PAYMENT_PENDING', 'CONFIRMED') THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_not_releasable',
            DETAIL = jsonb_build_object('status', v_hold.status)::text;
    END IF;
    IF v_hold.status <> 'HELD' THEN
        RETURN p_hold_id;
    END IF;

    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;

    WITH released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD'
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           v_hold.outcome
    FROM released r;

    -- A hold whose deadline already passed ends as EXPIRED, whether its owner
    -- or the sweeper gets to it first.
    UPDATE holds SET status = upper(v_hold.outcome), updated_at = now()
    WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || v_hold.outcome,
            jsonb_build_object('hold_id', p_hold_id));
    RETURN p_hold_id;
END $$;

-- Release one batch of expired holds. Only the predicate
-- (hold_id, status HELD, deadline passed by database time) releases a seat, so
-- a late or duplicated sweep cannot touch a newer hold or a sold seat.
CREATE FUNCTION onsale_sweep(p_batch integer, OUT holds_expired integer, OUT seats_released integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_due uuid[];
BEGIN
    SELECT coalesce(array_agg(d.hold_id), '{}') INTO v_due
    FROM (SELECT h.hold_id FROM holds h
          WHERE h.status = 'HELD' AND h.expires_at <= now()
          ORDER BY h.expires_at
          LIMIT p_batch
          FOR UPDATE SKIP LOCKED) AS d;

    WITH locked AS (
        SELECT si.event_id, si.seat_id, d.hold_id
        FROM holds d
        JOIN seat_inventory si ON si.event_id = d.event_id AND si.seat_id = ANY (d.seat_ids)
        WHERE d.hold_id = ANY (v_due)
          AND si.hold_id = d.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.event_id, si.seat_id
        FOR UPDATE OF si SKIP LOCKED
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = l.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING l.hold_id, si.event_id, si.seat_id, old.hold_id AS prior_hold_id,
                  old.status AS prior_status, old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT r.hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS seats_released = ROW_COUNT;

    -- A hold is finished once none of its seats is still held under its id
    -- (a seat re-claimed lazily by a newer hold no longer carries it).
    WITH done AS (
        UPDATE holds h SET status = 'EXPIRED', updated_at = now()
        WHERE h.hold_id = ANY (v_due) AND h.status = 'HELD'
          AND NOT EXISTS (SELECT 1 FROM seat_inventory si
                          WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
                            AND si.hold_id = h.hold_id AND si.status = 'HELD')
        RETURNING h.hold_id, h.event_id
    ), ob AS (
        INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
        SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
        FROM done
    )
    SELECT count(*) INTO holds_expired FROM done;
END $$;

-- Release one expired hold by id (the sweeper's predicate, exposed so a
-- delayed expiry message can be replayed safely). Returns seats released.
CREATE FUNCTION onsale_expire_hold(p_hold_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
BEGIN
    -- The documented lock order: the hold row before its seats.
    PERFORM 1 FROM holds WHERE hold_id = p_hold_id FOR UPDATE;
    WITH h AS (SELECT event_id, seat_ids FROM holds WHERE hold_id = p_hold_id),
    locked AS (
        SELECT si.event_id, si.seat_id FROM seat_inventory si, h
        WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.seat_id
        FOR UPDATE OF si
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    WITH done AS (
        UPDATE holds SET status = 'EXPIRED', updated_at = now()
        WHERE hold_id = p_hold_id AND status = 'HELD' AND expires_at <= now()
        RETURNING hold_id, event_id
    )
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
    FROM done;
    RETURN v_n;
END $$;
