-- The declared schema of core: every table and index as it stands after all
-- migrations, each written exactly once. The functions are not copied here:
-- each lives only in its file, core/sql/functions/<name>.sql (section 7).
--
-- This file is a document. Production never runs it: `onsale migrate` applies
-- the numbered migrations (core/migrations/, DDL and data changes, once each)
-- and then the function files (core/sql/functions/, whenever one changes).
-- tests/integration/test_migrate.py builds one database that way and another
-- from this file plus the function files, and requires the two catalogues to
-- be equal (tables, columns, constraints, indexes, triggers, functions).
-- Change a table: write a migration and update its declaration here. Change a
-- function: edit its file.
--
-- Sections: 1. events and accounts; 2. the venue; 3. seat inventory and
-- holds; 4. orders, payments and tickets; 5. the outbox; 6. indexes;
-- 7. functions. Columns appear in table order: a column added by a later
-- migration comes last.


-- 1. Events and accounts ---------------------------------------------------

CREATE TABLE accounts (
    account_id    uuid PRIMARY KEY DEFAULT uuidv7(),
    email         text NOT NULL,  -- unique case-insensitively (accounts_email_key)
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- An event's sale settings, and its waiting room (edge/, docs/edge.md): the
-- queue policy is frozen once the sale opens (checked by the operator route
-- by database time).
--   prequeue_at NULL: visitors may join as soon as the event exists.
--   admission_rate_min/max: new shoppers per minute, the controller's bounds.
--   draw_commitment: sha256 hex of the draw seed, published before opening;
--   draw_seed: the seed, NULL until the draw reveals it (it waits in
--   event_draw_secrets, which no API reads).
CREATE TABLE events (
    event_id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                    text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    venue_name              text NOT NULL DEFAULT 'Main Arena',
    starts_at               timestamptz NOT NULL,
    onsale_at               timestamptz NOT NULL,
    currency                char(3) NOT NULL DEFAULT 'USD',
    hold_ttl_seconds        integer NOT NULL CHECK (hold_ttl_seconds BETWEEN 1 AND 3600),
    max_tickets_per_account integer NOT NULL CHECK (max_tickets_per_account BETWEEN 1 AND 100),
    max_seats_per_hold      integer NOT NULL CHECK (max_seats_per_hold BETWEEN 1 AND 100),
    seat_count              integer NOT NULL CHECK (seat_count >= 0),
    created_at              timestamptz NOT NULL DEFAULT now(),
    queue_policy            text NOT NULL DEFAULT 'fifo'
                            CHECK (queue_policy IN ('fifo', 'random', 'passthrough')),
    prequeue_at             timestamptz,
    admission_rate_min      integer NOT NULL DEFAULT 60
                            CHECK (admission_rate_min BETWEEN 1 AND 1000000),
    admission_rate_max      integer NOT NULL DEFAULT 6000
                            CHECK (admission_rate_max BETWEEN 1 AND 1000000),
    active_cap              integer NOT NULL DEFAULT 10000
                            CHECK (active_cap BETWEEN 1 AND 10000000),
    pow_difficulty          smallint NOT NULL DEFAULT 0 CHECK (pow_difficulty BETWEEN 0 AND 32),
    admission_paused        boolean NOT NULL DEFAULT false,
    draw_commitment         text,
    draw_seed               text,
    drawn_at                timestamptz,
    -- 0009: the beacon round committed with the seed (the chain and the round), when
    -- the pre-queue closed, and the round drawn with or the operator's fallback
    -- (docs/edge.md#a-draw-nobody-can-predict).
    beacon_commitment       jsonb,
    draw_closed_at          timestamptz,
    beacon_outcome          jsonb,
    -- Where the built-in bot-risk scorer's bands start (1..100; NULL: off), ascending
    -- (docs/edge.md#the-built-in-risk-scorer). Only the edge reads them.
    risk_raised             smallint CHECK (risk_raised BETWEEN 1 AND 100),
    risk_high               smallint CHECK (risk_high BETWEEN 1 AND 100),
    risk_refused            smallint CHECK (risk_refused BETWEEN 1 AND 100),
    -- The venue's IANA time zone (the pages show times in it; the API keeps UTC).
    time_zone               text NOT NULL DEFAULT 'UTC'
                            CHECK (length(time_zone) BETWEEN 1 AND 64),
    CONSTRAINT events_risk_ascending CHECK (
        risk_raised < coalesce(risk_high, risk_refused, 101)
        AND risk_high < coalesce(risk_refused, 101)),
    CONSTRAINT events_admission_rate_bounds CHECK (admission_rate_min <= admission_rate_max),
    CONSTRAINT events_prequeue_before_onsale CHECK (prequeue_at <= onsale_at)
);

CREATE TABLE event_draw_secrets (
    event_id bigint PRIMARY KEY REFERENCES events,
    seed     text NOT NULL
);

-- A random draw as published: every participant id (sorted, so the list says
-- nothing about arrival order); the order is recomputed from the seed. One row per
-- draw, its ids in queue_draw_chunks. participants: only a draw recorded by an edge
-- of the build before 0006 (participant_count null); to be dropped.
CREATE TABLE queue_draws (
    event_id          bigint PRIMARY KEY REFERENCES events,
    participants      uuid[],
    drawn_at          timestamptz NOT NULL DEFAULT now(),
    participant_count integer CHECK (participant_count >= 0),
    CONSTRAINT queue_draws_recorded_check
        CHECK (participant_count IS NOT NULL OR participants IS NOT NULL)
);

-- The draw's sorted ids in runs of at most 10,000, keyed by the 1-based index of
-- each run's first id: a page of the published draw reads only the runs it shows.
CREATE TABLE queue_draw_chunks (
    event_id     bigint NOT NULL REFERENCES queue_draws,
    first_index  integer NOT NULL CHECK (first_index >= 1),
    participants uuid[] NOT NULL CHECK (cardinality(participants) BETWEEN 1 AND 10000),
    PRIMARY KEY (event_id, first_index)
);


-- 2. The venue -------------------------------------------------------------

-- Prices are versioned: a seat row carries the price_version it is sold at,
-- and every total is computed by the server from the locked version.
CREATE TABLE price_tiers (
    event_id      bigint NOT NULL REFERENCES events,
    tier_id       smallint NOT NULL,
    price_version integer NOT NULL DEFAULT 1,
    name          text NOT NULL,
    price_minor   bigint NOT NULL CHECK (price_minor >= 0),
    PRIMARY KEY (event_id, tier_id, price_version)
);

-- The immutable seat layout, kept apart from the narrow hot inventory row.
CREATE TABLE seats (
    event_id  bigint NOT NULL REFERENCES events,
    seat_id   integer NOT NULL,
    section   text NOT NULL,
    row_label text NOT NULL,
    number    integer NOT NULL,
    x         real NOT NULL,
    y         real NOT NULL,
    tier_id   smallint NOT NULL,
    rank      integer NOT NULL,
    PRIMARY KEY (event_id, seat_id)
);

-- The venue layout as served to browsers: content-addressed by etag, stored
-- compressed once so no request pays for gzip.
CREATE TABLE venue_layouts (
    event_id  bigint PRIMARY KEY REFERENCES events,
    etag      text NOT NULL,
    body      text NOT NULL,
    body_gzip bytea NOT NULL
);


-- 3. Seat inventory and holds ----------------------------------------------

-- One narrow hot row per seat, the authority on who has it. No secondary
-- index on hold_id so that status changes stay HOT updates (fillfactor 80
-- leaves them room); every lookup goes through (event_id, seat_id).
CREATE TABLE seat_inventory (
    event_id        bigint NOT NULL,
    seat_id         integer NOT NULL,
    status          text NOT NULL DEFAULT 'AVAILABLE'
                    CHECK (status IN ('AVAILABLE', 'HELD', 'PAYMENT_PENDING', 'SOLD', 'BLOCKED')),
    hold_id         uuid,
    hold_expires_at timestamptz,
    order_id        uuid,
    price_version   integer NOT NULL DEFAULT 1,
    version         bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, seat_id),
    FOREIGN KEY (event_id, seat_id) REFERENCES seats,
    CHECK (status NOT IN ('HELD', 'PAYMENT_PENDING') OR (hold_id IS NOT NULL AND hold_expires_at IS NOT NULL)),
    CHECK (status <> 'SOLD' OR order_id IS NOT NULL),
    CHECK (status <> 'AVAILABLE' OR (hold_id IS NULL AND order_id IS NULL))
) WITH (fillfactor = 80);

-- A hold: the seats an account claimed, what they cost when claimed, and the
-- deadline. grace_until is the one-time payment grace, set when the hold
-- first enters PAYMENT_PENDING and never extended afterwards.
CREATE TABLE holds (
    hold_id         uuid PRIMARY KEY,
    event_id        bigint NOT NULL REFERENCES events,
    account_id      uuid NOT NULL,  -- an account of the directory (no foreign key)
    idempotency_key text NOT NULL,
    status          text NOT NULL
                    CHECK (status IN ('HELD', 'PAYMENT_PENDING', 'CONFIRMED', 'RELEASED', 'EXPIRED')),
    seat_ids        integer[] NOT NULL,
    seats           jsonb NOT NULL,
    seat_count      integer NOT NULL,
    amount_minor    bigint NOT NULL CHECK (amount_minor >= 0),
    currency        char(3) NOT NULL,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    grace_until     timestamptz,
    ga_tier_id      smallint,
    ga              jsonb,
    -- A seat hold lists its seats; a GA hold none, and ga is its line
    -- ({tier_id, name, quantity, price_minor}), seat_count its places.
    CONSTRAINT holds_inventory_check CHECK (
        CASE WHEN ga_tier_id IS NULL THEN cardinality(seat_ids) >= 1 AND ga IS NULL
             ELSE cardinality(seat_ids) = 0 AND ga IS NOT NULL END)
);

-- One immutable request per (account, key), a hold request or a checkout
-- request (scope); the response commits with the business state it describes.
CREATE TABLE idempotency_keys (
    account_id  uuid NOT NULL,
    key         text NOT NULL,
    digest      text NOT NULL,
    status_code integer,
    response    jsonb,
    resource_id uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    scope       text NOT NULL DEFAULT 'hold' CHECK (scope IN ('hold', 'checkout')),
    PRIMARY KEY (account_id, key)
);

-- Every time a held seat leaves its hold other than by sale: released by its
-- owner, expired by the sweeper, reclaimed by a newer hold after the
-- deadline, freed because its payment failed, or put back on sale by a
-- compensation. The row's state before the change is kept, so invariant 4
-- (an expiry action changes only its own, expired hold) is audited from this.
CREATE TABLE hold_releases (
    release_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hold_id          uuid NOT NULL,
    event_id         bigint NOT NULL,
    seat_id          integer NOT NULL,
    prior_hold_id    uuid,
    prior_status     text NOT NULL,
    prior_expires_at timestamptz,
    reason           text NOT NULL
                     CHECK (reason IN ('expired', 'released', 'reclaimed', 'payment_failed',
                                       'compensated')),
    released_at      timestamptz NOT NULL DEFAULT now()
);


-- 3b. General admission (docs/general-admission.md) -----------------------

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

-- 4. Orders, payments and tickets ------------------------------------------

-- One order per hold, from the start of checkout (PENDING). payment_status
-- follows the provider; FAILED: the payment never happened (not found at the
-- provider past the grace).
CREATE TABLE orders (
    order_id       uuid PRIMARY KEY DEFAULT onsale_new_id(),
    hold_id        uuid NOT NULL UNIQUE REFERENCES holds,
    event_id       bigint NOT NULL REFERENCES events,
    account_id     uuid NOT NULL,  -- an account of the directory (no foreign key)
    status         text NOT NULL
                   CHECK (status IN ('PENDING', 'CONFIRMED', 'CANCELLED', 'FAILED')),
    amount_minor   bigint NOT NULL CHECK (amount_minor >= 0),
    currency       char(3) NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    payment_status text NOT NULL DEFAULT 'PENDING'
                   CHECK (payment_status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORIZED',
                                             'CAPTURED', 'DECLINED', 'UNKNOWN', 'VOIDED',
                                             'CAPTURE_FAILED', 'FAILED')),
    cancel_reason  text,
    checkout_key   text
);

-- The seats of an order at the price sold; valid = false once compensated.
CREATE TABLE order_items (
    order_id     uuid NOT NULL REFERENCES orders,
    event_id     bigint NOT NULL,
    seat_id      integer NOT NULL,
    price_minor  bigint NOT NULL CHECK (price_minor >= 0),
    valid        boolean NOT NULL DEFAULT true,
    PRIMARY KEY (order_id, seat_id)
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

-- One call (and its retries) to the provider. operation_id is the provider's
-- idempotency key, so a retry can never create a second charge.
--   PENDING          recorded, not yet answered (maybe never sent)
--   UNKNOWN          sent, no definitive answer (timeout, 5xx, lost response)
--   REQUIRES_ACTION  the provider wants the shopper (3-D Secure)
--   SUCCEEDED/FAILED definitive
-- A CAPTURE or a VOID names the AUTHORIZE it follows (parent_operation_id).
CREATE TABLE payment_operations (
    operation_id        uuid PRIMARY KEY DEFAULT onsale_new_id(),
    order_id            uuid NOT NULL REFERENCES orders,
    kind                text NOT NULL CHECK (kind IN ('AUTHORIZE', 'CAPTURE', 'VOID')),
    parent_operation_id uuid REFERENCES payment_operations,
    status              text NOT NULL DEFAULT 'PENDING'
                        CHECK (status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION',
                                          'SUCCEEDED', 'FAILED')),
    amount_minor        bigint NOT NULL CHECK (amount_minor >= 0),
    currency            char(3) NOT NULL,
    payment_method      text,
    provider_ref        text,
    failure_code        text,
    next_action         jsonb,
    attempts            integer NOT NULL DEFAULT 0,
    next_check_at       timestamptz NOT NULL DEFAULT now(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- Which wire protocol the operation went out in: 'onsale-v0' for rows written
    -- before payments spoke Stripe's (their payment_method is a masked card).
    protocol            text NOT NULL DEFAULT 'stripe'
                        CHECK (protocol IN ('onsale-v0', 'stripe')),
    CHECK ((kind = 'AUTHORIZE') = (parent_operation_id IS NULL))
);

-- Every change of an order's or a payment's state, with why: the audit trail
-- of compensations, voids and reconciliations.
CREATE TABLE payment_events (
    payment_event_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id         uuid NOT NULL,
    operation_id     uuid,
    action           text NOT NULL,
    detail           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Verified provider webhooks, deduplicated by the provider's event id.
CREATE TABLE webhook_events (
    provider_event_id text PRIMARY KEY,
    event_type        text NOT NULL,
    provider_ref      text,
    outcome           text NOT NULL,
    payload           jsonb NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    protocol          text NOT NULL DEFAULT 'stripe'
                      CHECK (protocol IN ('onsale-v0', 'stripe'))
);

-- Issued once the payment is captured, one per seat of the order.
CREATE TABLE tickets (
    ticket_id  uuid PRIMARY KEY DEFAULT onsale_new_id(),
    order_id   uuid NOT NULL REFERENCES orders,
    event_id   bigint NOT NULL,
    seat_id    integer,
    code       text NOT NULL UNIQUE,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    ga_tier_id smallint,
    place      integer,
    UNIQUE (order_id, seat_id),
    -- A ticket is for a seat, or for place n (1..quantity) of a GA tier.
    CONSTRAINT tickets_seat_or_place CHECK (
        (seat_id IS NULL) = (ga_tier_id IS NOT NULL) AND (ga_tier_id IS NULL) = (place IS NULL))
);


-- 5. The outbox ------------------------------------------------------------

-- Messages written in the same transaction as the change they announce
-- (docs/outbox.md). txid is the writing transaction: the relay publishes a
-- row only once every transaction older than the oldest one still running
-- has ended, so a row committed late with a lower id is never skipped or
-- overtaken.
CREATE TABLE outbox (
    outbox_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     bigint NOT NULL,
    aggregate_id uuid NOT NULL,
    event_type   text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
);


-- 6. Indexes (besides those of primary keys and UNIQUE constraints) ----------

CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));

CREATE INDEX seats_rank_idx ON seats (event_id, rank);

-- A key is unique per account; the limit check counts an account's live
-- holds; the sweeper finds holds past their deadline.
CREATE UNIQUE INDEX holds_account_key_idx ON holds (account_id, idempotency_key);
CREATE INDEX holds_active_by_account_idx ON holds (event_id, account_id)
    WHERE status IN ('HELD', 'PAYMENT_PENDING', 'CONFIRMED');
CREATE INDEX holds_due_idx ON holds (expires_at) WHERE status = 'HELD';
CREATE INDEX holds_ga_due_idx ON holds (event_id, ga_tier_id, expires_at)
    WHERE status = 'HELD' AND ga_tier_id IS NOT NULL;
CREATE INDEX ga_hold_places_bucket_idx ON ga_hold_places (event_id, tier_id, stripe)
    WHERE status <> 'RETURNED';
CREATE UNIQUE INDEX ga_releases_once ON ga_releases (hold_id, stripe);

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE INDEX orders_account_idx ON orders (account_id, created_at);

-- The rule, guarded a second time: one valid sold item per (event, seat).
CREATE UNIQUE INDEX order_items_one_valid_sale ON order_items (event_id, seat_id) WHERE valid;
CREATE UNIQUE INDEX tickets_one_per_place ON tickets (order_id, ga_tier_id, place)
    WHERE ga_tier_id IS NOT NULL;

-- At most one authorization per order that is not definitively failed: a
-- second checkout on the same hold cannot start a second charge.
CREATE UNIQUE INDEX payment_operations_one_live_authorize ON payment_operations (order_id)
    WHERE kind = 'AUTHORIZE' AND status <> 'FAILED';
-- One capture and one void per authorization.
CREATE UNIQUE INDEX payment_operations_one_per_parent ON payment_operations
    (parent_operation_id, kind) WHERE parent_operation_id IS NOT NULL;
-- The reconciler's work list, and look-ups by order and by provider reference.
CREATE INDEX payment_operations_open_idx ON payment_operations (next_check_at)
    WHERE status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION');
CREATE INDEX payment_operations_order_idx ON payment_operations (order_id);
CREATE INDEX payment_operations_ref_idx ON payment_operations (provider_ref);

CREATE INDEX payment_events_order_idx ON payment_events (order_id);

CREATE INDEX outbox_unpublished_idx ON outbox (outbox_id) WHERE published_at IS NULL;


-- 7. Functions -------------------------------------------------------------
--
-- Each lives only in core/sql/functions/<name>.sql, whose header says what it
-- does and who calls it (the rules for those files: docs/operations.md,
-- "Migrations"); `onsale migrate` and the catalogue test apply them after
-- this file. There are no triggers (one here would need its trigger function
-- first: the catalogue test would then have to apply that file before this one).
--
-- Errors: a business refusal raises RAISE EXCEPTION USING ERRCODE = 'OS409'
-- (SQLSTATE OS400, OS404 or OS409: HTTP 400, 404 or 409), MESSAGE = the
-- problem code, DETAIL = a JSON object merged into the problem body
-- (core/hold_store.py maps them). Raising aborts the statement, so a refused
-- decision has written nothing. The common refusal of a hold (seats taken) is
-- returned as a 409 row instead. OSRTY asks the caller to retry.
--
-- Lock order, everywhere: the per-(event, account) advisory lock -> the hold
-- row -> seat rows in seat_id order -> the order row -> payment operation
-- rows -> GA stripe rows (ga_buckets) in key order; the idempotency row is
-- inserted last, with the response. The sweeper takes hold and seat rows with
-- SKIP LOCKED and never waits for them (a GA stripe only for the length of one
-- short hold). A GA hold that locks every stripe of its tier takes expired
-- holds with SKIP LOCKED, so it waits for no hold row either.

-- Shards and the directory (docs/scaling.md). Every database has these tables; only the
-- directory fills shards and event_placement.
CREATE TABLE shard_identity (
    only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    shard_id      smallint NOT NULL CHECK (shard_id BETWEEN 1 AND 32767),
    stamped_since timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- the timeline this shard was last resumed on (onsale_shard_serving; 0008)
    timeline      bigint NOT NULL DEFAULT 1 CHECK (timeline >= 1)
);

CREATE TABLE shards (
    shard_id      smallint PRIMARY KEY CHECK (shard_id BETWEEN 1 AND 32767),
    dsn           text NOT NULL,
    state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'retired')),
    epoch         bigint NOT NULL DEFAULT 1 CHECK (epoch >= 1),
    stamped_since timestamptz NOT NULL,
    added_at      timestamptz NOT NULL DEFAULT now(),
    patroni       text[] NOT NULL DEFAULT '{}'  -- its Patroni nodes' REST APIs (0008)
);
CREATE UNIQUE INDEX shards_dsn_key ON shards (dsn);
CREATE TRIGGER shards_forward BEFORE UPDATE ON shards
    FOR EACH ROW EXECUTE FUNCTION onsale_shards_forward();

CREATE TABLE event_placement (
    event_id  bigint PRIMARY KEY REFERENCES events,
    shard_id  smallint NOT NULL REFERENCES shards,
    placed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_placement_shard_idx ON event_placement (shard_id);
CREATE TRIGGER event_placement_notify AFTER INSERT OR UPDATE OR DELETE ON event_placement
    FOR EACH ROW EXECUTE FUNCTION onsale_placement_notify();
