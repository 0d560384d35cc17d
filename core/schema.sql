-- The declared schema of core: every table, index and function as it stands
-- after all migrations, each written exactly once.
--
-- This file is a document. Production never runs it: `onsale migrate` applies
-- the numbered migrations (core/migrations/, DDL and data changes, once each)
-- and then the function files (core/sql/functions/, whenever one changes).
-- tests/integration/test_migrate.py builds one database that way and another
-- from this file, and requires the two catalogues to be equal (tables,
-- columns, constraints, indexes, triggers, function signatures and bodies).
-- Change a table: write a migration and update its declaration here. Change a
-- function: edit its file and copy the definition here.
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
    account_id      uuid NOT NULL REFERENCES accounts,
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
    order_id       uuid PRIMARY KEY DEFAULT uuidv7(),
    hold_id        uuid NOT NULL UNIQUE REFERENCES holds,
    event_id       bigint NOT NULL REFERENCES events,
    account_id     uuid NOT NULL REFERENCES accounts,
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
    operation_id        uuid PRIMARY KEY DEFAULT uuidv7(),
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
    ticket_id  uuid PRIMARY KEY DEFAULT uuidv7(),
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
-- Each is the text of core/sql/functions/<name>.sql, whose header says what
-- it does and who calls it (the rules for those files: docs/operations.md,
-- "Migrations"). There are no triggers; one would be declared here, after its
-- trigger function.
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

-- Holds: claim, release, expire (core/hold_store.py, core/sweeper.py)

-- onsale_replay: the stored response for (account, key), NULL if new.
CREATE FUNCTION onsale_replay(p_account_id uuid, p_key text, p_digest text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_prev record;
BEGIN
    SELECT k.digest, k.status_code, k.response INTO v_prev
    FROM idempotency_keys k WHERE k.account_id = p_account_id AND k.key = p_key;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_prev.digest <> p_digest THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict', DETAIL = '{}';
    END IF;
    RETURN jsonb_build_object('status_code', v_prev.status_code, 'body', v_prev.response);
END $$;

-- onsale_unavailable: a replay, or 409 seats_unavailable as an answer.
CREATE FUNCTION onsale_unavailable(
    p_account_id uuid, p_key text, p_digest text, p_taken integer[]
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_replay jsonb := onsale_replay(p_account_id, p_key, p_digest);
BEGIN
    IF v_replay IS NOT NULL THEN
        RETURN v_replay || '{"replayed": true}';
    END IF;
    RETURN jsonb_build_object(
        'status_code', 409, 'replayed', false,
        'body', jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(coalesce(p_taken, '{}'))));
END $$;

-- onsale_hold_prelude: load the event, check the request size.
CREATE FUNCTION onsale_hold_prelude(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_quantity integer,
    OUT replay jsonb, OUT ttl integer, OUT currency char(3), OUT max_tickets integer
) LANGUAGE plpgsql AS $$
DECLARE
    v_max_seats integer;
    v_onsale_at timestamptz;
BEGIN
    replay := onsale_replay(p_account_id, p_key, p_digest);
    IF replay IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT e.hold_ttl_seconds, e.currency, e.max_seats_per_hold, e.max_tickets_per_account,
           e.onsale_at
    INTO ttl, currency, v_max_seats, max_tickets, v_onsale_at
    FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    IF p_quantity < 1 OR p_quantity > v_max_seats THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('max_seats_per_hold', v_max_seats)::text;
    END IF;
END $$;

-- onsale_hold_limit: the account's advisory lock and ticket limit.
CREATE FUNCTION onsale_hold_limit(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text,
    p_quantity integer, p_max integer
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_current bigint;
    v_replay jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_account_id::text, p_event_id));
    v_replay := onsale_replay(p_account_id, p_key, p_digest);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay || '{"replayed": true}';
    END IF;
    SELECT coalesce(sum(h.seat_count), 0) INTO v_current
    FROM holds h
    WHERE h.event_id = p_event_id AND h.account_id = p_account_id
      AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
           OR (h.status = 'HELD' AND h.expires_at > now()));
    IF v_current + p_quantity > p_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', p_max, 'owned', v_current,
                                        'requested', p_quantity)::text;
    END IF;
    RETURN NULL;
END $$;

-- onsale_hold_commit: write the hold on seats the caller has locked.
CREATE FUNCTION onsale_hold_commit(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    p_ttl integer, p_currency char(3)
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_hold_id uuid := uuidv7();
    -- The full TTL from the moment of the claim, however long we waited for locks.
    v_expires timestamptz := clock_timestamp() + make_interval(secs => p_ttl);
    v_seats jsonb;
    v_amount bigint;
    v_body jsonb;
    v_inserted integer;
    v_claimed integer;
BEGIN
    -- The claim predicate again, as a second guard; a seat taken over from an
    -- expired hold is logged as reclaimed, with the state it had.
    WITH claimed AS (
        UPDATE seat_inventory si
        SET status = 'HELD', hold_id = v_hold_id, hold_expires_at = v_expires,
            order_id = NULL, version = si.version + 1
        WHERE si.event_id = p_event_id AND si.seat_id = ANY (p_seat_ids)
          AND (si.status = 'AVAILABLE' OR (si.status = 'HELD' AND si.hold_expires_at <= now()))
        RETURNING si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    ), reclaimed AS (
        INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                                   prior_expires_at, reason)
        SELECT c.prior_hold_id, p_event_id, c.seat_id, c.prior_hold_id, c.prior_status,
               c.prior_expires_at, 'reclaimed'
        FROM claimed c WHERE c.prior_hold_id IS NOT NULL
    )
    SELECT count(*) INTO v_claimed FROM claimed;
    IF v_claimed <> cardinality(p_seat_ids) THEN
        RAISE EXCEPTION 'claim guard: % of % seats claimable under lock', v_claimed,
            cardinality(p_seat_ids);
    END IF;

    SELECT jsonb_agg(jsonb_build_object(
               'seat_id', s.seat_id, 'section', s.section, 'row', s.row_label,
               'number', s.number, 'tier', pt.name, 'price_minor', pt.price_minor)
               ORDER BY s.seat_id),
           sum(pt.price_minor)
    INTO v_seats, v_amount
    FROM unnest(p_seat_ids) AS x(seat_id)
    JOIN seat_inventory si ON si.event_id = p_event_id AND si.seat_id = x.seat_id
    JOIN seats s ON s.event_id = p_event_id AND s.seat_id = x.seat_id
    JOIN price_tiers pt ON pt.event_id = p_event_id AND pt.tier_id = s.tier_id
                       AND pt.price_version = si.price_version;

    v_body := jsonb_build_object(
        'hold_id', v_hold_id, 'event_id', p_event_id, 'status', 'HELD',
        'expires_at', to_char(v_expires AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'seats', v_seats, 'amount_minor', v_amount, 'currency', p_currency);

    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id)
    VALUES (p_account_id, p_key, p_digest, 201, v_body, v_hold_id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry', DETAIL = '{}';
    END IF;

    INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids, seats,
                       seat_count, amount_minor, currency, expires_at)
    VALUES (v_hold_id, p_event_id, p_account_id, p_key, 'HELD', p_seat_ids, v_seats,
            cardinality(p_seat_ids), v_amount, p_currency, v_expires);
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (p_event_id, v_hold_id, 'hold.created', v_body);
    RETURN v_body;
END $$;

-- onsale_hold: hold exactly these seats, all or nothing.
CREATE FUNCTION onsale_hold(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_seat_ids integer[],
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_ttl integer;
    v_currency char(3);
    v_max_seats integer;
    v_max_tickets integer;
    v_onsale_at timestamptz;
    v_sorted integer[];
    v_found integer;
    v_taken integer[];
    v_prev record;
    v_replay jsonb;
    v_t0 timestamptz;
BEGIN
    lock_wait_ms := 0;
    replayed := true;
    SELECT e.hold_ttl_seconds, e.currency, e.max_seats_per_hold, e.max_tickets_per_account,
           e.onsale_at
    INTO v_ttl, v_currency, v_max_seats, v_max_tickets, v_onsale_at
    FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    IF cardinality(p_seat_ids) < 1 OR cardinality(p_seat_ids) > v_max_seats THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('max_seats_per_hold', v_max_seats)::text;
    END IF;

    -- Fail fast without locking when a seat is already taken in committed
    -- state; a seat that looks free here is still decided under the lock.
    SELECT count(*), array_agg(si.seat_id ORDER BY si.seat_id),
           array_agg(si.seat_id ORDER BY si.seat_id) FILTER (
               WHERE NOT (si.status = 'AVAILABLE'
                          OR (si.status = 'HELD' AND si.hold_expires_at <= now())))
    INTO v_found, v_sorted, v_taken
    FROM seat_inventory si
    WHERE si.event_id = p_event_id AND si.seat_id = ANY (p_seat_ids);
    IF v_found <> cardinality(p_seat_ids) THEN
        IF cardinality(p_seat_ids) <> (SELECT count(DISTINCT x) FROM unnest(p_seat_ids) AS x) THEN
            RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
                DETAIL = '{"reason": "duplicate"}';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_seats',
            DETAIL = jsonb_build_object('unknown_seat_ids', (
                SELECT jsonb_agg(x ORDER BY x) FROM unnest(p_seat_ids) AS x
                WHERE NOT EXISTS (SELECT 1 FROM seat_inventory si
                                  WHERE si.event_id = p_event_id AND si.seat_id = x)))::text;
    END IF;
    IF v_taken IS NOT NULL THEN
        SELECT k.digest, k.status_code, k.response INTO v_prev
        FROM idempotency_keys k WHERE k.account_id = p_account_id AND k.key = p_key;
        IF FOUND THEN
            IF v_prev.digest <> p_digest THEN
                RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict',
                    DETAIL = '{}';
            END IF;
            status_code := v_prev.status_code;
            body := v_prev.response;
            RETURN;
        END IF;
        status_code := 409;
        replayed := false;
        body := jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(v_taken));
        RETURN;
    END IF;

    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest,
                                  cardinality(v_sorted), v_max_tickets);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        RETURN;
    END IF;

    -- Lock the requested rows in seat_id order (the sort runs below the lock).
    v_t0 := clock_timestamp();
    SELECT array_agg(l.seat_id ORDER BY l.seat_id) FILTER (
               WHERE NOT (l.status = 'AVAILABLE'
                          OR (l.status = 'HELD' AND l.hold_expires_at <= now())))
    INTO v_taken
    FROM (SELECT si.seat_id, si.status, si.hold_expires_at
          FROM seat_inventory si
          WHERE si.event_id = p_event_id AND si.seat_id = ANY (v_sorted)
          ORDER BY si.seat_id
          FOR UPDATE) AS l;
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;

    IF v_taken IS NOT NULL THEN
        -- Under the advisory lock onsale_hold_limit found no replay, and a twin
        -- with our key needs that lock to commit: a plain 409.
        status_code := 409;
        replayed := false;
        body := jsonb_build_object('code', 'seats_unavailable',
                                   'unavailable_seat_ids', to_jsonb(v_taken));
        RETURN;
    END IF;

    body := onsale_hold_commit(p_event_id, p_account_id, p_key, p_digest, v_sorted,
                               v_ttl, v_currency);
    status_code := 201;
    replayed := false;
END $$;

-- onsale_hold_best: hold the n best available seats.
CREATE FUNCTION onsale_hold_best(
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

-- onsale_release: release a hold by its owner.
CREATE FUNCTION onsale_release(p_hold_id uuid, p_account_id uuid)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_hold record;
BEGIN
    SELECT h.hold_id, h.event_id, h.status, h.seat_ids,
           CASE WHEN h.expires_at <= now() THEN 'expired' ELSE 'released' END AS outcome
    INTO v_hold
    FROM holds h WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    IF v_hold.status IN ('PAYMENT_PENDING', 'CONFIRMED') THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_not_releasable',
            DETAIL = jsonb_build_object('status', v_hold.status)::text;
    END IF;
    IF v_hold.status <> 'HELD' THEN
        RETURN p_hold_id;
    END IF;

    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;

    WITH released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD'
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           v_hold.outcome
    FROM released r;

    PERFORM onsale_ga_move(ARRAY[p_hold_id], 'HELD', 'RETURNED', v_hold.outcome);

    -- A hold whose deadline already passed ends as EXPIRED, whether its owner
    -- or the sweeper gets to it first.
    UPDATE holds SET status = upper(v_hold.outcome), updated_at = now()
    WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || v_hold.outcome,
            jsonb_build_object('hold_id', p_hold_id));
    RETURN p_hold_id;
END $$;

-- onsale_sweep: release one batch of expired holds.
CREATE FUNCTION onsale_sweep(p_batch integer, OUT holds_expired integer, OUT seats_released integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_due uuid[];
BEGIN
    SELECT coalesce(array_agg(d.hold_id), '{}') INTO v_due
    FROM (SELECT h.hold_id FROM holds h
          WHERE h.status = 'HELD' AND h.expires_at <= now()
          ORDER BY h.expires_at
          LIMIT p_batch
          FOR UPDATE SKIP LOCKED) AS d;

    WITH locked AS (
        SELECT si.event_id, si.seat_id, d.hold_id
        FROM holds d
        JOIN seat_inventory si ON si.event_id = d.event_id AND si.seat_id = ANY (d.seat_ids)
        WHERE d.hold_id = ANY (v_due)
          AND si.hold_id = d.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.event_id, si.seat_id
        FOR UPDATE OF si SKIP LOCKED
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = l.hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING l.hold_id, si.event_id, si.seat_id, old.hold_id AS prior_hold_id,
                  old.status AS prior_status, old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT r.hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS seats_released = ROW_COUNT;
    seats_released := seats_released + onsale_ga_move(
        ARRAY(SELECT h.hold_id FROM holds h
              WHERE h.hold_id = ANY (v_due) AND h.ga_tier_id IS NOT NULL),
        'HELD', 'RETURNED', 'expired');

    -- A hold is finished once none of its seats is still held under its id
    -- (a seat re-claimed lazily by a newer hold no longer carries it).
    WITH done AS (
        UPDATE holds h SET status = 'EXPIRED', updated_at = now()
        WHERE h.hold_id = ANY (v_due) AND h.status = 'HELD'
          AND NOT EXISTS (SELECT 1 FROM seat_inventory si
                          WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
                            AND si.hold_id = h.hold_id AND si.status = 'HELD')
        RETURNING h.hold_id, h.event_id
    ), ob AS (
        INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
        SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
        FROM done
    )
    SELECT count(*) INTO holds_expired FROM done;
END $$;

-- onsale_expire_hold: release one expired hold by id.
CREATE FUNCTION onsale_expire_hold(p_hold_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
BEGIN
    -- The documented lock order: the hold row before its seats.
    PERFORM 1 FROM holds WHERE hold_id = p_hold_id FOR UPDATE;
    WITH h AS (SELECT event_id, seat_ids FROM holds WHERE hold_id = p_hold_id),
    locked AS (
        SELECT si.event_id, si.seat_id FROM seat_inventory si, h
        WHERE si.event_id = h.event_id AND si.seat_id = ANY (h.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        ORDER BY si.seat_id
        FOR UPDATE OF si
    ), released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, version = si.version + 1
        FROM locked l
        WHERE si.event_id = l.event_id AND si.seat_id = l.seat_id
          AND si.hold_id = p_hold_id AND si.status = 'HELD' AND si.hold_expires_at <= now()
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id, old.status AS prior_status,
                  old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status, r.prior_expires_at,
           'expired'
    FROM released r;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF EXISTS (SELECT 1 FROM holds WHERE hold_id = p_hold_id AND ga_tier_id IS NOT NULL
                                     AND status = 'HELD' AND expires_at <= now()) THEN
        v_n := v_n + onsale_ga_move(ARRAY[p_hold_id], 'HELD', 'RETURNED', 'expired');
    END IF;
    WITH done AS (
        UPDATE holds SET status = 'EXPIRED', updated_at = now()
        WHERE hold_id = p_hold_id AND status = 'HELD' AND expires_at <= now()
        RETURNING hold_id, event_id
    )
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
    FROM done;
    RETURN v_n;
END $$;

-- General admission: GA holds, their places, the quota plane (core/hold_store.py,
-- core/ga_quota.py, docs/general-admission.md)

-- onsale_ga_short: the 409 body of a GA hold attempt that found too few
CREATE FUNCTION onsale_ga_short(p_left integer, p_quantity integer)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
        'code', CASE WHEN p_left <= 0 THEN 'sold_out' ELSE 'insufficient_quantity' END,
        'available', greatest(p_left, 0), 'requested', p_quantity)
$$;

-- onsale_ga_move: move the places of these GA holds that are counted as
CREATE FUNCTION onsale_ga_move(p_hold_ids uuid[], p_from text, p_to text,
                                          p_reason text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
BEGIN
    IF NOT (p_from IN ('HELD', 'SOLD') AND p_to IN ('SOLD', 'RETURNED') AND p_from <> p_to) THEN
        RAISE EXCEPTION 'onsale_ga_move: % to % is not a move', p_from, p_to;
    END IF;
    PERFORM 1 FROM ga_buckets b
    WHERE (b.event_id, b.tier_id, b.stripe) IN (
        SELECT p.event_id, p.tier_id, p.stripe FROM ga_hold_places p
        WHERE p.hold_id = ANY (p_hold_ids) AND p.status = p_from)
    ORDER BY b.event_id, b.tier_id, b.stripe
    FOR UPDATE OF b;
    WITH moved AS (
        UPDATE ga_hold_places p SET status = p_to
        FROM holds h
        WHERE p.hold_id = ANY (p_hold_ids) AND p.status = p_from AND h.hold_id = p.hold_id
        RETURNING p.hold_id, p.event_id, p.tier_id, p.stripe, p.quantity,
                  h.status AS hold_status, h.expires_at
    ), per_stripe AS (
        SELECT m.event_id, m.tier_id, m.stripe, sum(m.quantity)::integer AS q
        FROM moved m GROUP BY m.event_id, m.tier_id, m.stripe
    ), counted AS (
        UPDATE ga_buckets b
        SET available = b.available + CASE WHEN p_to = 'RETURNED' THEN s.q ELSE 0 END,
            held = b.held - CASE WHEN p_from = 'HELD' THEN s.q ELSE 0 END,
            sold = b.sold + CASE WHEN p_to = 'SOLD' THEN s.q ELSE 0 END
                          - CASE WHEN p_from = 'SOLD' THEN s.q ELSE 0 END,
            version = b.version + 1
        FROM per_stripe s
        WHERE b.event_id = s.event_id AND b.tier_id = s.tier_id AND b.stripe = s.stripe
    ), logged AS (
        INSERT INTO ga_releases (hold_id, event_id, tier_id, stripe, quantity, prior_status,
                                 prior_hold_status, prior_expires_at, reason)
        SELECT m.hold_id, m.event_id, m.tier_id, m.stripe, m.quantity, p_from, m.hold_status,
               m.expires_at, p_reason
        FROM moved m WHERE p_to = 'RETURNED'
    )
    SELECT coalesce(sum(m.quantity), 0) INTO v_n FROM moved m;
    RETURN v_n;
END $$;

-- onsale_ga_expire_due: end up to p_limit expired GA holds of one tier and
CREATE FUNCTION onsale_ga_expire_due(p_event_id bigint, p_tier_id smallint,
                                                p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_due uuid[];
    v_n integer;
BEGIN
    SELECT coalesce(array_agg(d.hold_id), '{}') INTO v_due
    FROM (SELECT h.hold_id FROM holds h
          WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
            AND h.status = 'HELD' AND h.expires_at <= now()
          ORDER BY h.expires_at
          LIMIT p_limit
          FOR UPDATE SKIP LOCKED) AS d;
    IF cardinality(v_due) = 0 THEN
        RETURN 0;
    END IF;
    v_n := onsale_ga_move(v_due, 'HELD', 'RETURNED', 'expired');
    WITH done AS (
        UPDATE holds SET status = 'EXPIRED', updated_at = now()
        WHERE hold_id = ANY (v_due) AND status = 'HELD' AND expires_at <= now()
        RETURNING hold_id, event_id
    )
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    SELECT done.event_id, done.hold_id, 'hold.expired', jsonb_build_object('hold_id', done.hold_id)
    FROM done;
    RETURN v_n;
END $$;

-- onsale_ga_take: take p_quantity places of a GA tier for a new hold, all or
CREATE FUNCTION onsale_ga_take(
    p_event_id bigint, p_tier_id smallint, p_hold_id uuid, p_quantity integer,
    p_stripes smallint, p_spread boolean, OUT taken jsonb, OUT remaining integer,
    OUT spread boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_first smallint := ((hashtextextended(p_hold_id::text, p_tier_id) & 9223372036854775807)
                         % p_stripes)::smallint;
    v_need integer := p_quantity;
    v_take integer;
    v_row record;
    v_locked smallint[];
BEGIN
    IF NOT p_spread THEN
        UPDATE ga_buckets b
        SET available = b.available - p_quantity, held = b.held + p_quantity,
            version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_first
          AND b.available >= p_quantity;
        IF NOT FOUND THEN
            spread := true;
            RETURN;
        END IF;
        taken := jsonb_build_array(jsonb_build_object('stripe', v_first, 'quantity', p_quantity));
        RETURN;
    END IF;

    -- Only the stripes locked here are counted and taken from: one added meanwhile
    -- (the tier given more stripes) is not ours to take from in this transaction.
    SELECT array_agg(l.stripe ORDER BY l.stripe) INTO v_locked
    FROM (SELECT b.stripe FROM ga_buckets b
          WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
          ORDER BY b.stripe FOR UPDATE) AS l;
    SELECT coalesce(sum(b.available), 0) INTO remaining
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
                        AND b.stripe = ANY (v_locked);
    IF remaining < p_quantity THEN
        PERFORM onsale_ga_expire_due(p_event_id, p_tier_id, 100);
        SELECT coalesce(sum(b.available), 0) INTO remaining
        FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
                            AND b.stripe = ANY (v_locked);
        IF remaining < p_quantity THEN
            RETURN;
        END IF;
    END IF;
    taken := '[]';
    -- Active stripes (below p_stripes) from the hashed one round, then retired ones.
    FOR v_row IN
        SELECT b.stripe, b.available FROM ga_buckets b
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.available > 0
          AND b.stripe = ANY (v_locked)
        ORDER BY b.stripe >= p_stripes, (b.stripe - v_first + 1000) % 1000
    LOOP
        EXIT WHEN v_need = 0;
        v_take := least(v_need, v_row.available);
        UPDATE ga_buckets b
        SET available = b.available - v_take, held = b.held + v_take, version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_row.stripe;
        taken := taken || jsonb_build_object('stripe', v_row.stripe, 'quantity', v_take);
        v_need := v_need - v_take;
    END LOOP;
    IF v_need > 0 THEN  -- cannot happen with every counted stripe locked: a guard
        RAISE EXCEPTION 'ga take guard: % of % places taken', p_quantity - v_need, p_quantity;
    END IF;
    remaining := NULL;
END $$;

-- onsale_ga_hold: hold p_quantity places of a GA tier, all or nothing, in one
CREATE FUNCTION onsale_ga_hold(
    p_event_id bigint, p_account_id uuid, p_key text, p_digest text, p_tier_id smallint,
    p_quantity integer, p_spread boolean,
    OUT status_code integer, OUT body jsonb, OUT lock_wait_ms double precision,
    OUT replayed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    v_event record;
    v_tier record;
    v_left bigint;
    v_replay jsonb;
    v_owned bigint;
    v_take record;
    v_t0 timestamptz;
    v_hold_id uuid := uuidv7();
    v_expires timestamptz;
    v_line jsonb;
    v_inserted integer;
BEGIN
    lock_wait_ms := 0;
    replayed := true;
    SELECT e.hold_ttl_seconds, e.currency, e.max_tickets_per_account, e.onsale_at
    INTO v_event FROM events e WHERE e.event_id = p_event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'event_not_found', DETAIL = '{}';
    END IF;
    IF now() < v_event.onsale_at THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'sale_not_open',
            DETAIL = jsonb_build_object('onsale_at', to_char(v_event.onsale_at AT TIME ZONE 'UTC',
                                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text;
    END IF;
    SELECT t.name, t.price_minor, t.max_per_hold, t.max_per_account, t.stripes INTO v_tier
    FROM ga_tiers t WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'ga_tier_not_found',
            DETAIL = jsonb_build_object('tier_id', p_tier_id)::text;
    END IF;
    IF p_quantity < 1 OR p_quantity > v_tier.max_per_hold THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_quantity',
            DETAIL = jsonb_build_object('max_per_hold', v_tier.max_per_hold)::text;
    END IF;

    -- Fail fast without locking: too few places in committed state, and no
    -- expired hold of the tier whose places are about to come back.
    SELECT coalesce(sum(b.available), 0) INTO v_left
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    IF v_left < p_quantity AND NOT EXISTS (
            SELECT 1 FROM holds h
            WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
              AND h.status = 'HELD' AND h.expires_at <= now()) THEN
        v_replay := onsale_replay(p_account_id, p_key, p_digest);
        IF v_replay IS NOT NULL THEN
            status_code := (v_replay ->> 'status_code')::integer;
            body := v_replay -> 'body';
            RETURN;
        END IF;
        status_code := 409;
        replayed := false;
        body := onsale_ga_short(v_left::integer, p_quantity);
        RETURN;
    END IF;

    v_replay := onsale_hold_limit(p_event_id, p_account_id, p_key, p_digest, p_quantity,
                                  v_event.max_tickets_per_account);
    IF v_replay IS NOT NULL THEN
        status_code := (v_replay ->> 'status_code')::integer;
        body := v_replay -> 'body';
        RETURN;
    END IF;
    IF v_tier.max_per_account IS NOT NULL THEN
        SELECT coalesce(sum(h.seat_count), 0) INTO v_owned FROM holds h
        WHERE h.event_id = p_event_id AND h.account_id = p_account_id
          AND h.ga_tier_id = p_tier_id
          AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
               OR (h.status = 'HELD' AND h.expires_at > now()));
        IF v_owned + p_quantity > v_tier.max_per_account THEN
            RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
                DETAIL = jsonb_build_object('limit', v_tier.max_per_account, 'owned', v_owned,
                                            'requested', p_quantity,
                                            'tier_id', p_tier_id)::text;
        END IF;
    END IF;

    v_t0 := clock_timestamp();
    SELECT * INTO v_take
    FROM onsale_ga_take(p_event_id, p_tier_id, v_hold_id, p_quantity, v_tier.stripes,
                        p_spread);
    lock_wait_ms := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
    replayed := false;
    IF v_take.spread THEN
        status_code := 0;
        RETURN;
    END IF;
    IF v_take.taken IS NULL THEN
        -- Under the advisory lock onsale_hold_limit found no replay: a plain 409.
        status_code := 409;
        body := onsale_ga_short(v_take.remaining, p_quantity);
        RETURN;
    END IF;

    -- The full TTL from the moment of the claim, however long we waited for locks.
    v_expires := clock_timestamp() + make_interval(secs => v_event.hold_ttl_seconds);
    v_line := jsonb_build_object('tier_id', p_tier_id, 'name', v_tier.name,
                                 'quantity', p_quantity, 'price_minor', v_tier.price_minor);
    body := jsonb_build_object(
        'hold_id', v_hold_id, 'event_id', p_event_id, 'status', 'HELD',
        'expires_at', to_char(v_expires AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'seats', '[]'::jsonb, 'ga', v_line,
        'amount_minor', p_quantity * v_tier.price_minor, 'currency', v_event.currency);
    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id)
    VALUES (p_account_id, p_key, p_digest, 201, body, v_hold_id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry', DETAIL = '{}';
    END IF;
    INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids, seats,
                       seat_count, amount_minor, currency, expires_at, ga_tier_id, ga)
    VALUES (v_hold_id, p_event_id, p_account_id, p_key, 'HELD', '{}', '[]', p_quantity,
            p_quantity * v_tier.price_minor, v_event.currency, v_expires, p_tier_id, v_line);
    INSERT INTO ga_hold_places (hold_id, event_id, tier_id, stripe, quantity)
    SELECT v_hold_id, p_event_id, p_tier_id, (x ->> 'stripe')::smallint,
           (x ->> 'quantity')::integer
    FROM jsonb_array_elements(v_take.taken) AS x;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (p_event_id, v_hold_id, 'hold.created', body);
    status_code := 201;
END $$;

-- onsale_ga_hold_batch: several GA hold requests for one tier in one
CREATE FUNCTION onsale_ga_hold_batch(
    p_event_id bigint, p_tier_id smallint, p_accounts uuid[], p_keys text[],
    p_digests text[], p_quantities integer[]
) RETURNS TABLE (i integer, status_code integer, body jsonb, lock_wait_ms double precision,
                 replayed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_n integer := cardinality(p_accounts);
    v_event record;
    v_tier record;
    v_status integer[] := array_fill(NULL::integer, ARRAY[v_n]);
    v_body jsonb[] := array_fill(NULL::jsonb, ARRAY[v_n]);
    v_replayed boolean[] := array_fill(false, ARRAY[v_n]);
    v_hold uuid[] := array_fill(NULL::uuid, ARRAY[v_n]);
    v_want boolean[] := array_fill(false, ARRAY[v_n]);
    v_seen uuid[] := '{}';
    v_lock bigint;
    v_prev record;
    v_owned bigint;
    v_stripe smallint;
    v_avail integer;
    v_taken integer := 0;
    v_t0 timestamptz;
    v_wait double precision := 0;
    v_expires timestamptz;
    v_line jsonb;
    v_inserted integer;
    v_made integer := 0;
    v_open boolean := false;
    v_left bigint;
    v_short boolean[] := array_fill(false, ARRAY[v_n]);
BEGIN
    SELECT e.hold_ttl_seconds, e.currency, e.max_tickets_per_account, e.onsale_at
    INTO v_event FROM events e WHERE e.event_id = p_event_id;
    IF FOUND AND now() >= v_event.onsale_at THEN
        SELECT t.name, t.price_minor, t.max_per_hold, t.max_per_account, t.stripes
        INTO v_tier FROM ga_tiers t WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id;
        v_open := FOUND;
    END IF;
    IF NOT v_open THEN  -- no such event or tier, or not on sale: each alone
        RETURN QUERY SELECT g, NULL::integer, NULL::jsonb, 0::double precision, false
                     FROM generate_series(1, v_n) AS g;
        RETURN;
    END IF;

    -- Fail fast, as onsale_ga_hold: too few places in committed state, and no
    -- expired hold of the tier whose places are about to come back.
    SELECT coalesce(sum(b.available), 0) INTO v_left
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    IF EXISTS (SELECT 1 FROM unnest(p_quantities) AS q WHERE q > v_left) AND NOT EXISTS (
            SELECT 1 FROM holds h
            WHERE h.event_id = p_event_id AND h.ga_tier_id = p_tier_id
              AND h.status = 'HELD' AND h.expires_at <= now()) THEN
        FOR k IN 1 .. v_n LOOP
            CONTINUE WHEN p_quantities[k] <= v_left OR p_quantities[k] < 1
                       OR p_quantities[k] > v_tier.max_per_hold;
            v_short[k] := true;
            SELECT ik.digest, ik.status_code, ik.response INTO v_prev
            FROM idempotency_keys ik
            WHERE ik.account_id = p_accounts[k] AND ik.key = p_keys[k];
            IF NOT FOUND THEN
                v_status[k] := 409;
                v_body[k] := onsale_ga_short(v_left::integer, p_quantities[k]);
            ELSIF v_prev.digest = p_digests[k] THEN
                v_status[k] := v_prev.status_code;
                v_body[k] := v_prev.response;
                v_replayed[k] := true;
            END IF;  -- else NULL: onsale_ga_hold raises idempotency_conflict
        END LOOP;
    END IF;

    FOR v_lock IN SELECT DISTINCT hashtextextended(p_accounts[k]::text, p_event_id)
                  FROM generate_subscripts(p_accounts, 1) AS k WHERE NOT v_short[k]
                  ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(v_lock);
    END LOOP;

    FOR k IN 1 .. v_n LOOP
        CONTINUE WHEN v_short[k] OR p_quantities[k] < 1
                   OR p_quantities[k] > v_tier.max_per_hold OR p_accounts[k] = ANY (v_seen);
        v_seen := v_seen || p_accounts[k];
        SELECT ik.digest, ik.status_code, ik.response INTO v_prev
        FROM idempotency_keys ik WHERE ik.account_id = p_accounts[k] AND ik.key = p_keys[k];
        IF FOUND THEN
            IF v_prev.digest = p_digests[k] THEN
                v_status[k] := v_prev.status_code;
                v_body[k] := v_prev.response;
                v_replayed[k] := true;
            END IF;  -- else NULL: onsale_ga_hold raises idempotency_conflict
            CONTINUE;
        END IF;
        -- A hold made under this key whose key record has expired: alone, to get
        -- its idempotency_conflict (the hold's insert would fail the whole batch).
        CONTINUE WHEN EXISTS (SELECT 1 FROM holds h WHERE h.account_id = p_accounts[k]
                                                      AND h.idempotency_key = p_keys[k]);
        SELECT coalesce(sum(h.seat_count), 0) INTO v_owned
        FROM holds h
        WHERE h.event_id = p_event_id AND h.account_id = p_accounts[k]
          AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
               OR (h.status = 'HELD' AND h.expires_at > now()));
        IF v_owned + p_quantities[k] > v_event.max_tickets_per_account THEN
            v_status[k] := 409;
            v_body[k] := jsonb_build_object('code', 'ticket_limit_exceeded',
                                            'limit', v_event.max_tickets_per_account,
                                            'owned', v_owned, 'requested', p_quantities[k]);
            CONTINUE;
        END IF;
        IF v_tier.max_per_account IS NOT NULL THEN
            SELECT coalesce(sum(h.seat_count), 0) INTO v_owned FROM holds h
            WHERE h.event_id = p_event_id AND h.account_id = p_accounts[k]
              AND h.ga_tier_id = p_tier_id
              AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
                   OR (h.status = 'HELD' AND h.expires_at > now()));
            IF v_owned + p_quantities[k] > v_tier.max_per_account THEN
                v_status[k] := 409;
                v_body[k] := jsonb_build_object('code', 'ticket_limit_exceeded',
                                                'limit', v_tier.max_per_account,
                                                'owned', v_owned,
                                                'requested', p_quantities[k],
                                                'tier_id', p_tier_id);
                CONTINUE;
            END IF;
        END IF;
        v_want[k] := true;
        v_hold[k] := uuidv7();
    END LOOP;

    IF true = ANY (v_want) THEN
        SELECT ((hashtextextended(h::text, p_tier_id) & 9223372036854775807)
                % v_tier.stripes)::smallint
        INTO v_stripe FROM unnest(v_hold) AS h WHERE h IS NOT NULL LIMIT 1;
        v_t0 := clock_timestamp();
        SELECT b.available INTO v_avail FROM ga_buckets b
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_stripe
        FOR UPDATE;
        v_avail := coalesce(v_avail, 0);  -- no such stripe row: nothing fits, all spread
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        v_expires := clock_timestamp() + make_interval(secs => v_event.hold_ttl_seconds);
        FOR k IN 1 .. v_n LOOP
            CONTINUE WHEN NOT v_want[k];
            IF p_quantities[k] > v_avail - v_taken THEN
                v_want[k] := false;
                v_hold[k] := NULL;
                v_status[k] := 0;  -- too few here: the spread stage, alone
                CONTINUE;
            END IF;
            v_taken := v_taken + p_quantities[k];
            v_line := jsonb_build_object('tier_id', p_tier_id, 'name', v_tier.name,
                                         'quantity', p_quantities[k],
                                         'price_minor', v_tier.price_minor);
            v_status[k] := 201;
            v_body[k] := jsonb_build_object(
                'hold_id', v_hold[k], 'event_id', p_event_id, 'status', 'HELD',
                'expires_at', to_char(v_expires AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'seats', '[]'::jsonb, 'ga', v_line,
                'amount_minor', p_quantities[k] * v_tier.price_minor,
                'currency', v_event.currency);
            v_made := v_made + 1;
        END LOOP;
    END IF;

    IF v_made > 0 THEN
        UPDATE ga_buckets b
        SET available = b.available - v_taken, held = b.held + v_taken,
            version = b.version + 1
        WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = v_stripe;
        INSERT INTO idempotency_keys (account_id, key, digest, status_code, response,
                                      resource_id)
        SELECT p_accounts[k], p_keys[k], p_digests[k], 201, v_body[k], v_hold[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY p_accounts[k], p_keys[k]
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_inserted = ROW_COUNT;
        IF v_inserted <> v_made THEN  -- a twin got in first: every element alone
            RAISE EXCEPTION USING ERRCODE = 'OSRTY', MESSAGE = 'idempotency_retry',
                DETAIL = '{}';
        END IF;
        INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status, seat_ids,
                           seats, seat_count, amount_minor, currency, expires_at, ga_tier_id,
                           ga)
        SELECT v_hold[k], p_event_id, p_accounts[k], p_keys[k], 'HELD', '{}', '[]',
               p_quantities[k], p_quantities[k] * v_tier.price_minor, v_event.currency,
               v_expires, p_tier_id, v_body[k] -> 'ga'
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY p_accounts[k], p_keys[k];
        INSERT INTO ga_hold_places (hold_id, event_id, tier_id, stripe, quantity)
        SELECT v_hold[k], p_event_id, p_tier_id, v_stripe, p_quantities[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k];
        INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
        SELECT p_event_id, v_hold[k], 'hold.created', v_body[k]
        FROM generate_subscripts(v_hold, 1) AS k WHERE v_want[k]
        ORDER BY k;
    END IF;

    RETURN QUERY SELECT k, v_status[k], v_body[k],
                        CASE WHEN v_status[k] = 201 AND NOT v_replayed[k] THEN v_wait
                             ELSE 0 END,
                        v_replayed[k]
                 FROM generate_subscripts(p_accounts, 1) AS k;
END $$;

-- onsale_ga_rebalance: move available places between the stripes of one GA
CREATE FUNCTION onsale_ga_rebalance(
    p_event_id bigint, p_tier_id smallint, p_stripes smallint[], p_deltas integer[],
    p_reason text, p_lock_timeout_ms integer
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_timeout text := current_setting('lock_timeout');
    v_before jsonb;
    v_after jsonb;
    v_moved integer;
BEGIN
    IF cardinality(p_stripes) <> cardinality(p_deltas)
       OR (SELECT coalesce(sum(d), 0) FROM unnest(p_deltas) AS d) <> 0
       OR (SELECT count(DISTINCT s) FROM unnest(p_stripes) AS s) <> cardinality(p_stripes) THEN
        RAISE EXCEPTION 'onsale_ga_rebalance: deltas must pair with distinct stripes and sum to zero';
    END IF;
    PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
    PERFORM 1 FROM ga_buckets b
    WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id
    ORDER BY b.stripe FOR UPDATE;
    PERFORM set_config('lock_timeout', v_timeout, true);
    IF EXISTS (SELECT 1 FROM unnest(p_stripes, p_deltas) AS d(stripe, delta)
               LEFT JOIN ga_buckets b ON b.event_id = p_event_id AND b.tier_id = p_tier_id
                                     AND b.stripe = d.stripe
               WHERE b.stripe IS NULL OR b.available + d.delta < 0) THEN
        RETURN -1;
    END IF;
    SELECT jsonb_object_agg(b.stripe, b.available ORDER BY b.stripe) INTO v_before
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    UPDATE ga_buckets b SET available = b.available + d.delta, version = b.version + 1
    FROM unnest(p_stripes, p_deltas) AS d(stripe, delta)
    WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id AND b.stripe = d.stripe
      AND d.delta <> 0;
    SELECT jsonb_object_agg(b.stripe, b.available ORDER BY b.stripe) INTO v_after
    FROM ga_buckets b WHERE b.event_id = p_event_id AND b.tier_id = p_tier_id;
    SELECT coalesce(sum(d), 0) INTO v_moved FROM unnest(p_deltas) AS d WHERE d > 0;
    IF v_moved > 0 THEN
        INSERT INTO ga_rebalances (event_id, tier_id, moved, before, after, reason)
        VALUES (p_event_id, p_tier_id, v_moved, v_before, v_after, p_reason);
    END IF;
    RETURN v_moved;
END $$;

-- onsale_ga_set_stripes: give a GA tier p_n active stripes (0 .. p_n - 1),
CREATE FUNCTION onsale_ga_set_stripes(p_event_id bigint, p_tier_id smallint,
                                                 p_n smallint)
RETURNS smallint LANGUAGE plpgsql AS $$
DECLARE
    v_old smallint;
BEGIN
    IF p_n < 1 OR p_n > 64 THEN
        RAISE EXCEPTION USING ERRCODE = 'OS400', MESSAGE = 'invalid_request',
            DETAIL = '{"reason": "stripes must be from 1 to 64"}';
    END IF;
    SELECT t.stripes INTO v_old FROM ga_tiers t
    WHERE t.event_id = p_event_id AND t.tier_id = p_tier_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'ga_tier_not_found',
            DETAIL = jsonb_build_object('tier_id', p_tier_id)::text;
    END IF;
    INSERT INTO ga_buckets (event_id, tier_id, stripe, available)
    SELECT p_event_id, p_tier_id, s, 0 FROM generate_series(0, p_n - 1) AS s
    WHERE NOT EXISTS (SELECT 1 FROM ga_buckets b WHERE b.event_id = p_event_id
                                                  AND b.tier_id = p_tier_id AND b.stripe = s)
    ON CONFLICT (event_id, tier_id, stripe) DO NOTHING;
    UPDATE ga_tiers SET stripes = p_n WHERE event_id = p_event_id AND tier_id = p_tier_id;
    RETURN v_old;
END $$;

-- Checkout and payments (core/payments.py, core/reconciler.py, docs/payments.md)

-- onsale_release_paid_hold: free the seats of a hold in payment or sold.
CREATE FUNCTION onsale_release_paid_hold(p_hold_id uuid, p_from text, p_reason text,
                                         p_hold_status text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_hold record;
    v_n integer;
BEGIN
    SELECT h.event_id, h.seat_ids INTO v_hold FROM holds h WHERE h.hold_id = p_hold_id;
    PERFORM 1 FROM seat_inventory si
    WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
    ORDER BY si.seat_id FOR UPDATE;
    WITH released AS (
        UPDATE seat_inventory si
        SET status = 'AVAILABLE', hold_id = NULL, hold_expires_at = NULL, order_id = NULL,
            version = si.version + 1
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
          AND si.hold_id = p_hold_id AND si.status = p_from
        RETURNING si.event_id, si.seat_id, old.hold_id AS prior_hold_id,
                  old.status AS prior_status, old.hold_expires_at AS prior_expires_at
    )
    INSERT INTO hold_releases (hold_id, event_id, seat_id, prior_hold_id, prior_status,
                               prior_expires_at, reason)
    SELECT p_hold_id, r.event_id, r.seat_id, r.prior_hold_id, r.prior_status,
           r.prior_expires_at, p_reason
    FROM released r;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_n := v_n + onsale_ga_move(ARRAY[p_hold_id],
                                CASE WHEN p_from = 'SOLD' THEN 'SOLD' ELSE 'HELD' END,
                                'RETURNED', p_reason);
    UPDATE holds SET status = p_hold_status, updated_at = now() WHERE hold_id = p_hold_id;
    INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
    VALUES (v_hold.event_id, p_hold_id, 'hold.' || lower(p_hold_status),
            jsonb_build_object('hold_id', p_hold_id, 'reason', p_reason));
    RETURN v_n;
END $$;

-- onsale_checkout_begin: step 1: order, AUTHORIZE operation, PAYMENT_PENDING.
CREATE FUNCTION onsale_checkout_begin(
    p_hold_id uuid, p_account_id uuid, p_key text, p_digest text, p_payment_method text,
    p_grace_seconds integer, p_min_remaining_seconds integer, p_first_check_seconds integer,
    OUT order_id uuid, OUT operation_id uuid, OUT replayed boolean,
    OUT amount_minor bigint, OUT currency char(3)
) LANGUAGE plpgsql AS $$
DECLARE
    v_event bigint;
    v_hold record;
    v_prev record;
    v_order record;
    v_max integer;
    v_owned bigint;
    v_ok integer;
    v_amount bigint;
    v_grace timestamptz;
BEGIN
    replayed := false;
    SELECT h.event_id INTO v_event FROM holds h
    WHERE h.hold_id = p_hold_id AND h.account_id = p_account_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'hold_not_found', DETAIL = '{}';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_account_id::text, v_event));

    -- Under the lock a twin with our key has either committed or not begun.
    SELECT k.digest, k.response INTO v_prev FROM idempotency_keys k
    WHERE k.account_id = p_account_id AND k.key = p_key;
    IF FOUND THEN
        IF v_prev.digest <> p_digest THEN
            RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'idempotency_conflict',
                DETAIL = '{}';
        END IF;
        order_id := (v_prev.response ->> 'order_id')::uuid;
        operation_id := (v_prev.response ->> 'operation_id')::uuid;
        SELECT o.amount_minor, o.currency INTO amount_minor, currency
        FROM orders o WHERE o.order_id = (v_prev.response ->> 'order_id')::uuid;
        replayed := true;
        RETURN;
    END IF;

    SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = p_hold_id FOR UPDATE;
    SELECT o.order_id, o.status INTO v_order FROM orders o WHERE o.hold_id = p_hold_id;
    IF v_hold.status = 'CONFIRMED' THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_checked_out',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    IF v_hold.status = 'PAYMENT_PENDING' THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'checkout_in_progress',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    IF v_hold.status <> 'HELD' OR v_hold.expires_at <= now() THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('hold_status', CASE WHEN v_hold.status = 'HELD'
                                                       THEN 'EXPIRED' ELSE v_hold.status END)::text;
    END IF;
    -- Too little time left to pay: refuse to start an authorization rather
    -- than extend the hold (follow-up 2).
    IF v_hold.expires_at - now() < make_interval(secs => p_min_remaining_seconds) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expiring',
            DETAIL = jsonb_build_object(
                'expires_at', to_char(v_hold.expires_at AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'min_remaining_seconds', p_min_remaining_seconds)::text;
    END IF;

    SELECT e.max_tickets_per_account INTO v_max FROM events e WHERE e.event_id = v_event;
    SELECT coalesce(sum(h.seat_count), 0) INTO v_owned FROM holds h
    WHERE h.event_id = v_event AND h.account_id = p_account_id
      AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
           OR (h.status = 'HELD' AND h.expires_at > now()));
    IF v_owned > v_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', v_max, 'owned', v_owned, 'requested', 0)::text;
    END IF;

    IF v_hold.ga_tier_id IS NOT NULL THEN
        -- The places (moved only under the hold's row lock, which we hold).
        SELECT coalesce(sum(p.quantity), 0) INTO v_ok FROM ga_hold_places p
        WHERE p.hold_id = p_hold_id AND p.status = 'HELD';
        SELECT v_ok * t.price_minor INTO v_amount FROM ga_tiers t
        WHERE t.event_id = v_event AND t.tier_id = v_hold.ga_tier_id;
    ELSE
        -- The seats, locked in order: still ours, and the total at their current
        -- price version (client totals are never used).
        SELECT count(*) FILTER (WHERE l.hold_id = p_hold_id AND l.status = 'HELD'),
               sum(pt.price_minor)
        INTO v_ok, v_amount
        FROM (SELECT si.seat_id, si.hold_id, si.status, si.price_version
              FROM seat_inventory si
              WHERE si.event_id = v_event AND si.seat_id = ANY (v_hold.seat_ids)
              ORDER BY si.seat_id
              FOR UPDATE) AS l
        JOIN seats s ON s.event_id = v_event AND s.seat_id = l.seat_id
        JOIN price_tiers pt ON pt.event_id = v_event AND pt.tier_id = s.tier_id
                           AND pt.price_version = l.price_version;
    END IF;
    -- now() is when this transaction began; after waiting for the seat locks
    -- the deadline is judged by the clock, so a hold that expired meanwhile
    -- does not start a payment.
    IF v_ok <> v_hold.seat_count OR v_hold.expires_at <= clock_timestamp() THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = '{"hold_status": "EXPIRED"}';
    END IF;
    IF v_amount <> v_hold.amount_minor THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'price_changed',
            DETAIL = jsonb_build_object('amount_minor', v_amount)::text;
    END IF;

    -- One order per hold; a new card after a decline reuses it.
    INSERT INTO orders AS o (hold_id, event_id, account_id, status, amount_minor, currency,
                             payment_status, checkout_key)
    VALUES (p_hold_id, v_event, p_account_id, 'PENDING', v_amount, v_hold.currency,
            'PENDING', p_key)
    ON CONFLICT (hold_id) DO UPDATE
        SET payment_status = 'PENDING', checkout_key = excluded.checkout_key, updated_at = now()
        WHERE o.status = 'PENDING'
    RETURNING o.order_id INTO order_id;
    IF order_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'hold_expired',
            DETAIL = jsonb_build_object('order_id', v_order.order_id)::text;
    END IF;
    INSERT INTO payment_operations (order_id, kind, amount_minor, currency, payment_method,
                                    next_check_at)
    VALUES (order_id, 'AUTHORIZE', v_amount, v_hold.currency, p_payment_method,
            now() + make_interval(secs => p_first_check_seconds))
    RETURNING payment_operations.operation_id INTO operation_id;

    v_grace := coalesce(v_hold.grace_until,
                        v_hold.expires_at + make_interval(secs => p_grace_seconds));
    UPDATE holds SET status = 'PAYMENT_PENDING', grace_until = v_grace, updated_at = now()
    WHERE hold_id = p_hold_id;
    UPDATE seat_inventory
    SET status = 'PAYMENT_PENDING', hold_expires_at = v_grace, version = version + 1
    WHERE event_id = v_event AND seat_id = ANY (v_hold.seat_ids) AND hold_id = p_hold_id;

    INSERT INTO idempotency_keys (account_id, key, digest, status_code, response, resource_id,
                                  scope)
    VALUES (p_account_id, p_key, p_digest, 200,
            jsonb_build_object('order_id', order_id, 'operation_id', operation_id),
            order_id, 'checkout');
    INSERT INTO payment_events (order_id, operation_id, action, detail)
    VALUES (order_id, operation_id, 'checkout_started',
            jsonb_build_object('hold_id', p_hold_id, 'amount_minor', v_amount,
                               'grace_until', v_grace));
    amount_minor := v_amount;
    currency := v_hold.currency;
END $$;

-- onsale_payment_apply: steps 3-5: apply one provider answer.
CREATE FUNCTION onsale_payment_apply(
    p_operation_id uuid, p_outcome text, p_provider_ref text, p_failure_code text,
    p_next_action jsonb, p_source text, p_retry_seconds integer
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_op record;
    v_parent record;
    v_order record;
    v_hold record;
    v_ok integer;
    v_amount bigint;
    v_follow uuid;
    v_follow_kind text;
    v_applied boolean := true;
    v_void record;
    v_mismatch boolean := false;
BEGIN
    SELECT p.*, o.account_id, o.event_id, o.hold_id INTO v_op
    FROM payment_operations p JOIN orders o ON o.order_id = p.order_id
    WHERE p.operation_id = p_operation_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OS404', MESSAGE = 'operation_not_found', DETAIL = '{}';
    END IF;
    IF p_outcome IN ('UNKNOWN', 'CAPTURED') THEN
        -- Only the operation and the order's payment status change: no seat
        -- moves, so only the tail of the lock ladder (order, operation) is taken.
        SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = v_op.hold_id;
    ELSE
        PERFORM pg_advisory_xact_lock(hashtextextended(v_op.account_id::text, v_op.event_id));
        SELECT h.* INTO v_hold FROM holds h WHERE h.hold_id = v_op.hold_id FOR UPDATE;
        PERFORM 1 FROM seat_inventory si
        WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids)
        ORDER BY si.seat_id FOR UPDATE;
    END IF;
    SELECT o.* INTO v_order FROM orders o WHERE o.order_id = v_op.order_id FOR UPDATE;
    SELECT p.* INTO v_op FROM payment_operations p WHERE p.operation_id = p_operation_id
    FOR UPDATE;
    IF p_outcome <> 'UNKNOWN' AND p_provider_ref IS NOT NULL AND v_op.provider_ref IS NOT NULL
       AND p_provider_ref <> v_op.provider_ref THEN
        p_outcome := 'UNKNOWN';  -- needs no more locks than were taken above
        p_failure_code := 'mismatch_id';
    END IF;
    v_mismatch := p_outcome = 'UNKNOWN' AND starts_with(coalesce(p_failure_code, ''), 'mismatch_');

    IF p_outcome = 'UNKNOWN' THEN
        IF v_op.status IN ('PENDING', 'UNKNOWN') THEN
            UPDATE payment_operations
            SET status = 'UNKNOWN', attempts = attempts + 1, updated_at = now(),
                next_check_at = now() + make_interval(secs => p_retry_seconds)
            WHERE operation_id = p_operation_id;
            IF v_order.status IN ('PENDING', 'CONFIRMED')
               AND v_order.payment_status NOT IN ('CAPTURED', 'VOIDED') THEN
                UPDATE orders SET payment_status = 'UNKNOWN', updated_at = now()
                WHERE order_id = v_order.order_id;
            END IF;
        ELSE
            v_applied := false;
        END IF;

    ELSIF v_op.kind = 'AUTHORIZE' THEN
        IF v_op.status = 'FAILED' AND p_outcome = 'AUTHORIZED' THEN
            -- An authorization that arrives after we gave up on it (released
            -- the seats): never sell, void it.
            UPDATE payment_operations SET provider_ref = coalesce(provider_ref, p_provider_ref),
                   updated_at = now()
            WHERE operation_id = p_operation_id;
            -- A void that found nothing to cancel (the intent did not exist
            -- yet) is sent again, now that there is one.
            UPDATE payment_operations
            SET status = 'PENDING', provider_ref = p_provider_ref, failure_code = NULL,
                updated_at = now(), next_check_at = now()
            WHERE parent_operation_id = p_operation_id AND kind = 'VOID' AND status = 'SUCCEEDED'
              AND failure_code IN ('no_such_intent', 'not_found')
              AND p_provider_ref IS NOT NULL;
            v_follow_kind := 'VOID';
        ELSIF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome = 'REQUIRES_ACTION' THEN
            IF v_op.status = 'REQUIRES_ACTION' THEN
                v_applied := false;
            ELSE
                UPDATE payment_operations
                SET status = 'REQUIRES_ACTION', provider_ref = coalesce(p_provider_ref, provider_ref),
                    next_action = p_next_action, updated_at = now(),
                    next_check_at = now() + make_interval(secs => p_retry_seconds)
                WHERE operation_id = p_operation_id;
                UPDATE orders SET payment_status = 'REQUIRES_ACTION', updated_at = now()
                WHERE order_id = v_order.order_id AND status = 'PENDING';
            END IF;
        ELSIF p_outcome = 'AUTHORIZED' THEN
            UPDATE payment_operations
            SET status = 'SUCCEEDED', provider_ref = coalesce(p_provider_ref, provider_ref),
                next_action = NULL, updated_at = now()
            WHERE operation_id = p_operation_id;
            -- The sale: the hold and every seat (or place) must still be ours, at the price.
            IF v_hold.ga_tier_id IS NOT NULL THEN
                SELECT coalesce(sum(p.quantity), 0) INTO v_ok FROM ga_hold_places p
                WHERE p.hold_id = v_hold.hold_id AND p.status = 'HELD';
                SELECT v_ok * t.price_minor INTO v_amount FROM ga_tiers t
                WHERE t.event_id = v_hold.event_id AND t.tier_id = v_hold.ga_tier_id;
            ELSE
                SELECT count(*) FILTER (WHERE si.hold_id = v_hold.hold_id
                                          AND si.status = 'PAYMENT_PENDING'),
                       sum(pt.price_minor)
                INTO v_ok, v_amount
                FROM seat_inventory si
                JOIN seats s ON s.event_id = si.event_id AND s.seat_id = si.seat_id
                JOIN price_tiers pt ON pt.event_id = si.event_id AND pt.tier_id = s.tier_id
                                   AND pt.price_version = si.price_version
                WHERE si.event_id = v_hold.event_id AND si.seat_id = ANY (v_hold.seat_ids);
            END IF;
            SELECT p.operation_id, p.status INTO v_void FROM payment_operations p
            WHERE p.parent_operation_id = p_operation_id AND p.kind = 'VOID';
            IF v_void.operation_id IS NULL
               AND v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING'
               AND v_ok = v_hold.seat_count AND v_amount = v_order.amount_minor
               AND v_op.amount_minor = v_order.amount_minor THEN
                INSERT INTO order_items (order_id, event_id, seat_id, price_minor)
                SELECT v_order.order_id, v_hold.event_id, (seat ->> 'seat_id')::integer,
                       (seat ->> 'price_minor')::bigint
                FROM jsonb_array_elements(v_hold.seats) AS seat;
                UPDATE seat_inventory
                SET status = 'SOLD', order_id = v_order.order_id, hold_expires_at = NULL,
                    version = version + 1
                WHERE event_id = v_hold.event_id AND seat_id = ANY (v_hold.seat_ids)
                  AND hold_id = v_hold.hold_id;
                IF v_hold.ga_tier_id IS NOT NULL THEN
                    INSERT INTO ga_order_items (order_id, event_id, tier_id, quantity, price_minor)
                    VALUES (v_order.order_id, v_hold.event_id, v_hold.ga_tier_id, v_ok,
                            v_amount / v_ok);
                    PERFORM onsale_ga_move(ARRAY[v_hold.hold_id], 'HELD', 'SOLD', 'sold');
                END IF;
                UPDATE holds SET status = 'CONFIRMED', updated_at = now()
                WHERE hold_id = v_hold.hold_id;
                UPDATE orders SET status = 'CONFIRMED', payment_status = 'AUTHORIZED',
                       updated_at = now()
                WHERE order_id = v_order.order_id;
                INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
                VALUES (v_hold.event_id, v_order.order_id, 'order.confirmed',
                        jsonb_build_object('order_id', v_order.order_id,
                                           'hold_id', v_hold.hold_id,
                                           'account_id', v_order.account_id,
                                           'seat_ids', to_jsonb(v_hold.seat_ids),
                                           'ga', v_hold.ga,
                                           'amount_minor', v_order.amount_minor,
                                           'currency', v_order.currency));
                v_follow_kind := 'CAPTURE';
            ELSE
                -- Not ours to sell any more (the reconciler gave up on it and
                -- is voiding it, or the hold or price changed): void, and free
                -- the seats now; no capture will ever be sent for them.
                UPDATE orders
                SET status = 'FAILED', updated_at = now(),
                    cancel_reason = CASE WHEN v_void.operation_id IS NULL THEN 'hold_lost'
                                         ELSE 'payment_abandoned' END
                WHERE order_id = v_order.order_id AND status = 'PENDING';
                IF v_hold.status = 'PAYMENT_PENDING' THEN
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                END IF;
                v_follow_kind := 'VOID';
            END IF;
        ELSIF p_outcome IN ('DECLINED', 'NO_AUTHORIZATION') THEN
            UPDATE payment_operations
            SET status = 'FAILED', failure_code = coalesce(p_failure_code, lower(p_outcome)),
                provider_ref = coalesce(p_provider_ref, provider_ref), next_action = NULL,
                updated_at = now()
            WHERE operation_id = p_operation_id;
            IF v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING' THEN
                IF p_outcome = 'DECLINED' AND v_hold.expires_at > now() THEN
                    -- Another card may be tried until the original deadline.
                    UPDATE holds SET status = 'HELD', updated_at = now()
                    WHERE hold_id = v_hold.hold_id;
                    UPDATE seat_inventory
                    SET status = 'HELD', hold_expires_at = v_hold.expires_at,
                        version = version + 1
                    WHERE event_id = v_hold.event_id AND seat_id = ANY (v_hold.seat_ids)
                      AND hold_id = v_hold.hold_id AND status = 'PAYMENT_PENDING';
                    UPDATE orders SET payment_status = 'DECLINED', updated_at = now()
                    WHERE order_id = v_order.order_id;
                ELSE
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                    UPDATE orders
                    SET status = 'FAILED', updated_at = now(),
                        payment_status = CASE WHEN p_outcome = 'DECLINED' THEN 'DECLINED'
                                              ELSE 'FAILED' END,
                        cancel_reason = CASE WHEN p_outcome = 'DECLINED' THEN 'payment_declined'
                                             ELSE 'payment_not_completed' END
                    WHERE order_id = v_order.order_id;
                END IF;
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to an authorization', p_outcome;
        END IF;

    ELSIF v_op.kind = 'CAPTURE' THEN
        IF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome = 'CAPTURED' THEN
            UPDATE payment_operations SET status = 'SUCCEEDED', updated_at = now(),
                   provider_ref = coalesce(p_provider_ref, provider_ref)
            WHERE operation_id = p_operation_id;
            UPDATE orders SET payment_status = 'CAPTURED', updated_at = now()
            WHERE order_id = v_order.order_id;
        ELSIF p_outcome = 'CAPTURE_FAILED' THEN
            UPDATE payment_operations SET status = 'FAILED', updated_at = now(),
                   failure_code = coalesce(p_failure_code, 'capture_failed')
            WHERE operation_id = p_operation_id;
            -- The audited compensation, before any ticket exists (tickets are
            -- issued only once the payment is captured).
            IF EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = v_order.order_id) THEN
                RAISE EXCEPTION 'order % has tickets; compensation needs an operator',
                    v_order.order_id;
            END IF;
            IF v_order.status = 'CONFIRMED' THEN
                UPDATE order_items SET valid = false WHERE order_id = v_order.order_id;
                UPDATE ga_order_items SET valid = false WHERE order_id = v_order.order_id;
                PERFORM onsale_release_paid_hold(v_hold.hold_id, 'SOLD', 'compensated',
                                                 'RELEASED');
                UPDATE orders SET status = 'CANCELLED', payment_status = 'CAPTURE_FAILED',
                       cancel_reason = 'capture_failed', updated_at = now()
                WHERE order_id = v_order.order_id;
                INSERT INTO outbox (event_id, aggregate_id, event_type, payload)
                VALUES (v_order.event_id, v_order.order_id, 'order.cancelled',
                        jsonb_build_object('order_id', v_order.order_id,
                                           'reason', 'capture_failed'));
                INSERT INTO payment_events (order_id, operation_id, action, detail)
                VALUES (v_order.order_id, p_operation_id, 'compensated',
                        jsonb_build_object('seat_ids', to_jsonb(v_hold.seat_ids),
                                           'failure_code', p_failure_code));
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to a capture', p_outcome;
        END IF;

    ELSIF v_op.kind = 'VOID' THEN
        IF v_op.status IN ('SUCCEEDED', 'FAILED') THEN
            v_applied := false;
        ELSIF p_outcome IN ('VOIDED', 'VOID_FAILED') THEN
            UPDATE payment_operations
            SET status = CASE WHEN p_outcome = 'VOIDED' THEN 'SUCCEEDED' ELSE 'FAILED' END,
                failure_code = p_failure_code, updated_at = now()
            WHERE operation_id = p_operation_id;
            SELECT p.* INTO v_parent FROM payment_operations p
            WHERE p.operation_id = v_op.parent_operation_id FOR UPDATE;
            IF p_outcome = 'VOIDED' THEN
                UPDATE orders SET payment_status = 'VOIDED', updated_at = now()
                WHERE order_id = v_order.order_id AND status <> 'CONFIRMED';
            END IF;
            -- A void of an authorization still open (abandoned 3-D Secure,
            -- unknown past the grace) ends it: now the seats can go.
            IF v_parent.status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION')
               AND p_outcome = 'VOIDED' THEN
                UPDATE payment_operations
                SET status = 'FAILED', failure_code = 'voided', updated_at = now()
                WHERE operation_id = v_parent.operation_id;
                IF v_hold.status = 'PAYMENT_PENDING' AND v_order.status = 'PENDING' THEN
                    PERFORM onsale_release_paid_hold(v_hold.hold_id, 'PAYMENT_PENDING',
                                                     'payment_failed', 'EXPIRED');
                    UPDATE orders SET status = 'FAILED', cancel_reason = 'payment_not_completed',
                           updated_at = now()
                    WHERE order_id = v_order.order_id;
                END IF;
            END IF;
        ELSE
            RAISE EXCEPTION 'outcome % does not apply to a void', p_outcome;
        END IF;
    END IF;

    IF v_follow_kind IS NOT NULL THEN
        INSERT INTO payment_operations (order_id, kind, parent_operation_id, amount_minor,
                                        currency, provider_ref, next_check_at)
        VALUES (v_order.order_id, v_follow_kind, p_operation_id, v_op.amount_minor,
                v_op.currency, coalesce(p_provider_ref, v_op.provider_ref),
                now() + make_interval(secs => p_retry_seconds))
        ON CONFLICT DO NOTHING
        RETURNING operation_id INTO v_follow;
        IF v_follow IS NULL THEN  -- already created by an earlier delivery
            SELECT p.operation_id INTO v_follow FROM payment_operations p
            WHERE p.parent_operation_id = p_operation_id AND p.kind = v_follow_kind
              AND p.status IN ('PENDING', 'UNKNOWN');
        END IF;
    END IF;
    IF v_mismatch THEN  -- every one, applied or not: the operators' trail
        INSERT INTO payment_events (order_id, operation_id, action, detail)
        VALUES (v_order.order_id, p_operation_id, lower(v_op.kind) || ':mismatch',
                jsonb_build_object('source', p_source, 'failure_code', p_failure_code,
                                   'provider_ref', p_provider_ref,
                                   'recorded_ref', v_op.provider_ref, 'applied', v_applied));
    ELSIF v_applied THEN
        INSERT INTO payment_events (order_id, operation_id, action, detail)
        VALUES (v_order.order_id, p_operation_id, lower(v_op.kind) || ':' || lower(p_outcome),
                jsonb_build_object('source', p_source, 'failure_code', p_failure_code,
                                   'follow_up', v_follow_kind));
    END IF;
    SELECT o.status, o.payment_status INTO v_order FROM orders o
    WHERE o.order_id = v_op.order_id;
    RETURN jsonb_build_object(
        'applied', v_applied, 'mismatch', v_mismatch, 'order_id', v_op.order_id,
        'order_status', v_order.status,
        'payment_status', v_order.payment_status,
        'follow_up', CASE WHEN v_follow IS NULL THEN NULL ELSE
            jsonb_build_object('operation_id', v_follow, 'kind', v_follow_kind,
                               'provider_ref', coalesce(p_provider_ref, v_op.provider_ref))
            END);
END $$;

-- onsale_payment_abandon: the VOID of an authorization past its grace.
CREATE FUNCTION onsale_payment_abandon(p_operation_id uuid, p_provider_ref text)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_op record;
    v_void uuid;
BEGIN
    SELECT p.* INTO v_op FROM payment_operations p
    WHERE p.operation_id = p_operation_id FOR UPDATE;
    IF v_op.kind <> 'AUTHORIZE' OR v_op.status NOT IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') THEN
        RETURN NULL;
    END IF;
    INSERT INTO payment_operations (order_id, kind, parent_operation_id, amount_minor, currency,
                                    provider_ref)
    VALUES (v_op.order_id, 'VOID', p_operation_id, v_op.amount_minor, v_op.currency,
            coalesce(p_provider_ref, v_op.provider_ref))
    ON CONFLICT DO NOTHING
    RETURNING operation_id INTO v_void;
    IF v_void IS NULL THEN
        SELECT p.operation_id INTO v_void FROM payment_operations p
        WHERE p.parent_operation_id = p_operation_id AND p.kind = 'VOID';
    END IF;
    INSERT INTO payment_events (order_id, operation_id, action, detail)
    VALUES (v_op.order_id, p_operation_id, 'abandoned', jsonb_build_object('void', v_void));
    RETURN v_void;
END $$;

-- Tickets (core/tickets.py)

-- onsale_issue_tickets: issue an order's tickets once captured.
CREATE FUNCTION onsale_issue_tickets(p_order_id uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_order record;
    v_count integer;
BEGIN
    SELECT o.order_id, o.status, o.payment_status, o.event_id INTO v_order
    FROM orders o WHERE o.order_id = p_order_id FOR SHARE;
    IF NOT FOUND OR v_order.status <> 'CONFIRMED' THEN
        RETURN 'cancelled';
    END IF;
    IF v_order.payment_status <> 'CAPTURED' THEN
        RETURN 'wait';
    END IF;
    INSERT INTO tickets (order_id, event_id, seat_id, code)
    SELECT p_order_id, oi.event_id, oi.seat_id,
           upper(replace(gen_random_uuid()::text, '-', ''))
    FROM order_items oi WHERE oi.order_id = p_order_id AND oi.valid
    ON CONFLICT (order_id, seat_id) DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    -- One ticket per GA place: place 1 .. quantity of each tier bought.
    WITH issued AS (
        INSERT INTO tickets (order_id, event_id, ga_tier_id, place, code)
        SELECT p_order_id, gi.event_id, gi.tier_id, n,
               upper(replace(gen_random_uuid()::text, '-', ''))
        FROM ga_order_items gi CROSS JOIN LATERAL generate_series(1, gi.quantity) AS n
        WHERE gi.order_id = p_order_id AND gi.valid
        ON CONFLICT (order_id, ga_tier_id, place) WHERE ga_tier_id IS NOT NULL DO NOTHING
        RETURNING 1
    )
    SELECT v_count + count(*) INTO v_count FROM issued;
    RETURN CASE WHEN v_count > 0 THEN 'issued' ELSE 'duplicate' END;
END $$;
