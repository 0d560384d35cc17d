-- name: queue_config
-- The waiting-room settings of some events, with the database clock.
SELECT event_id, queue_policy, prequeue_at, onsale_at, starts_at, admission_rate_min,
       admission_rate_max, active_cap, pow_difficulty, admission_paused, draw_commitment,
       draw_seed, created_at, now() AS db_now
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

-- name: set_paused
UPDATE events SET admission_paused = $2 WHERE event_id = $1 RETURNING event_id;

-- name: draw_secret
SELECT s.seed, e.draw_commitment FROM event_draw_secrets s JOIN events e USING (event_id)
WHERE s.event_id = $1;

-- name: record_draw
-- Publish the draw: the participants and the seed, once (a repeated draw after
-- a crash finds the first record and uses the same participants).
WITH drawn AS (
    INSERT INTO queue_draws (event_id, participants) VALUES ($1, $2)
    ON CONFLICT (event_id) DO NOTHING
    RETURNING participants
)
SELECT participants FROM drawn
UNION ALL
SELECT participants FROM queue_draws WHERE event_id = $1 AND NOT EXISTS (SELECT 1 FROM drawn);

-- name: reveal_seed
UPDATE events e SET draw_seed = s.seed, drawn_at = coalesce(e.drawn_at, now())
FROM event_draw_secrets s
WHERE e.event_id = $1 AND s.event_id = e.event_id;

-- name: published_draw
-- $2, $3: the 1-based, inclusive slice of the participants for one page.
SELECT e.draw_commitment, e.draw_seed, e.drawn_at,
       cardinality(d.participants) AS participant_count, d.participants[$2:$3] AS participants
FROM events e LEFT JOIN queue_draws d USING (event_id)
WHERE e.event_id = $1;
