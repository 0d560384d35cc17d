-- onsale_durable: make the calling transaction commit through synchronous replication
-- before it answers (docs/design.md#failover). A replay answers from rows another
-- transaction wrote; on a primary that has just been deposed those rows may be
-- committed only locally, and a read-only transaction would return them at once.
-- Taking a transaction id makes the commit wait for the synchronous standby like any
-- write, so a deposed primary never acknowledges them: the client's wait times out and
-- it retries, reaching the new primary. On a single server it costs one commit record.

CREATE OR REPLACE FUNCTION onsale_durable() RETURNS void LANGUAGE sql AS $$
    SELECT pg_current_xact_id()
$$;
