-- Recurring commands: one row per schedule, defined in code (CommandQueue.schedules().define) and
-- kept across restarts. A check locks the due rows (FOR UPDATE SKIP LOCKED), enqueues one command
-- per tick and moves next_fire_at on, all in one transaction: each tick is enqueued once, whatever
-- the number of schedulers.
CREATE TABLE "${schema}".schedules (
    name             text        PRIMARY KEY,
    cron             text,
    interval_ms      bigint      CHECK (interval_ms >= 1000),
    zone             text        NOT NULL,
    -- Interval ticks fall on anchor_at + k * interval.
    anchor_at        timestamptz NOT NULL,
    -- Missed ticks fired on catch-up (0: skipped), and how late a tick may be to count as on time.
    catch_up         integer     NOT NULL CHECK (catch_up >= 0),
    misfire_grace_ms bigint      NOT NULL CHECK (misfire_grace_ms >= 0),
    message_type     text        NOT NULL,
    payload          bytea       NOT NULL,
    correlation_id   text,
    headers          jsonb       NOT NULL DEFAULT '{}'::jsonb,
    paused_at        timestamptz,
    -- The next tick to fire; null when the expression matches no further time.
    next_fire_at     timestamptz,
    last_fired_at    timestamptz,
    fired            bigint      NOT NULL DEFAULT 0,
    triggered        bigint      NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((cron IS NULL) <> (interval_ms IS NULL))
);

-- The check: the running schedules whose next tick is due, soonest first.
CREATE INDEX schedules_due ON "${schema}".schedules (next_fire_at) WHERE paused_at IS NULL;
