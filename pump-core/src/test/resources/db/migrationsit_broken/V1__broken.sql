-- MigrationsIT: a migration that fails, to show the lock is released anyway.
CREATE TABLE "${schema}".broken (id no_such_type);
