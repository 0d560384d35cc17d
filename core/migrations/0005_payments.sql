-- 0005: checkout and payments. Orders now exist from the start of checkout
-- (PENDING) and carry a payment status; every call to the provider is a
-- payment operation whose id is the provider idempotency key; verified
-- webhooks are deduplicated by provider event id; tickets are issued from
-- order.confirmed once the payment is captured; outbox rows remember their
-- transaction so the relay never overtakes one still in flight.

-- The one-time payment grace: set when the hold first enters
-- PAYMENT_PENDING, never extended afterwards.
ALTER TABLE holds ADD COLUMN grace_until timestamptz;

ALTER TABLE orders ADD COLUMN payment_status text NOT NULL DEFAULT 'PENDING'
    CHECK (payment_status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORIZED', 'CAPTURED',
                              'DECLINED', 'UNKNOWN', 'VOIDED', 'CAPTURE_FAILED'));
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

-- Issue the tickets of an order from its order.confirmed message. Idempotent:
-- a duplicate delivery issues nothing new. Tickets wait for the capture, so
-- a compensation (capture definitively failed) always comes before any ticket.
--   'issued'     tickets written now
--   'duplicate'  they already existed
--   'wait'       confirmed, payment not captured yet: deliver again later
--   'cancelled'  the order is not (or no longer) confirmed: nothing to issue
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
    RETURN CASE WHEN v_count > 0 THEN 'issued' ELSE 'duplicate' END;
END $$;
