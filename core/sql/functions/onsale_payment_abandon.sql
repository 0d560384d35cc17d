-- onsale_payment_abandon: give up on an open authorization past its grace
-- (3-D Secure never finished; core/reconciler.py): create the VOID that,
-- once the provider confirms it, releases the seats (onsale_payment_apply).
-- Returns the VOID operation to send (the existing one if any), NULL if the
-- authorization is no longer open.

CREATE OR REPLACE FUNCTION onsale_payment_abandon(p_operation_id uuid, p_provider_ref text)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_op record;
    v_void uuid;
BEGIN
    SELECT p.* INTO v_op FROM payment_operations p
    WHERE p.operation_id = p_operation_id FOR UPDATE;
    IF v_op.kind <> 'AUTHORIZE' OR v_op.status NOT IN ('PENDING', 'UNKNOWN', 'REQUIRES_ACTION') THEN
        RETURN NULL;
    END IF;
    INSERT INTO payment_operations (order_id, kind, parent_operation_id, amount_minor, currency,
                                    provider_ref)
    VALUES (v_op.order_id, 'VOID', p_operation_id, v_op.amount_minor, v_op.currency,
            coalesce(p_provider_ref, v_op.provider_ref))
    ON CONFLICT DO NOTHING
    RETURNING operation_id INTO v_void;
    IF v_void IS NULL THEN
        SELECT p.operation_id INTO v_void FROM payment_operations p
        WHERE p.parent_operation_id = p_operation_id AND p.kind = 'VOID';
    END IF;
    INSERT INTO payment_events (order_id, operation_id, action, detail)
    VALUES (v_op.order_id, p_operation_id, 'abandoned', jsonb_build_object('void', v_void));
    RETURN v_void;
END $$;
