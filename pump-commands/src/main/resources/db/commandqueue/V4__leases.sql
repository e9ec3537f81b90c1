-- Lease mode (docs/leases.md): a command whose type is handled in lease mode stays in this table
-- while its handler runs, with no transaction held. Its claim sets leased_by and a new lease_token
-- (the fencing token) and moves deliver_at to the lease's expiry; heartbeats move it on. An expired
-- lease is therefore simply due again, found by the same index as any due command. Completion,
-- postponement and parking match message_id and lease_token, so a holder whose lease another claim
-- took changes nothing. Adding nullable columns rewrites no rows.
ALTER TABLE "${schema}".commands
    ADD COLUMN lease_token bigint,
    ADD COLUMN leased_by   text;

-- Fencing tokens: one sequence for the queue, so a token is never issued twice, whatever happens
-- to the row (a dead letter retried, a command deleted and enqueued again).
CREATE SEQUENCE "${schema}".lease_tokens;
