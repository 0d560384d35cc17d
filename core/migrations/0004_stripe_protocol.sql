-- Payments speak Stripe's protocol (through the stripe SDK) from here on. Rows written
-- before came from the simulator's earlier dialect: their provider references (pi_…)
-- and webhook event ids (evt_…) keep their meaning and stay readable, and their
-- payment_method is a masked card ("card_4242"), never a PaymentMethod id. protocol
-- says which: 'onsale-v0' for those rows, 'stripe' for everything after.
ALTER TABLE payment_operations ADD COLUMN protocol text NOT NULL DEFAULT 'stripe'
    CHECK (protocol IN ('onsale-v0', 'stripe'));
UPDATE payment_operations SET protocol = 'onsale-v0';

ALTER TABLE webhook_events ADD COLUMN protocol text NOT NULL DEFAULT 'stripe'
    CHECK (protocol IN ('onsale-v0', 'stripe'));
UPDATE webhook_events SET protocol = 'onsale-v0';
