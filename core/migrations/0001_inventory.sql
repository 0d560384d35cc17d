-- 0001: accounts, events, venue layout, seat inventory, holds, orders, outbox.
-- The authoritative inventory lives here and nowhere else (docs/architecture.md).
-- Migrations hold tables, columns, constraints, indexes and data changes; the
-- functions that decide on them are core/sql/functions/*.sql, applied after.

CREATE TABLE accounts (
    account_id    uuid PRIMARY KEY DEFAULT uuidv7(),
    email         text NOT NULL,
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));

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
    seat_count              integer NOT NULL CHECK (seat_count > 0),
    created_at              timestamptz NOT NULL DEFAULT now()
);

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
CREATE INDEX seats_rank_idx ON seats (event_id, rank);

-- The venue layout as served to browsers: content-addressed by etag, stored
-- compressed once so no request pays for gzip.
CREATE TABLE venue_layouts (
    event_id  bigint PRIMARY KEY REFERENCES events,
    etag      text NOT NULL,
    body      text NOT NULL,
    body_gzip bytea NOT NULL
);

-- One narrow hot row per seat. No secondary index on hold_id so that status
-- changes stay HOT updates; every lookup goes through (event_id, seat_id).
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

CREATE TABLE holds (
    hold_id         uuid PRIMARY KEY,
    event_id        bigint NOT NULL REFERENCES events,
    account_id      uuid NOT NULL REFERENCES accounts,
    idempotency_key text NOT NULL,
    status          text NOT NULL
                    CHECK (status IN ('HELD', 'PAYMENT_PENDING', 'CONFIRMED', 'RELEASED', 'EXPIRED')),
    seat_ids        integer[] NOT NULL CHECK (cardinality(seat_ids) >= 1),
    seats           jsonb NOT NULL,
    seat_count      integer NOT NULL,
    amount_minor    bigint NOT NULL CHECK (amount_minor >= 0),
    currency        char(3) NOT NULL,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX holds_account_key_idx ON holds (account_id, idempotency_key);
CREATE INDEX holds_active_by_account_idx ON holds (event_id, account_id)
    WHERE status IN ('HELD', 'PAYMENT_PENDING', 'CONFIRMED');
CREATE INDEX holds_due_idx ON holds (expires_at) WHERE status = 'HELD';

-- One immutable request per (account, key); the response commits with the
-- business state it describes.
CREATE TABLE idempotency_keys (
    account_id  uuid NOT NULL,
    key         text NOT NULL,
    digest      text NOT NULL,
    status_code integer,
    response    jsonb,
    resource_id uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- Every time a held seat leaves its hold other than by sale: released by its
-- owner, expired by the sweeper, or reclaimed by a newer hold after the
-- deadline; and, since checkout, a seat in payment freed because the payment
-- failed, or a sold seat put back on sale by a compensation. The row's state
-- before the change is kept, so invariant 4 (an expiry action changes only
-- its own, expired hold) is audited from this.
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

CREATE TABLE orders (
    order_id      uuid PRIMARY KEY DEFAULT uuidv7(),
    hold_id       uuid NOT NULL UNIQUE REFERENCES holds,
    event_id      bigint NOT NULL REFERENCES events,
    account_id    uuid NOT NULL REFERENCES accounts,
    status        text NOT NULL
                  CHECK (status IN ('PENDING', 'CONFIRMED', 'CANCELLED', 'FAILED')),
    amount_minor  bigint NOT NULL CHECK (amount_minor >= 0),
    currency      char(3) NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_account_idx ON orders (account_id, created_at);

CREATE TABLE order_items (
    order_id     uuid NOT NULL REFERENCES orders,
    event_id     bigint NOT NULL,
    seat_id      integer NOT NULL,
    price_minor  bigint NOT NULL CHECK (price_minor >= 0),
    valid        boolean NOT NULL DEFAULT true,
    PRIMARY KEY (order_id, seat_id)
);
-- The rule, guarded a second time: one valid sold item per (event, seat).
CREATE UNIQUE INDEX order_items_one_valid_sale ON order_items (event_id, seat_id) WHERE valid;

CREATE TABLE outbox (
    outbox_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     bigint NOT NULL,
    aggregate_id uuid NOT NULL,
    event_type   text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (outbox_id) WHERE published_at IS NULL;
