-- onsale_shard_serving: refuse a new hold or checkout while this shard has failed over
-- and not been resumed (docs/operations.md#failover): the primary's timeline (the first
-- 8 hex digits of the WAL file it writes) is above the one recorded in shard_identity by
-- the last resume. OS503 inventory_unavailable, with {"resuming": true}. Called by the
-- functions that start a hold or a payment; a replay of an earlier answer is not refused.

CREATE OR REPLACE FUNCTION onsale_shard_serving() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_current bigint;
    v_resumed bigint;
BEGIN
    v_current := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint;
    SELECT i.timeline INTO v_resumed FROM shard_identity i;
    IF v_current > coalesce(v_resumed, 1) THEN
        RAISE EXCEPTION USING ERRCODE = 'OS503', MESSAGE = 'inventory_unavailable',
            DETAIL = jsonb_build_object('resuming', true, 'timeline', v_current)::text;
    END IF;
END $$;
