-- 0009: a random draw that even the operator cannot predict
-- (docs/edge.md#a-draw-nobody-can-predict).
--
-- events.beacon_commitment: published with draw_commitment, before the pre-queue opens:
-- the public randomness beacon's chain (its name, hash, public key, scheme, period and
-- genesis) and the round the draw will mix into the seed, the first round due after
-- the sale opens. NULL: the draw is by the operator's seed alone (ONSALE_BEACON=off).
-- events.draw_closed_at: when the pre-queue closed (the first draw attempt; a repeat
-- keeps it). The round drawn with is the committed one, or the first due after this if
-- the pre-queue closed late.
-- events.beacon_outcome: set once, at the draw: the round as the chain published it
-- (number, signature, previous signature, randomness), or the operator's fallback to
-- the seed alone (reason, when) after the round stayed unpublished. Whichever is
-- written first stands.

ALTER TABLE events
    ADD COLUMN beacon_commitment jsonb,
    ADD COLUMN draw_closed_at timestamptz,
    ADD COLUMN beacon_outcome jsonb;
