-- name: issue_tickets
SELECT onsale_issue_tickets($1);

-- name: issued_here
-- Tickets written by the current transaction (the caller's, just now).
SELECT count(*) FROM tickets WHERE order_id = $1 AND xmin = pg_current_xact_id()::xid;
