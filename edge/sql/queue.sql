-- name: queue_config
-- The waiting-room settings of some events, with the database clock.
SELECT event_id, queue_policy, prequeue_at, onsale_at, starts_at, admission_rate_min,
       admission_rate_max, active_cap, pow_difficulty, admission_paused, draw_commitment,
       draw_seed, risk_raised, risk_high, risk_refused, created_at, now() AS db_now
FROM events
WHERE event_id = ANY ($1::bigint[]);

-- name: live_events
-- Events whose queue is open (or opens within a minute) and that have not started.
SELECT event_id
FROM events
WHERE coalesce(prequeue_at, created_at) <= now() + interval '1 minute'
  AND starts_at > now()
ORDER BY onsale_at, event_id;

-- name: lock_queue_config
SELECT queue_policy, prequeue_at, onsale_at, admission_rate_min, admission_rate_max,
       active_cap, pow_difficulty, onsale_at <= now() AS sale_open
FROM events WHERE event_id = $1 FOR UPDATE;

-- name: update_queue
UPDATE events
SET queue_policy = $2, prequeue_at = $3, admission_rate_min = $4, admission_rate_max = $5,
    active_cap = $6, pow_difficulty = $7
WHERE event_id = $1;

-- name: update_risk
-- The bot-risk thresholds ($2..$4: raised, high, refused; NULL: that band off).
UPDATE events SET risk_raised = $2, risk_high = $3, risk_refused = $4 WHERE event_id = $1;

-- name: set_paused
UPDATE events SET admission_paused = $2 WHERE event_id = $1 RETURNING event_id;

-- name: draw_secret
-- The seed, and the beacon round committed with it and what became of it.
SELECT s.seed, e.draw_commitment, e.beacon_commitment, e.beacon_outcome
FROM event_draw_secrets s JOIN events e USING (event_id)
WHERE s.event_id = $1;

-- name: draw_closed_at
-- When the pre-queue closed: the first draw attempt's time, kept by every repeat.
UPDATE events SET draw_closed_at = coalesce(draw_closed_at, now())
WHERE event_id = $1
RETURNING draw_closed_at;

-- name: record_beacon_outcome
-- The beacon round drawn with, or the operator's fallback to the seed alone ($2), once
-- and before the seed is revealed: whichever comes first stands. Returns what stands.
WITH won AS (
    UPDATE events SET beacon_outcome = $2::jsonb
    WHERE event_id = $1 AND beacon_commitment IS NOT NULL AND beacon_outcome IS NULL
      AND draw_seed IS NULL
    RETURNING beacon_outcome
)
SELECT coalesce((SELECT beacon_outcome FROM won),
                (SELECT beacon_outcome FROM events WHERE event_id = $1));

-- name: draw_beacon
-- The beacon of an event's draw, for the operator's fallback.
SELECT e.queue_policy, e.onsale_at, e.draw_seed, e.beacon_commitment, e.draw_closed_at,
       e.beacon_outcome
FROM events e WHERE e.event_id = $1;

-- name: record_draw
-- Publish the draw's participants ($2, sorted), once: the draw's row and its chunks of
-- at most 10,000 ids, in one statement (a crash leaves all or nothing). True if this
-- call recorded them; false if a draw was already recorded (a repeat after a crash, or
-- a stale admitter): the caller then reads it with recorded_draw, in a statement of its
-- own, which sees a first record committed while this one waited on it.
WITH drawn AS (
    INSERT INTO queue_draws (event_id, participant_count) VALUES ($1, cardinality($2::uuid[]))
    ON CONFLICT (event_id) DO NOTHING
    RETURNING event_id
), chunks AS (
    INSERT INTO queue_draw_chunks (event_id, first_index, participants)
    SELECT drawn.event_id, s, ($2::uuid[])[s:s + 9999]
    FROM drawn, generate_series(1, cardinality($2::uuid[]), 10000) AS s
)
SELECT EXISTS (SELECT FROM drawn);

-- name: recorded_draw
-- The recorded participants of a draw, in order, as text (asyncpg decodes a uuid[] about
-- twenty times slower); a row recorded before migration 0006 has no participant_count:
-- its array.
SELECT CASE WHEN d.participant_count IS NULL THEN d.participants::text[]
            ELSE ARRAY(SELECT u.p::text
                       FROM queue_draw_chunks c,
                            unnest(c.participants) WITH ORDINALITY AS u(p, i)
                       WHERE c.event_id = d.event_id
                       ORDER BY c.first_index, u.i) END
FROM queue_draws d WHERE d.event_id = $1;

-- name: reveal_seed
UPDATE events e SET draw_seed = s.seed, drawn_at = coalesce(e.drawn_at, now())
FROM event_draw_secrets s
WHERE e.event_id = $1 AND s.event_id = e.event_id;

-- name: published_draw
-- The event's draw as published, and one page of its participants once the seed is
-- revealed: $2, $3 the 1-based, inclusive indexes of the page. Only the chunks that
-- overlap the page are read (a chunk holds at most 10,000 ids, so the one holding $2
-- starts at $2 - 9999 or later); a draw recorded before migration 0006 (no
-- participant_count) is sliced from its array. The ids come as text, ready to send.
SELECT e.draw_commitment, e.draw_seed, e.drawn_at, e.beacon_commitment,
       e.draw_closed_at, e.beacon_outcome,
       coalesce(d.participant_count, cardinality(d.participants)) AS participant_count,
       CASE WHEN e.draw_seed IS NULL OR d.event_id IS NULL THEN NULL
            WHEN d.participant_count IS NULL THEN d.participants[$2:$3]::text[]
            ELSE ARRAY(SELECT u.p::text
                       FROM queue_draw_chunks c,
                            unnest(c.participants[greatest($2 - c.first_index + 1, 1)
                                                  :$3 - c.first_index + 1])
                                WITH ORDINALITY AS u(p, i)
                       WHERE c.event_id = $1 AND c.first_index BETWEEN $2 - 9999 AND $3
                       ORDER BY c.first_index, u.i) END AS participants
FROM events e LEFT JOIN queue_draws d USING (event_id)
WHERE e.event_id = $1;
