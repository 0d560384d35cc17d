-- onsale_owned: what an account owns of an event against a ticket limit: the seats
-- or places of its holds in payment or sold, and of its live holds (HELD, before
-- their deadline by this transaction's clock); p_tier_id: only that GA tier's holds
-- (a tier's own limit), NULL: every hold of the event. The one statement of this
-- count: onsale_hold_limit, onsale_hold_batch, onsale_ga_hold, onsale_ga_hold_batch
-- and onsale_checkout_begin all judge their limit by it (the audit's
-- active_holds_within_account_limit states it independently, as a check should).
-- plpgsql, not sql: a database migrated part of the way (before 0005's ga_tier_id)
-- still takes every function file.

CREATE OR REPLACE FUNCTION onsale_owned(
    p_event_id bigint, p_account_id uuid, p_tier_id smallint DEFAULT NULL
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(sum(h.seat_count), 0) FROM holds h
            WHERE h.event_id = p_event_id AND h.account_id = p_account_id
              AND (p_tier_id IS NULL OR h.ga_tier_id = p_tier_id)
              AND (h.status IN ('PAYMENT_PENDING', 'CONFIRMED')
                   OR (h.status = 'HELD' AND h.expires_at > now())));
END $$;
