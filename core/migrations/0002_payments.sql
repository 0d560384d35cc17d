-- 0002: checkout and payments. Orders exist from the start of checkout
-- (PENDING) and carry a payment status; every call to the provider is a
-- payment operation whose id is the provider idempotency key; verified
-- webhooks are deduplicated by provider event id; tickets are issued from
-- order.confirmed once the payment is captured; outbox rows remember their
-- transaction so the relay never overtakes one still in flight. The steps
-- themselves are functions: onsale_checkout_begin, onsale_payment_apply,
-- onsale_payment_abandon, onsale_issue_tickets (core/sql/functions/).

-- The one-time payment grace: set when the hold first enters
-- PAYMENT_PENDING, never extended afterwards.
ALTER TABLE holds ADD COLUMN grace_until timestamptz;

-- FAILED: the payment never happened (not found at the provider past the grace).
ALTER TABLE orders ADD COLUMN payment_status text NOT NULL DEFAULT 'PENDING'
    CHECK (payment_status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORIZED', 'CAPTURED',
                              'DECLINED', 'UNKNOWN', 'VOIDED', 'CAPTURE_FAILED', 'FAILED'));
ALTER TABLE orders ADD COLUMN cancel_reason text;
ALTER TABLE orders ADD COLUMN checkout_key text;

-- One call (and its retries) to the provider. operation_id is the provider's
-- idempotency key, so a retry can never create a second charge.
--   PENDING          recorded, not yet answered (maybe never sent)
--   UNKNOWN          sent, no definitive answer (timeout, 5xx, lost response)
--   REQUIRES_ACTION  the provider wants the shopper (3-D Secure)
--   SUCCEEDED/FAILED definitive
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
    CHECK ((kind = 'AUTHORIZE') = (parent_operation_id IS NULL))
);
-- At most one authorization per order that is not definitively failed: a
-- second checkout on the same hold cannot start a second charge.
CREATE UNIQUE INDEX payment_operations_one_live_authorize ON payment_operations (order_id)
    WHERE kind = 'AUTHORIZE' AND status <> 'FAILED';
-- One capture and one void per authorization.
CREATE UNIQUE INDEX payment_operations_one_per_parent ON payment_operations
    (parent_operation_id, kind) WHERE parent_operation_id IS NOT NULL;
CREATE INDEX payment_operations_open_idx ON payment_operations (next_check_at)
    WHERE status IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION');
CREATE INDEX payment_operations_order_idx ON payment_operations (order_id);
CREATE INDEX payment_operations_ref_idx ON payment_operations (provider_ref);

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
CREATE INDEX payment_events_order_idx ON payment_events (order_id);

-- Verified provider webhooks, deduplicated by the provider's event id.
CREATE TABLE webhook_events (
    provider_event_id text PRIMARY KEY,
    event_type        text NOT NULL,
    provider_ref      text,
    outcome           text NOT NULL,
    payload           jsonb NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tickets (
    ticket_id  uuid PRIMARY KEY DEFAULT uuidv7(),
    order_id   uuid NOT NULL REFERENCES orders,
    event_id   bigint NOT NULL,
    seat_id    integer NOT NULL,
    code       text NOT NULL UNIQUE,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (order_id, seat_id)
);

-- The writing transaction of each outbox row: the relay publishes a row only
-- once every transaction older than the oldest one still running has ended,
-- so a row committed late with a lower id is never skipped or overtaken.
ALTER TABLE outbox ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();

-- An idempotency record answers a hold request or a checkout request.
ALTER TABLE idempotency_keys ADD COLUMN scope text NOT NULL DEFAULT 'hold'
    CHECK (scope IN ('hold', 'checkout'));
