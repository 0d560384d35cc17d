-- onsale_shards_forward: the shard list's guard (trigger on shards): a shard's epoch only moves forward, and
-- its number and stamping time never change (docs/scaling.md#the-shard-list).
CREATE OR REPLACE FUNCTION onsale_shards_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.epoch < OLD.epoch THEN
        RAISE EXCEPTION 'shard % epoch may only move forward (% to %)',
            OLD.shard_id, OLD.epoch, NEW.epoch USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.shard_id <> OLD.shard_id OR NEW.stamped_since <> OLD.stamped_since THEN
        RAISE EXCEPTION 'a shard keeps its number and its stamping time'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
