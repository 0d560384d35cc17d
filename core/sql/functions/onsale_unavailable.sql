-- onsale_unavailable: the answer of a hold attempt that found its seats
-- taken. Replays a request that a concurrent twin (same key) completed while
-- we waited, or answers 409 seats_unavailable. Returned rather than raised:
-- the losing path has written nothing, and most attempts on a hot seat lose.
-- Called by onsale_hold_best.

CREATE OR REPLACE FUNCTION onsale_unavailable(
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
