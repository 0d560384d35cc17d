-- onsale_placement_notify: tells every process that an event's placement changed (trigger on event_placement):
-- NOTIFY onsale_placement with the event id; each process refreshes its cached
-- placement (onsale/kernel/shards.py).
CREATE OR REPLACE FUNCTION onsale_placement_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('onsale_placement', COALESCE(NEW.event_id, OLD.event_id)::text);
    RETURN NULL;
END $$;
