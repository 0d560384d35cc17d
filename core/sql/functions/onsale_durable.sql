-- onsale_durable: make the calling transaction commit through synchronous replication
-- before it answers (docs/design.md#failover). A replay answers from rows another
-- transaction wrote; on a primary that has just been deposed those rows may be
-- committed only locally, and a read-only transaction would return them at once.
-- PostgreSQL waits for the synchronous standby only at the commit of a transaction that
-- has a transaction id and wrote WAL (a transaction id alone is not enough), so this
-- writes a small transactional WAL record: a logical decoding message, which pgoutput
-- leaves out of the change stream unless a subscriber asks for messages. A deposed
-- primary then never acknowledges the replay: the client's wait ends in a timeout and
-- a retry that reaches the new primary. On a single server it costs one commit record.

CREATE OR REPLACE FUNCTION onsale_durable() RETURNS void LANGUAGE sql AS $$
    SELECT pg_logical_emit_message(true, 'onsale_durable', '')
$$;
