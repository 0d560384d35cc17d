-- 0011: each event's venue time zone (docs/api.md, the event's time_zone).
--
-- An IANA name (Europe/Berlin, America/New_York), checked against the time-zone
-- database when the event is created; 'UTC' for events created before this migration
-- and for those created without one. The API keeps every time in UTC; the pages show
-- times in this zone, and the shopper's own beside them when it differs.

ALTER TABLE events ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'
    CHECK (length(time_zone) BETWEEN 1 AND 64);
