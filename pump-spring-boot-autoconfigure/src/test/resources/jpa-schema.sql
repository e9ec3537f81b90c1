CREATE TABLE IF NOT EXISTS entries (id text PRIMARY KEY, amount int NOT NULL, attempt int NOT NULL);
CREATE TABLE IF NOT EXISTS audit (entry_id text NOT NULL, attempt int NOT NULL);
