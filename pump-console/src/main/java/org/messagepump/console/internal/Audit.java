package org.messagepump.console.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit trail: the table {@code <schema>.audit} (one row per operator action: when, who, from
 * where, the action, every target, the result), written in the action's own transaction, so an
 * action and its record commit together or not at all; and the same entry as one INFO line on the
 * logger {@value #LOGGER}, every value quoted and escaped ({@link AuditLine}). Rows older than the
 * retention are deleted, at most once an hour.
 */
public final class Audit {

  /** The logger of the audit lines and of the refused requests. */
  public static final String LOGGER = "org.messagepump.console.audit";

  /** Targets written into one log line at most (the row holds all of them). */
  static final int LOGGED_TARGETS = 1_000;

  private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
  private static final long PRUNE_EVERY_MS = 3_600_000;
  private static final Field<Long> ID = DSL.field(DSL.name("id"), SQLDataType.BIGINT);
  private static final Field<Instant> AT = DSL.field(DSL.name("at"), SQLDataType.INSTANT);
  private static final Field<String> ACTOR = DSL.field(DSL.name("actor"), SQLDataType.CLOB);
  private static final Field<String> SOURCE = DSL.field(DSL.name("source"), SQLDataType.CLOB);
  private static final Field<String> ACTION = DSL.field(DSL.name("action"), SQLDataType.CLOB);
  private static final Field<String[]> TARGETS =
      DSL.field(DSL.name("targets"), SQLDataType.CLOB.getArrayDataType());
  private static final Field<String> RESULT = DSL.field(DSL.name("result"), SQLDataType.CLOB);

  /** One audited action. */
  public record Entry(
      long id,
      Instant at,
      String actor,
      String from,
      String action,
      List<String> targets,
      String result) {}

  private final DataSource dataSource;
  private final String schema;
  private final Table<Record> table;
  private final Duration retention;
  private final AtomicLong prunedAt = new AtomicLong();

  /** The trail in {@code schema} (checked by the caller); rows kept for {@code retention}. */
  public Audit(DataSource dataSource, String schema, Duration retention) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.table = DSL.table(DSL.name(schema, "audit"));
    this.retention = retention;
  }

  /** The table's qualified name, for messages. */
  public String tableName() {
    return schema + ".audit";
  }

  /** Writes what an action did in its own transaction; returns the entry with id and time. */
  public Entry write(Tx tx, String actor, String from, Actions.Done done) {
    return write(tx, actor, from, done.action(), done.targets(), done.result());
  }

  private Entry write(
      Tx tx, String actor, String from, String action, List<String> targets, String result) {
    Record r =
        tx.dsl()
            .insertInto(table)
            .set(ACTOR, actor)
            .set(SOURCE, from)
            .set(ACTION, action)
            .set(TARGETS, targets.toArray(String[]::new))
            .set(RESULT, result)
            .returningResult(ID, AT)
            .fetchOne();
    return new Entry(r.get(ID), r.get(AT), actor, from, action, List.copyOf(targets), result);
  }

  /**
   * Records an operator's action that was refused or failed (nothing changed, so it has a
   * transaction of its own); a trail that cannot be written is logged, never thrown.
   */
  public void refused(String actor, String from, String action, List<String> targets, String why) {
    try {
      Entry e =
          Transactions.inNew(
              dataSource,
              "writing the console's audit trail",
              tx -> write(tx, actor, from, action, targets, why));
      log(e);
    } catch (DatabaseException e) {
      LOG.warn(
          "console audit: could not write to {}: {}; actor={} from={} action={} result={}",
          tableName(),
          e.getMessage(),
          AuditLine.quote(actor),
          AuditLine.quote(from),
          AuditLine.quote(action),
          AuditLine.quote(why));
    }
  }

  /** Logs a committed entry as one line. */
  public static void log(Entry e) {
    LOG.info("{}", line(e));
  }

  /** The log line of an entry: every value quoted and escaped, so it stays one line. */
  static String line(Entry e) {
    List<String> shown = e.targets();
    String more = "";
    if (shown.size() > LOGGED_TARGETS) {
      more = " (and " + (shown.size() - LOGGED_TARGETS) + " more in row " + e.id() + ")";
      shown = shown.subList(0, LOGGED_TARGETS);
    }
    StringBuilder b =
        new StringBuilder("console audit: id=")
            .append(e.id())
            .append(" actor=")
            .append(AuditLine.quote(e.actor()))
            .append(" from=")
            .append(AuditLine.quote(e.from()))
            .append(" action=")
            .append(AuditLine.quote(e.action()))
            .append(" targets=[");
    for (int i = 0; i < shown.size(); i++) {
      b.append(i == 0 ? "" : ",").append(AuditLine.quote(shown.get(i)));
    }
    return b.append(']')
        .append(more)
        .append(" result=")
        .append(AuditLine.quote(e.result()))
        .toString();
  }

  /** Up to {@code limit} entries, newest first, older than entry {@code before} (null: newest). */
  public List<Entry> page(Long before, int limit) {
    return Transactions.inNew(
        dataSource,
        "reading the console's audit trail",
        tx -> {
          Condition older = before == null ? DSL.noCondition() : ID.lt(before);
          List<Entry> out = new ArrayList<>();
          for (Record r :
              tx.dsl()
                  .select(ID, AT, ACTOR, SOURCE, ACTION, TARGETS, RESULT)
                  .from(table)
                  .where(older)
                  .orderBy(ID.desc())
                  .limit(limit)
                  .fetch()) {
            out.add(
                new Entry(
                    r.get(ID),
                    r.get(AT),
                    r.get(ACTOR),
                    r.get(SOURCE),
                    r.get(ACTION),
                    Arrays.asList(r.get(TARGETS)),
                    r.get(RESULT)));
          }
          return out;
        });
  }

  /** Deletes entries older than the retention, at most once an hour per process. */
  void pruneNow() {
    Transactions.inNew(dataSource, "pruning the console's audit trail", tx -> prune(tx.dsl()));
  }

  /** Prunes when the last pruning of this process is an hour old. */
  public void pruneSometimes() {
    long now = System.currentTimeMillis();
    long last = prunedAt.get();
    if (now - last >= PRUNE_EVERY_MS && prunedAt.compareAndSet(last, now)) {
      try {
        pruneNow();
      } catch (DatabaseException e) {
        LOG.warn("console audit: pruning {} failed: {}", tableName(), e.getMessage());
      }
    }
  }

  private int prune(DSLContext dsl) {
    return dsl.deleteFrom(table)
        .where(AT.lt(DatabaseClock.statementTime().minus(DSL.val(DayToSecond.valueOf(retention)))))
        .execute();
  }
}
