-- Event streams: events appended with gap-free offsets, read by any number of handlers,
-- each keeping one checkpoint per stream. The schema is the store's (EventStore.migrate).

-- A stream and the offset its next event gets. Writers lock the row (FOR NO KEY UPDATE) while
-- they append, so offsets are assigned and committed in order; readers never lock it.
CREATE TABLE "${flyway:defaultSchema}".streams (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    next_offset bigint      NOT NULL DEFAULT 0 CHECK (next_offset >= 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX streams_next_offset_idx ON "${flyway:defaultSchema}".streams (next_offset);

-- The events; (stream_id, stream_offset) is unique and is the reading order.
CREATE TABLE "${flyway:defaultSchema}".events (
    message_id     uuid        PRIMARY KEY,
    stream_id      bigint      NOT NULL REFERENCES "${flyway:defaultSchema}".streams (id),
    stream_offset  bigint      NOT NULL CHECK (stream_offset >= 0),
    type           text        NOT NULL,
    correlation_id text,
    causation_id   text,
    headers        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    payload        bytea       NOT NULL,
    recorded_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT events_stream_offset_key UNIQUE (stream_id, stream_offset)
);

-- Which event types each stream holds and the offset of the latest one: lets a handler with a
-- type filter see at once that a stream holds nothing for it past its checkpoint.
CREATE TABLE "${flyway:defaultSchema}".stream_types (
    stream_id     bigint NOT NULL REFERENCES "${flyway:defaultSchema}".streams (id),
    type          text   NOT NULL,
    latest_offset bigint NOT NULL CHECK (latest_offset >= 0),
    PRIMARY KEY (stream_id, type)
);

-- One row per (handler, stream): the offset of the next event the handler has to look at, its
-- failures on that stream, when it may resume, and whether it is parked.
CREATE TABLE "${flyway:defaultSchema}".handler_checkpoints (
    handler_key       text        NOT NULL,
    stream_id         bigint      NOT NULL REFERENCES "${flyway:defaultSchema}".streams (id),
    checkpoint_offset bigint      NOT NULL DEFAULT 0 CHECK (checkpoint_offset >= 0),
    failures          integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    resume_at         timestamptz NOT NULL DEFAULT 'epoch',
    parked_at         timestamptz,
    parked_reason     text,
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (handler_key, stream_id)
);

CREATE INDEX handler_checkpoints_parked_idx
    ON "${flyway:defaultSchema}".handler_checkpoints (handler_key)
    WHERE parked_at IS NOT NULL;
