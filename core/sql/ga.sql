-- name: stripes
-- A GA tier's stripes as the quota plane plans from them (an unlocked read).
SELECT b.stripe, b.stripe < t.stripes AS active, b.available, b.held, b.sold, t.max_per_hold
FROM ga_buckets b JOIN ga_tiers t ON t.event_id = b.event_id AND t.tier_id = b.tier_id
WHERE b.event_id = $1 AND b.tier_id = $2
ORDER BY b.stripe;

-- name: rebalance
SELECT onsale_ga_rebalance($1, $2::smallint, $3::smallint[], $4::integer[], $5, $6);

-- name: set_stripes
SELECT onsale_ga_set_stripes($1, $2::smallint, $3::smallint);

-- name: tiers_to_watch
-- GA tiers worth rebalancing: of events not yet started, with more than one
-- stripe or a retired stripe still holding places.
SELECT t.event_id, t.tier_id
FROM ga_tiers t JOIN events e ON e.event_id = t.event_id
WHERE e.starts_at > now()
  AND (t.stripes > 1 OR EXISTS (SELECT 1 FROM ga_buckets b
                                WHERE b.event_id = t.event_id AND b.tier_id = t.tier_id
                                  AND b.stripe >= t.stripes AND b.available > 0))
ORDER BY t.event_id, t.tier_id;

-- name: tier_report
-- An operator's view of one event's GA tiers: each stripe's counts, and the
-- last rebalances.
SELECT t.tier_id, t.name, t.capacity, t.stripes, t.max_per_hold, t.max_per_account,
       t.price_minor,
       (SELECT jsonb_agg(jsonb_build_object('stripe', b.stripe, 'active', b.stripe < t.stripes,
                                            'available', b.available, 'held', b.held,
                                            'sold', b.sold, 'version', b.version)
                         ORDER BY b.stripe)
        FROM ga_buckets b WHERE b.event_id = t.event_id AND b.tier_id = t.tier_id) AS stripe_counts,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('moved', r.moved, 'reason', r.reason,
                                                     'at', r.at) ORDER BY r.rebalance_id DESC),
                        '[]')
        FROM (SELECT * FROM ga_rebalances r
              WHERE r.event_id = t.event_id AND r.tier_id = t.tier_id
              ORDER BY r.rebalance_id DESC LIMIT 10) r) AS recent_rebalances
FROM ga_tiers t
WHERE t.event_id = $1
ORDER BY t.tier_id;

-- name: event_clock
-- The database's clock, if the event exists (NULL otherwise).
SELECT now() FROM events WHERE event_id = $1;
