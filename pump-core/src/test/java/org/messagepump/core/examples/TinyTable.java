package org.messagepump.core.examples;

/** The tables {@link TinyTableDriver} pumps: docs/writing-a-driver.md shows the same SQL. */
public final class TinyTable {

  /** The schema the driver needs (run once). */
  public static final String SCHEMA =
      "CREATE TABLE work (id bigserial PRIMARY KEY, body text NOT NULL, failures int NOT NULL"
          + " DEFAULT 0, due_at timestamptz NOT NULL DEFAULT clock_timestamp(), postponed_at"
          + " timestamptz);"
          + " CREATE INDEX work_due ON work (due_at, id); CREATE TABLE work_parked (id bigint"
          + " PRIMARY KEY, body text NOT NULL, failures int NOT NULL, reason text NOT NULL)";

  private TinyTable() {}
}
