-- name: insert_account
INSERT INTO accounts (email, password_hash) VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING account_id, email, created_at;

-- name: account_by_email
SELECT account_id, password_hash FROM accounts WHERE lower(email) = lower($1);

-- name: account_by_id
SELECT account_id, email, created_at FROM accounts WHERE account_id = $1;

-- name: update_password_hash
-- A hash in an outdated format or with outdated parameters, replaced after a
-- successful sign-in; only if nobody changed it meanwhile.
UPDATE accounts SET password_hash = $2 WHERE account_id = $1 AND password_hash = $3;
