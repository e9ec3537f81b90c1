-- Issue 14: a delivery's checkpoint update must not add index entries.
--
-- Before, every served row took a new turn (an indexed column) and its checkpoint_offset moved (a
-- column of the pending index's predicate), so each update was non-HOT: it added an entry to every
-- index of the table. The pending index grew by one dead entry per delivery until a vacuum, and
-- each claim walked them (a bitmap scan over 18,000 entries for 16 live rows, 4 ms, in a
-- PostgreSQL 15 auto_explain log of the batch-1 catch-up).
--
-- Now the pending index's predicate reads a stored generated column, which only changes when the
-- row stops (or starts) being pending, and a served row keeps its turn: the pump walks the turns
-- with a cursor of its own (docs/eventstream.md, "Fair service"). An update that moves a
-- checkpoint within a backlog changes no indexed value, so PostgreSQL can make it a HOT update
-- (no index entry), given room on the page: hence the fill factor.
ALTER TABLE "${flyway:defaultSchema}".handler_checkpoints SET (fillfactor = 70);

ALTER TABLE "${flyway:defaultSchema}".handler_checkpoints
    ADD COLUMN pending boolean GENERATED ALWAYS AS (checkpoint_offset < stream_end) STORED;

CREATE INDEX handler_checkpoints_ready_idx
    ON "${flyway:defaultSchema}".handler_checkpoints (handler_key, turn)
    WHERE pending AND parked_at IS NULL;

DROP INDEX "${flyway:defaultSchema}".handler_checkpoints_pending_idx;
