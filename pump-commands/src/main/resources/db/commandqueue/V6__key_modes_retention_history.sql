-- Idempotency key modes, retention and history (docs/commands.md).
--
-- A key deduplicates forever (expires_at null, the default), while its command is pending (the
-- command row carries the key with release_key set, and the handling or parking transaction
-- deletes the key), or until expires_at: an enqueue meeting an expired key takes it over in its
-- insert (ON CONFLICT … DO UPDATE … WHERE expires_at <= now), and the retention job deletes
-- expired keys. Adding a nullable column, or one with a constant default, rewrites no rows.
ALTER TABLE "${schema}".idempotency_keys
    ADD COLUMN expires_at timestamptz;

-- The retention job's scan: expired keys only, so forever keys cost this index nothing.
CREATE INDEX idempotency_keys_expiry ON "${schema}".idempotency_keys (expires_at)
    WHERE expires_at IS NOT NULL;

-- A pending command's key (any mode), for the history, and whether its handling or parking
-- releases the key.
ALTER TABLE "${schema}".commands
    ADD COLUMN idempotency_key text,
    ADD COLUMN release_key     boolean NOT NULL DEFAULT false;

-- The retention job's scan of dead letters by age, whatever their type.
CREATE INDEX dead_letters_age ON "${schema}".dead_letters (parked_at);

-- Handled commands, written in the handling transaction when the queue keeps a history.
CREATE TABLE "${schema}".command_history (
    history_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id      uuid        NOT NULL,
    message_type    text        NOT NULL,
    idempotency_key text,
    attempts        integer     NOT NULL CHECK (attempts >= 1),
    handling_micros bigint      NOT NULL CHECK (handling_micros >= 0),
    handled_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Newest first for the console's pages, oldest first for the retention job.
CREATE INDEX command_history_handled ON "${schema}".command_history (handled_at, history_id);
