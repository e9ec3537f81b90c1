-- Priorities (docs/commands.md, "Priorities"): a command's priority, 0 (the default) to 9, is a head
-- start of one minute per level. The claim serves a type's due commands in the order of claim_rank,
-- the due time less the head start: a command of priority 9 goes before the priority-0
-- commands that became due less than nine minutes before it, and a command that has waited k
-- minutes goes before every command of priority up to k levels higher that becomes due later.
-- Nothing waits forever: aging bounds the wait of the lowest priority.
--
-- claim_rank is a generated column, so every statement that writes deliver_at (enqueue, the
-- postponement and parking of a claim, the claim and heartbeat of a lease, the retry of a dead
-- letter) keeps it right. A generated column needs an immutable expression, and timestamptz minus
-- interval is only stable (an interval of days or months depends on the session's time zone). The
-- expression subtracts the minutes from the due time read as UTC (timezone(text, timestamptz),
-- timestamp minus interval and timezone(text, timestamp) are all immutable) and reads the result
-- back as UTC: whole minutes in a zone without offsets, the same instant as due minus the minutes
-- in any session time zone. It is built-in operators only, evaluated inline on every write: a SQL
-- function here would not be inlined (its body is stable) and would cost a function call per row.
-- Adding the column rewrites the table once.
ALTER TABLE "${schema}".commands
    ADD COLUMN priority smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9),
    ADD COLUMN claim_rank timestamptz GENERATED ALWAYS AS
        (((deliver_at AT TIME ZONE 'UTC') - pg_catalog.make_interval(mins => priority))
            AT TIME ZONE 'UTC') STORED;

-- Acquisition: per type, the lowest rank first. A due command's rank is at most now, so the scan
-- is one index range (message_type = ? AND claim_rank <= now) read in order from its head. A
-- command whose head start has begun but which is not due yet (rank <= now < deliver_at: a delayed
-- or postponed command of priority above 0 due within its head start) is skipped on the index
-- tuple by the third column, without a visit to the table. The index replaces commands_due.
CREATE INDEX commands_ranked ON "${schema}".commands (message_type, claim_rank, deliver_at);
DROP INDEX "${schema}".commands_due;

-- A parked command keeps its priority, and a retry brings it back with it.
ALTER TABLE "${schema}".dead_letters
    ADD COLUMN priority smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9);

-- A schedule's commands are enqueued with the priority of its definition.
ALTER TABLE "${schema}".schedules
    ADD COLUMN priority smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9);
