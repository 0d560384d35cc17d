-- 0003: the waiting room's settings per event (edge/, docs/edge.md). Postgres
-- stays the authority for event configuration; Redis holds only the live
-- queue. The policy is frozen once the sale opens (checked by the operator
-- route, which compares with onsale_at by database time).
--   prequeue_at NULL: visitors may join as soon as the event exists.
--   admission_rate_min/max: new shoppers per minute, the controller's bounds.
--   draw_commitment: sha256 hex of the draw seed, published before opening;
--   draw_seed: the seed, NULL until the draw reveals it. The seed itself waits
--   in event_draw_secrets, which no API reads.

ALTER TABLE events
    ADD COLUMN queue_policy text NOT NULL DEFAULT 'fifo'
        CHECK (queue_policy IN ('fifo', 'random', 'passthrough')),
    ADD COLUMN prequeue_at timestamptz,
    ADD COLUMN admission_rate_min integer NOT NULL DEFAULT 60
        CHECK (admission_rate_min BETWEEN 1 AND 1000000),
    ADD COLUMN admission_rate_max integer NOT NULL DEFAULT 6000
        CHECK (admission_rate_max BETWEEN 1 AND 1000000),
    ADD COLUMN active_cap integer NOT NULL DEFAULT 10000
        CHECK (active_cap BETWEEN 1 AND 10000000),
    ADD COLUMN pow_difficulty smallint NOT NULL DEFAULT 0
        CHECK (pow_difficulty BETWEEN 0 AND 32),
    ADD COLUMN admission_paused boolean NOT NULL DEFAULT false,
    ADD COLUMN draw_commitment text,
    ADD COLUMN draw_seed text,
    ADD COLUMN drawn_at timestamptz,
    ADD CONSTRAINT events_admission_rate_bounds CHECK (admission_rate_min <= admission_rate_max),
    ADD CONSTRAINT events_prequeue_before_onsale CHECK (prequeue_at <= onsale_at);

CREATE TABLE event_draw_secrets (
    event_id bigint PRIMARY KEY REFERENCES events,
    seed     text NOT NULL
);

-- A random draw as published: every participant id (sorted, so the list says
-- nothing about arrival order); the order is recomputed from the seed.
CREATE TABLE queue_draws (
    event_id     bigint PRIMARY KEY REFERENCES events,
    participants uuid[] NOT NULL,
    drawn_at     timestamptz NOT NULL DEFAULT now()
);
