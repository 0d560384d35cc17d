-- onsale_ga_short: the 409 body of a GA hold attempt that found too few
-- places: sold_out when none is left, else insufficient_quantity, both with
-- what is left and what was asked for. Called by onsale_ga_hold.

CREATE OR REPLACE FUNCTION onsale_ga_short(p_left integer, p_quantity integer)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
        'code', CASE WHEN p_left <= 0 THEN 'sold_out' ELSE 'insufficient_quantity' END,
        'available', greatest(p_left, 0), 'requested', p_quantity)
$$;
