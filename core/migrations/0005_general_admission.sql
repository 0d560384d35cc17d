-- 0005: general admission (docs/general-admission.md). A GA tier sells places
-- without seat numbers; its inventory is a few counter rows (stripes) that
-- holds decrement conditionally, in the same transactions as seat holds. A
-- place is in exactly one of a stripe's counts: available, held (a live hold
-- or one in payment) or sold; over a tier's stripes they always add up to its
-- capacity. The steps are functions: onsale_ga_hold, onsale_ga_take,
-- onsale_ga_move, onsale_ga_expire_due, onsale_ga_rebalance, onsale_ga_set_stripes.

-- An event may be general admission only.
ALTER TABLE events DROP CONSTRAINT events_seat_count_check;
ALTER TABLE events ADD CONSTRAINT events_seat_count_check CHECK (seat_count >= 0);

CREATE TABLE ga_tiers (
    event_id        bigint NOT NULL REFERENCES events,
    tier_id         smallint NOT NULL CHECK (tier_id > 0),
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 50),
    price_minor     bigint NOT NULL CHECK (price_minor >= 0),
    capacity        integer NOT NULL CHECK (capacity > 0),
    max_per_hold    integer NOT NULL CHECK (max_per_hold BETWEEN 1 AND 100),
    max_per_account integer CHECK (max_per_account BETWEEN 1 AND 100),
    stripes         smallint NOT NULL CHECK (stripes BETWEEN 1 AND 64),
    PRIMARY KEY (event_id, tier_id)
);

-- One counter row per stripe. The tier's stripes 0 .. ga_tiers.stripes - 1 are
-- active; a stripe past them is retired (the tier was given fewer): holds take
-- from it only when the active ones are short, the rebalancer drains what it
-- has available, and it stays while places it held or sold point at it.
CREATE TABLE ga_buckets (
    event_id  bigint NOT NULL,
    tier_id   smallint NOT NULL,
    stripe    smallint NOT NULL CHECK (stripe >= 0),
    available integer NOT NULL CHECK (available >= 0),
    held      integer NOT NULL DEFAULT 0 CHECK (held >= 0),
    sold      integer NOT NULL DEFAULT 0 CHECK (sold >= 0),
    version   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, tier_id, stripe),
    FOREIGN KEY (event_id, tier_id) REFERENCES ga_tiers
) WITH (fillfactor = 50);

-- A GA hold lists no seats; ga is its line ({tier_id, name, quantity,
-- price_minor}) and seat_count its number of places.
ALTER TABLE holds ADD COLUMN ga_tier_id smallint;
ALTER TABLE holds ADD COLUMN ga jsonb;
ALTER TABLE holds DROP CONSTRAINT holds_seat_ids_check;
ALTER TABLE holds ADD CONSTRAINT holds_inventory_check CHECK (
    CASE WHEN ga_tier_id IS NULL THEN cardinality(seat_ids) >= 1 AND ga IS NULL
         ELSE cardinality(seat_ids) = 0 AND ga IS NOT NULL END);
CREATE INDEX holds_ga_due_idx ON holds (event_id, ga_tier_id, expires_at)
    WHERE status = 'HELD' AND ga_tier_id IS NOT NULL;

-- Exactly what a GA hold took from each stripe, and where those places are
-- counted now: HELD (the stripe's held), SOLD (its sold) or RETURNED (given
-- back to its available). Only these rows' status changes move counts.
CREATE TABLE ga_hold_places (
    hold_id  uuid NOT NULL REFERENCES holds,
    event_id bigint NOT NULL,
    tier_id  smallint NOT NULL,
    stripe   smallint NOT NULL,
    quantity integer NOT NULL CHECK (quantity > 0),
    status   text NOT NULL DEFAULT 'HELD' CHECK (status IN ('HELD', 'SOLD', 'RETURNED')),
    PRIMARY KEY (hold_id, stripe),
    FOREIGN KEY (event_id, tier_id, stripe) REFERENCES ga_buckets
);
CREATE INDEX ga_hold_places_bucket_idx ON ga_hold_places (event_id, tier_id, stripe)
    WHERE status <> 'RETURNED';

-- Every return of places to a stripe, with the state before (audited like
-- hold_releases: a release touches only its own hold).
CREATE TABLE ga_releases (
    release_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hold_id           uuid NOT NULL,
    event_id          bigint NOT NULL,
    tier_id           smallint NOT NULL,
    stripe            smallint NOT NULL,
    quantity          integer NOT NULL CHECK (quantity > 0),
    prior_status      text NOT NULL,
    prior_hold_status text NOT NULL,
    prior_expires_at  timestamptz NOT NULL,
    reason            text NOT NULL
                      CHECK (reason IN ('expired', 'released', 'payment_failed', 'compensated')),
    released_at       timestamptz NOT NULL DEFAULT now()
);
-- A hold's places on a stripe come back once (and the audit finds them by it).
CREATE UNIQUE INDEX ga_releases_once ON ga_releases (hold_id, stripe);

-- Every move of available places between a tier's stripes.
CREATE TABLE ga_rebalances (
    rebalance_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     bigint NOT NULL,
    tier_id      smallint NOT NULL,
    moved        integer NOT NULL,
    before       jsonb NOT NULL,
    after        jsonb NOT NULL,
    reason       text NOT NULL,
    at           timestamptz NOT NULL DEFAULT now()
);

-- What an order bought of a GA tier: quantity places at price_minor each.
CREATE TABLE ga_order_items (
    order_id    uuid NOT NULL REFERENCES orders,
    event_id    bigint NOT NULL,
    tier_id     smallint NOT NULL,
    quantity    integer NOT NULL CHECK (quantity > 0),
    price_minor bigint NOT NULL CHECK (price_minor >= 0),
    valid       boolean NOT NULL DEFAULT true,
    PRIMARY KEY (order_id, tier_id)
);

-- A ticket is for a seat, or for place n (1..quantity) of a GA tier.
ALTER TABLE tickets ALTER COLUMN seat_id DROP NOT NULL;
ALTER TABLE tickets ADD COLUMN ga_tier_id smallint;
ALTER TABLE tickets ADD COLUMN place integer;
ALTER TABLE tickets ADD CONSTRAINT tickets_seat_or_place CHECK (
    (seat_id IS NULL) = (ga_tier_id IS NOT NULL) AND (ga_tier_id IS NULL) = (place IS NULL));
CREATE UNIQUE INDEX tickets_one_per_place ON tickets (order_id, ga_tier_id, place)
    WHERE ga_tier_id IS NOT NULL;
