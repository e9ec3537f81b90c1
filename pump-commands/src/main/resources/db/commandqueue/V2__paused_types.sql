-- Cluster-wide pauses of command types (issue 18): every pump's claim skips a type listed here,
-- whatever process it runs in. Written by CommandQueue.pauseType / resumeType and `pump pause`.
CREATE TABLE "${schema}".paused_types (
    message_type text        PRIMARY KEY,
    paused_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason       text
);
