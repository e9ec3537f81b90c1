-- Cluster-wide pauses of partition groups (issue 18): while a group is listed here no pump of any
-- process acquires its messages (storing goes on). Written by MessageBalancer.pauseGroup /
-- resumeGroup and `pump pause --group`. Its own table and migration, so the acquisition
-- statement and the partitions table are untouched.
CREATE TABLE ${flyway:defaultSchema}.paused_groups (
    partition_group text        PRIMARY KEY,
    paused_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason          text
);
