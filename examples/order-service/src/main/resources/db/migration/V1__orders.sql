-- The order service's own tables, migrated by its own Flyway (spring.flyway.*).
CREATE TABLE order_requests (order_id text PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE orders (order_id text PRIMARY KEY, customer text NOT NULL, amount_cents bigint NOT NULL);
CREATE TABLE customer_totals (customer text PRIMARY KEY, orders int NOT NULL, amount_cents bigint NOT NULL);
CREATE TABLE shipments (order_id text PRIMARY KEY, customer text NOT NULL,
                        shipped_at timestamptz NOT NULL DEFAULT clock_timestamp());
