-- Issue 14: polls whose cost does not grow with the number of streams, fair (round-robin)
-- service, admin operations linearizable with deliveries, and streams addressed by an
-- application key.

-- The transaction id (xid8 as bigint) of the last transaction that appended to the stream (or
-- created it). A handler scans only the streams changed since its horizon (see handlers).
ALTER TABLE "${flyway:defaultSchema}".streams
    ADD COLUMN changed_xid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);

CREATE INDEX streams_changed_xid_idx ON "${flyway:defaultSchema}".streams (changed_xid);

-- Each checkpoint row now remembers the stream's end as its handler last saw it: the row has a
-- backlog ("is pending") while checkpoint_offset < stream_end. turn orders the pending rows of a
-- handler: a row is served, then goes to the back of the queue (round robin).
-- A row takes a new turn (the column default) whenever it is served, postponed or becomes pending.
CREATE SEQUENCE "${flyway:defaultSchema}".checkpoint_turns;

ALTER TABLE "${flyway:defaultSchema}".handler_checkpoints
    ADD COLUMN stream_end bigint NOT NULL DEFAULT 0 CHECK (stream_end >= 0),
    ADD COLUMN turn       bigint NOT NULL
        DEFAULT nextval('"${flyway:defaultSchema}".checkpoint_turns');

UPDATE "${flyway:defaultSchema}".handler_checkpoints c
   SET stream_end = s.next_offset
  FROM "${flyway:defaultSchema}".streams s
 WHERE s.id = c.stream_id;

CREATE INDEX handler_checkpoints_pending_idx
    ON "${flyway:defaultSchema}".handler_checkpoints (handler_key, turn)
    WHERE checkpoint_offset < stream_end AND parked_at IS NULL;

-- One row per handler key. horizon: every stream changed by a transaction with an id at or above
-- it may hold events the handler's rows do not know of yet; deferred: streams whose rows were held
-- by a delivery at the last refresh. Refreshing and creating checkpoint rows hold this row's lock,
-- and so do reset, setCheckpoint and resume: they cannot miss a row being created.
CREATE TABLE "${flyway:defaultSchema}".handlers (
    handler_key    text        PRIMARY KEY,
    horizon        bigint      NOT NULL DEFAULT 0,
    deferred       bigint[]    NOT NULL DEFAULT '{}',
    start_position text        NOT NULL DEFAULT 'BEGINNING',
    registered_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Handlers that read before this migration: horizon 0 makes their first refresh look at every
-- stream once, tracking the ones they had not started (from offset 0, as before).
INSERT INTO "${flyway:defaultSchema}".handlers (handler_key)
SELECT DISTINCT handler_key FROM "${flyway:defaultSchema}".handler_checkpoints;

-- Streams addressed by the application's own key (an aggregate id).
CREATE TABLE "${flyway:defaultSchema}".stream_keys (
    stream_key text   PRIMARY KEY,
    -- No foreign key: tools and tests truncate streams alone. The key's row is written in the
    -- transaction that creates its stream.
    stream_id  bigint NOT NULL UNIQUE
);
