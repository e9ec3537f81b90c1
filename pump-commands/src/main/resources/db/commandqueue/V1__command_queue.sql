-- The command queue: pending commands, idempotency keys, dead letters.
-- Flyway runs this with the queue's schema (default `commandqueue`, created by Flyway) as its
-- default schema and as the placeholder `schema` (validated as [a-z_][a-z0-9_]{0,40}, and quoted).

CREATE TABLE "${schema}".commands (
    message_id     uuid        PRIMARY KEY,
    message_type   text        NOT NULL,
    correlation_id text,
    causation_id   text,
    headers        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    payload        bytea       NOT NULL,
    failures       integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    enqueued_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    deliver_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Acquisition: per type, the oldest due first. An index scan on (message_type, deliver_at)
-- reads the head of each type's queue, whatever the size of the backlog.
CREATE INDEX commands_due ON "${schema}".commands (message_type, deliver_at);

-- Idempotency keys dedupe forever: a key outlives its command.
CREATE TABLE "${schema}".idempotency_keys (
    idempotency_key text        PRIMARY KEY,
    message_id      uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Commands parked after too many failures; retried (back into commands) or discarded by operators.
CREATE TABLE "${schema}".dead_letters (
    message_id     uuid        PRIMARY KEY,
    message_type   text        NOT NULL,
    correlation_id text,
    causation_id   text,
    headers        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    payload        bytea       NOT NULL,
    failures       integer     NOT NULL,
    last_error     text,
    enqueued_at    timestamptz NOT NULL,
    parked_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX dead_letters_parked ON "${schema}".dead_letters (message_type, parked_at);
