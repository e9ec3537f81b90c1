package org.messagepump.core.examples;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.DatabaseClock;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;

/**
 * A complete driver over one table, {@code work(id bigserial, body text, failures int, due_at
 * timestamptz)}: the "Writing a driver" example of docs/writing-a-driver.md, also used by the
 * pump's own ITs.
 */
public final class TinyTableDriver implements Driver {

  /** What the user's code does with one row, inside the delivery's transaction. */
  public interface Handler {
    Outcome handle(Tx tx, long id, String body) throws Exception;
  }

  static final Table<Record> WORK = table(DSL.name("work"));
  static final Table<Record> PARKED = table(DSL.name("work_parked"));
  static final Field<Long> ID = field(DSL.name("id"), SQLDataType.BIGINT);
  static final Field<String> BODY = field(DSL.name("body"), SQLDataType.CLOB);
  static final Field<Integer> FAILURES = field(DSL.name("failures"), SQLDataType.INTEGER);
  static final Field<OffsetDateTime> DUE_AT =
      field(DSL.name("due_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  static final Field<OffsetDateTime> POSTPONED_AT =
      field(DSL.name("postponed_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  static final Field<String> REASON = field(DSL.name("reason"), SQLDataType.CLOB);
  // Times other processes must agree on come from the database clock.
  static final Field<OffsetDateTime> NOW = DatabaseClock.nowOffset();

  /** The schema this driver needs (run once). */
  public static final String SCHEMA =
      "CREATE TABLE work (id bigserial PRIMARY KEY, body text NOT NULL,"
          + " failures int NOT NULL DEFAULT 0, due_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
          + " postponed_at timestamptz);"
          + " CREATE INDEX work_due ON work (due_at, id);"
          + " CREATE TABLE work_parked (id bigint PRIMARY KEY, body text NOT NULL, failures int NOT NULL,"
          + " reason text NOT NULL)";

  private final Handler handler;

  public TinyTableDriver(Handler handler) {
    this.handler = handler;
  }

  @Override
  public String name() {
    return "tiny-table";
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) {
    // The row lock is the claim: other pumps skip these rows until this transaction ends.
    List<Delivery> out = new ArrayList<>();
    for (Record r :
        tx.dsl()
            .select(ID, BODY, FAILURES)
            .from(WORK)
            .where(DUE_AT.le(NOW))
            .orderBy(DUE_AT, ID)
            .limit(max)
            .forUpdate()
            .skipLocked()) {
      Envelope envelope =
          new Envelope(
              Long.toString(r.get(ID)),
              "work",
              null,
              null,
              null,
              Map.of(),
              r.get(BODY).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      out.add(Delivery.of(envelope, r.get(FAILURES)));
    }
    return out;
  }

  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    long id = Long.parseLong(delivery.messageId());
    Outcome outcome =
        handler.handle(
            tx,
            id,
            new String(delivery.envelope().payload(), java.nio.charset.StandardCharsets.UTF_8));
    if (outcome instanceof Outcome.Handled) {
      tx.dsl()
          .deleteFrom(WORK)
          .where(ID.eq(id))
          .execute(); // done: remove it in the same transaction
    }
    return outcome;
  }

  @Override
  public java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) {
    // After a rolled-back batch: lock the row again (unless another worker has it) and return it
    // with its current failure count, so the pump can count the failure.
    return tx.dsl()
        .select(ID, BODY, FAILURES)
        .from(WORK)
        .where(ID.eq(Long.parseLong(delivery.messageId())))
        .forUpdate()
        .skipLocked()
        .fetchOptional()
        .map(r -> Delivery.of(delivery.envelope(), r.get(FAILURES)));
  }

  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) {
    tx.dsl()
        .update(WORK)
        .set(FAILURES, failures)
        .set(POSTPONED_AT, NOW)
        .set(DUE_AT, DatabaseClock.afterOffset(delay))
        .where(ID.eq(Long.parseLong(delivery.messageId())))
        .execute();
  }

  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    long id = Long.parseLong(delivery.messageId());
    tx.dsl()
        .insertInto(PARKED)
        .columns(ID, BODY, FAILURES, REASON)
        .select(
            tx.dsl()
                .select(ID, BODY, DSL.val(failures), DSL.val(reason))
                .from(WORK)
                .where(ID.eq(id)))
        .execute();
    tx.dsl().deleteFrom(WORK).where(ID.eq(id)).execute();
  }
}
