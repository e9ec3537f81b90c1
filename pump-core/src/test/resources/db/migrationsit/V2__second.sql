-- MigrationsIT: a second migration, so "applied once" means 2 for one caller and 0 for the others.
CREATE TABLE "${schema}".second (id bigint PRIMARY KEY REFERENCES "${schema}".first (id));
