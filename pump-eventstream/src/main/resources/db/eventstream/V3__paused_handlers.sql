-- Cluster-wide pauses of event handler keys (issue 18): every pump's claim of a handler listed
-- here finds nothing, whatever process it runs in. Written by EventStore.pauseHandler /
-- resumeHandler and `pump pause --handler`. A separate table (not a column of handlers) so a key
-- can be paused before its first pump registered it.
CREATE TABLE "${flyway:defaultSchema}".paused_handlers (
    handler_key text        PRIMARY KEY,
    paused_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason      text
);
