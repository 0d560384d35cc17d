-- onsale_hold_best: best available. The n best-ranked free seats (adjacent
-- in one row when p_together, in one section when p_section), taken with
-- SKIP LOCKED so concurrent shoppers do not queue behind the same
-- candidates. Same answer as onsale_hold; 409 seats_unavailable when not
-- enough seats could be taken.

CREATE OR REPLACE FUNCTION onsale_hold_best(
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
    PERFORM onsale_shard_serving();  -- not while failed over and not resumed
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
