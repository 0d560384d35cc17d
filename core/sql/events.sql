-- name: next_event_id
-- Event ids are the directory's (its events identity), whichever shard holds the event.
SELECT nextval(pg_get_serial_sequence('events', 'event_id'));

-- name: insert_event
-- The events row under the id the directory allocated: the catalogue's in the
-- directory, the same row on the event's shard (the hold functions read it there).
INSERT INTO events (event_id, name, venue_name, starts_at, onsale_at, currency,
                    hold_ttl_seconds, max_tickets_per_account, max_seats_per_hold, seat_count,
                    queue_policy, prequeue_at, admission_rate_min, admission_rate_max,
                    active_cap, pow_difficulty, draw_commitment, beacon_commitment, time_zone)
OVERRIDING SYSTEM VALUE
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
        $19);

-- name: place_event
-- The switch: once this commits, every process routes the event to shard $2.
INSERT INTO event_placement (event_id, shard_id) VALUES ($1, $2);

-- name: shards_on_sale
-- The shard list with each shard's events on sale (the default home of a new event).
SELECT s.shard_id, s.dsn, s.state, s.epoch,
       count(e.event_id) FILTER (WHERE e.onsale_at <= now() AND e.starts_at > now())
           AS on_sale
FROM shards s
LEFT JOIN event_placement p ON p.shard_id = s.shard_id
LEFT JOIN events e ON e.event_id = p.event_id
GROUP BY s.shard_id ORDER BY s.shard_id;

-- name: onsale_at
SELECT onsale_at FROM events WHERE event_id = $1;

-- name: insert_draw_secret
-- A random draw's seed, kept out of every API until the draw; its hash is public, and
-- so is the beacon round it will be mixed with ($4, NULL: the seed alone).
WITH secret AS (
    INSERT INTO event_draw_secrets (event_id, seed) VALUES ($1, $2)
    ON CONFLICT (event_id) DO NOTHING
    RETURNING event_id
)
UPDATE events SET draw_commitment = $3, beacon_commitment = $4::jsonb
WHERE event_id = $1 AND EXISTS (SELECT 1 FROM secret);

-- name: insert_tier
INSERT INTO price_tiers (event_id, tier_id, name, price_minor) VALUES ($1, $2, $3, $4);

-- name: insert_ga_tier
INSERT INTO ga_tiers (event_id, tier_id, name, price_minor, capacity, max_per_hold,
                      max_per_account, stripes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: insert_ga_buckets
-- A tier's stripes, its capacity split over them.
INSERT INTO ga_buckets (event_id, tier_id, stripe, available)
SELECT $1, $2, s.stripe, s.available
FROM unnest($3::smallint[], $4::integer[]) AS s(stripe, available);

-- name: fill_inventory
-- One chunk of seats ($2 .. $3): every statement of a create stays within the bound.
INSERT INTO seat_inventory (event_id, seat_id)
SELECT event_id, seat_id FROM seats
WHERE event_id = $1 AND seat_id BETWEEN $2 AND $3
ORDER BY seat_id;

-- name: insert_layout
INSERT INTO venue_layouts (event_id, etag, body, body_gzip) VALUES ($1, $2, $3, $4);

-- name: events
-- All events ($1 NULL) or those listed ($1: their ids; a shard is asked for the events
-- the placement puts on it), with the current price of each tier.
SELECT e.event_id, e.name, e.venue_name, e.time_zone, e.starts_at, e.onsale_at, e.currency,
       e.hold_ttl_seconds, e.max_tickets_per_account, e.max_seats_per_hold, e.seat_count,
       e.queue_policy, e.prequeue_at, e.draw_commitment, e.draw_seed, e.drawn_at,
       e.beacon_commitment, e.beacon_outcome, e.pow_difficulty,
       (SELECT jsonb_agg(jsonb_build_object('tier_id', t.tier_id, 'name', t.name,
                                            'price_minor', t.price_minor) ORDER BY t.tier_id)
        FROM price_tiers t
        WHERE t.event_id = e.event_id
          AND t.price_version = (SELECT max(t2.price_version) FROM price_tiers t2
                                 WHERE t2.event_id = t.event_id AND t2.tier_id = t.tier_id))
       AS tiers,
       -- GA tiers with what is left right now (the sum over their stripes).
       (SELECT jsonb_agg(jsonb_build_object(
                   'tier_id', g.tier_id, 'name', g.name, 'price_minor', g.price_minor,
                   'capacity', g.capacity, 'max_per_hold', g.max_per_hold,
                   'max_per_account', g.max_per_account,
                   'available', (SELECT coalesce(sum(b.available), 0)::integer FROM ga_buckets b
                                 WHERE b.event_id = g.event_id AND b.tier_id = g.tier_id))
                   ORDER BY g.tier_id)
        FROM ga_tiers g WHERE g.event_id = e.event_id) AS ga_tiers,
       -- The layout's content hash: its immutable URL (links.venue).
       (SELECT l.etag FROM venue_layouts l WHERE l.event_id = e.event_id) AS layout_etag
FROM events e
WHERE $1::bigint[] IS NULL OR e.event_id = ANY ($1::bigint[])
ORDER BY e.onsale_at, e.event_id;

-- name: move_facts
-- In the directory: where the event is, when its queue opens, the directory's clock,
-- and the target's state ($2; NULL: not listed).
SELECT p.shard_id, e.onsale_at, e.prequeue_at, now() AS db_now,
       (SELECT s.state FROM shards s WHERE s.shard_id = $2) AS target_state
FROM events e JOIN event_placement p USING (event_id)
WHERE e.event_id = $1;

-- name: lock_move_facts
-- The switch's transaction: the same facts, the catalogue row locked (an operator's
-- queue change waits for the switch, then reaches the new shard).
SELECT p.shard_id, e.onsale_at, e.prequeue_at, now() AS db_now,
       (SELECT s.state FROM shards s WHERE s.shard_id = $2) AS target_state
FROM events e JOIN event_placement p USING (event_id)
WHERE e.event_id = $1
FOR UPDATE OF e, p;

-- name: event_usage
-- On the event's shard: its holds (any state) and orders.
SELECT (SELECT count(*) FROM holds WHERE event_id = $1) AS holds,
       (SELECT count(*) FROM orders WHERE event_id = $1) AS orders;

-- name: switch_placement
UPDATE event_placement SET shard_id = $3, placed_at = now()
WHERE event_id = $1 AND shard_id = $2;

-- name: event_row
-- The directory's events row as JSON text (copied onto a shard's row).
SELECT to_jsonb(e)::text FROM events e WHERE e.event_id = $1;

-- name: event_shard
-- The event's shard as the directory has it now (not a process's cached copy).
SELECT shard_id FROM event_placement WHERE event_id = $1;

-- name: listed_shards
SELECT shard_id FROM shards ORDER BY shard_id;

-- name: sync_queue_columns
-- Bring a shard's copy of the events row up to the directory's ($2: event_row): the
-- columns the directory changes after creation (the waiting room's settings, the
-- draw). The hold functions read none of them (docs/scaling.md#placing-an-event).
UPDATE events e
SET (queue_policy, prequeue_at, admission_rate_min, admission_rate_max, active_cap,
     pow_difficulty, admission_paused, draw_commitment, draw_seed, drawn_at,
     beacon_commitment, draw_closed_at, beacon_outcome)
  = (d.queue_policy, d.prequeue_at, d.admission_rate_min, d.admission_rate_max,
     d.active_cap, d.pow_difficulty, d.admission_paused, d.draw_commitment, d.draw_seed,
     d.drawn_at, d.beacon_commitment, d.draw_closed_at, d.beacon_outcome)
FROM jsonb_populate_record(NULL::events, $2::text::jsonb) d
WHERE e.event_id = $1;

-- name: layout_json
-- One representation of the layout, never both (docs/architecture.md#the-venue-layout).
SELECT etag, body FROM venue_layouts WHERE event_id = $1;

-- name: layout_gzip
SELECT etag, body_gzip AS body FROM venue_layouts WHERE event_id = $1;

-- name: event_by_name
SELECT event_id FROM events WHERE name = $1 ORDER BY event_id LIMIT 1;

-- name: analyze_inventory
ANALYZE seats, seat_inventory, price_tiers, ga_tiers, ga_buckets;

-- name: reserve_key
INSERT INTO idempotency_keys (account_id, key, digest) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING key;

-- name: stored_key
SELECT digest, status_code, response FROM idempotency_keys WHERE account_id = $1 AND key = $2;

-- name: store_key_response
UPDATE idempotency_keys SET status_code = 201, response = $3
WHERE account_id = $1 AND key = $2;
