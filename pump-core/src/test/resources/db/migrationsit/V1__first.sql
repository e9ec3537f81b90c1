-- MigrationsIT: a first migration slow enough that concurrent callers overlap.
SELECT pg_sleep(0.5);
CREATE TABLE "${schema}".first (id bigint PRIMARY KEY);
