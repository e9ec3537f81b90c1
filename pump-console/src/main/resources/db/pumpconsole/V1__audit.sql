-- The operations console's audit trail: one row per operator action (accepted, refused or
-- failed), written in the action's own transaction, so an action and its record commit together.
-- Flyway runs this with the console's schema (default `pumpconsole`) as its default schema.

CREATE TABLE audit (
    id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor   text        NOT NULL,
    source  text        NOT NULL,  -- the client address (and the proxy it came through)
    action  text        NOT NULL,
    targets text[]      NOT NULL,  -- every message id, stream, key or handler acted on
    result  text        NOT NULL
);

-- Retention deletes by age.
CREATE INDEX audit_at ON audit (at);
