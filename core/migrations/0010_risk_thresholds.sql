-- 0010: per-event bot-risk thresholds (docs/edge.md#the-built-in-risk-scorer), set by an
-- operator in the console or with PATCH /api/ops/events/{id}/queue.
--
-- The score (1..100) at which each band of the built-in scorer starts: raised (more
-- proof of work), high (much more), refused (403 risk_refused). NULL: that band is off;
-- all NULL (the default): every join is low risk, as before this migration. The bands
-- that are set ascend. Only the edge reads them; they are not in the event document.

ALTER TABLE events
    ADD COLUMN risk_raised smallint CHECK (risk_raised BETWEEN 1 AND 100),
    ADD COLUMN risk_high smallint CHECK (risk_high BETWEEN 1 AND 100),
    ADD COLUMN risk_refused smallint CHECK (risk_refused BETWEEN 1 AND 100),
    ADD CONSTRAINT events_risk_ascending CHECK (
        risk_raised < coalesce(risk_high, risk_refused, 101)
        AND risk_high < coalesce(risk_refused, 101));
