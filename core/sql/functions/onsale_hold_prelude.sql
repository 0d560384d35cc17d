-- onsale_hold_prelude: load the event and check the request size (the sale
-- is open, 1..max_seats_per_hold seats). Returns the stored response when
-- the key was used before (replay, no new state), else the event's hold TTL,
-- currency and ticket limit. Called by onsale_hold_best.

CREATE OR REPLACE FUNCTION onsale_hold_prelude(
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
