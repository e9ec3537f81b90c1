-- pump-balancer: partition-balanced messages (see BALANCER.md). The schema is the one passed to
-- Balancer.migrate (default balancer), through Flyway's defaultSchema placeholder.

-- Rotation order of keys within a group: a key takes nextval when it joins and whenever it is served,
-- so the ready key with the lowest rotation is the one that waited longest.
CREATE SEQUENCE ${flyway:defaultSchema}.rotation AS bigint;

CREATE TABLE ${flyway:defaultSchema}.messages (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partition_group text        NOT NULL,
    partition_key   text        NOT NULL,
    content         bytea       NOT NULL,
    properties      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    received_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer     NOT NULL DEFAULT 0,
    CONSTRAINT messages_properties_object CHECK (jsonb_typeof(properties) = 'object')
);

-- The head of a key (ORDER BY id LIMIT 1), per-key and per-group counts.
CREATE INDEX messages_key_order ON ${flyway:defaultSchema}.messages (partition_group, partition_key, id);

-- One row per key that has messages (or a lease). Producers hold FOR KEY SHARE on it while they
-- store; consumers lock it FOR NO KEY UPDATE while they handle the key's head message.
CREATE TABLE ${flyway:defaultSchema}.partitions (
    partition_group  text        NOT NULL,
    partition_key    text        NOT NULL,
    rotation         bigint      NOT NULL,
    failures         integer     NOT NULL DEFAULT 0,
    resume_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_message_id bigint,
    lease_token      uuid,
    lease_owner      text,
    lease_until      timestamptz,
    parked_at        timestamptz,
    parked_reason    text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (partition_group, partition_key),
    CONSTRAINT partitions_lease_complete CHECK (
        (lease_message_id IS NULL AND lease_token IS NULL AND lease_until IS NULL)
        OR (lease_message_id IS NOT NULL AND lease_token IS NOT NULL AND lease_until IS NOT NULL))
);

-- Acquisition: the ready key of a group with the lowest rotation.
CREATE INDEX partitions_ready ON ${flyway:defaultSchema}.partitions (partition_group, rotation)
    WHERE lease_message_id IS NULL AND parked_at IS NULL;

-- The reaper: leases of a group by expiry.
CREATE INDEX partitions_leased ON ${flyway:defaultSchema}.partitions (partition_group, lease_until)
    WHERE lease_message_id IS NOT NULL;

-- Parked keys of a group (operations, the parked gauge).
CREATE INDEX partitions_parked ON ${flyway:defaultSchema}.partitions (partition_group, parked_at)
    WHERE parked_at IS NOT NULL;
