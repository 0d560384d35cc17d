-- 0006: a published random draw stored in chunks (docs/edge.md#the-random-draw-and-how-to-verify-it).
-- A page of GET /api/events/{id}/queue/draw used to detoast the draw's whole uuid[]
-- (32 MB at 2M participants) to send a slice of it. Now queue_draws keeps one row per
-- draw (its participant count, when it was recorded) and queue_draw_chunks the sorted ids
-- in runs of at most 10,000, each keyed by the 1-based index of its first id: a page of
-- up to 10,000 ids reads at most two chunks.
--
-- Expand, then contract: the participants column stays, nullable, for the edge processes
-- of the previous build during a rolling deploy (they read it, and record a draw into it:
-- such a row has no participant_count, and the new code reads it from the array). A later
-- migration drops it once no such process remains and the new code no longer reads it.

ALTER TABLE queue_draws ALTER COLUMN participants DROP NOT NULL;
ALTER TABLE queue_draws ADD COLUMN participant_count integer
    CHECK (participant_count >= 0);
ALTER TABLE queue_draws ADD CONSTRAINT queue_draws_recorded_check
    CHECK (participant_count IS NOT NULL OR participants IS NOT NULL);

CREATE TABLE queue_draw_chunks (
    event_id     bigint NOT NULL REFERENCES queue_draws,
    first_index  integer NOT NULL CHECK (first_index >= 1),
    participants uuid[] NOT NULL CHECK (cardinality(participants) BETWEEN 1 AND 10000),
    PRIMARY KEY (event_id, first_index)
);

-- The draws recorded so far, chunked (each array is read once: unnest, then regroup).
INSERT INTO queue_draw_chunks (event_id, first_index, participants)
SELECT d.event_id, min(u.i)::integer, array_agg(u.p ORDER BY u.i)
FROM queue_draws d, unnest(d.participants) WITH ORDINALITY AS u(p, i)
GROUP BY d.event_id, (u.i - 1) / 10000;

UPDATE queue_draws SET participant_count = cardinality(participants);
