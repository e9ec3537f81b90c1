-- A claim marks the row it serves: claimed_by, the claiming driver (a random number per driver
-- object, so a restarted process never matches its predecessor); claimed_us, the database clock
-- in microseconds when the claim moved the checkpoint.
--
-- The pump's workers share one round-robin cursor per driver. A claim reads the cursor, then its
-- statement runs; if another worker of the same driver claims the next row meanwhile and commits,
-- the first claim's statement finds that row free and still pending, and would serve its stream
-- twice in a row. With the marks the statement skips a row that its own driver claimed after the
-- latest claim the driver knew of when it read the cursor. Neither column is indexed, so a claim's
-- update stays a HOT update.
ALTER TABLE "${flyway:defaultSchema}".handler_checkpoints
    ADD COLUMN claimed_by bigint,
    ADD COLUMN claimed_us bigint;
