-- onsale_new_id: the id of a new hold, order, payment operation or ticket: a UUIDv7 with this
-- database's shard number in bytes 10 and 11 (after the variant bits), so any process
-- finds the row's shard from its id alone (onsale/kernel/shard_ids.py,
-- docs/scaling.md#an-id-names-its-shard). A database with no shard identity yet makes
-- no id: the NULL fails the column's NOT NULL (onsale migrate gives it one).
-- plpgsql, not sql: migration 0007 creates the table after this function.
CREATE OR REPLACE FUNCTION onsale_new_id() RETURNS uuid
LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
BEGIN
    RETURN encode(overlay(uuid_send(uuidv7())
                          PLACING int2send((SELECT shard_id FROM shard_identity)) FROM 11 FOR 2),
                  'hex')::uuid;
END $$;
