-- onsale_hold_limit: serialise this account's holds for this event (the
-- per-(event, account) advisory lock, first in the lock order), then count
-- what it owns: live holds, holds in payment, and sold seats; over the
-- event's limit raises OS409 ticket_limit_exceeded. A twin request with the
-- same key may have committed while we waited for the lock: its response is
-- returned (to be replayed) instead of counting its seats against us.
-- Called by onsale_hold and onsale_hold_best.
-- requires: onsale_owned

CREATE OR REPLACE FUNCTION onsale_hold_limit(
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
    v_current := onsale_owned(p_event_id, p_account_id);
    IF v_current + p_quantity > p_max THEN
        RAISE EXCEPTION USING ERRCODE = 'OS409', MESSAGE = 'ticket_limit_exceeded',
            DETAIL = jsonb_build_object('limit', p_max, 'owned', v_current,
                                        'requested', p_quantity)::text;
    END IF;
    RETURN NULL;
END $$;
