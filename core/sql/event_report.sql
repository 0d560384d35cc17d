-- name: event_list
-- onsale event list: every event the directory lists, the newest first, with its shard.
SELECT e.event_id, e.name, e.venue_name, e.onsale_at, e.starts_at, e.time_zone,
       e.seat_count, e.queue_policy, e.admission_paused, coalesce(p.shard_id, 1) AS shard_id
FROM events e LEFT JOIN event_placement p USING (event_id)
ORDER BY e.event_id DESC
LIMIT $1;

-- name: event_row
SELECT e.event_id, e.name, e.venue_name, e.onsale_at, e.starts_at, e.prequeue_at,
       e.time_zone, e.currency, e.seat_count, e.hold_ttl_seconds, e.max_tickets_per_account,
       e.max_seats_per_hold, e.queue_policy, e.admission_rate_min, e.admission_rate_max,
       e.active_cap, e.pow_difficulty, e.admission_paused, e.draw_commitment,
       coalesce(p.shard_id, 1) AS shard_id
FROM events e LEFT JOIN event_placement p USING (event_id)
WHERE e.event_id = $1;

-- name: event_seats
-- On the event's shard: its seats by status.
SELECT status, count(*) AS seats FROM seat_inventory WHERE event_id = $1
GROUP BY status ORDER BY status;

-- name: event_ga
-- On the event's shard: each GA tier's places, summed over its stripes.
SELECT t.tier_id, t.name, t.capacity, t.stripes, coalesce(sum(b.available), 0) AS available,
       coalesce(sum(b.held), 0) AS held, coalesce(sum(b.sold), 0) AS sold
FROM ga_tiers t LEFT JOIN ga_buckets b USING (event_id, tier_id)
WHERE t.event_id = $1
GROUP BY t.tier_id, t.name, t.capacity, t.stripes ORDER BY t.tier_id;
