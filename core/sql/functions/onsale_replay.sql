-- onsale_replay: the stored response for (account, key), NULL if the key is
-- new. A key reused for a different request (another digest) is refused:
-- OS409 idempotency_conflict. No write, no lock; a replay commits through
-- synchronous replication before it answers (onsale_durable).
-- Called by onsale_unavailable, onsale_hold_prelude and onsale_hold_limit.

CREATE OR REPLACE FUNCTION onsale_replay(p_account_id uuid, p_key text, p_digest text)
RETURNS jsonb LANGUAGE plpgsql AS $$
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
    PERFORM onsale_durable();
    RETURN jsonb_build_object('status_code', v_prev.status_code, 'body', v_prev.response);
END $$;
