package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.ATTEMPTS;
import static org.messagepump.commands.internal.CommandTables.CLOCK_TIMESTAMP;
import static org.messagepump.commands.internal.CommandTables.DELIVER_AT;
import static org.messagepump.commands.internal.CommandTables.FAILURES;
import static org.messagepump.commands.internal.CommandTables.HANDLING_MICROS;
import static org.messagepump.commands.internal.CommandTables.IDEMPOTENCY_KEY;
import static org.messagepump.commands.internal.CommandTables.LAST_ERROR;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.RELEASE_KEY;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.StatementCache;

/**
 * The statements of a delivery's outcome, for one driver: the re-insert of a postponed command
 * (transactional mode), the dead letter of a parked one, the release of the keys that live while
 * their command is pending, and the history of handled commands. Each is built with jOOQ once and
 * rendered once through {@link StatementCache} (the re-insert and the dead letter in two shapes:
 * the enqueue time as an instant, or as the text of a time that is not finite), then run through
 * JDBC with every value bound. The key release and the history take their rows as arrays, so their
 * text is the same whatever the batch and the PostgreSQL driver keeps it prepared.
 */
public final class DeliveryStatements {

  private static final Param<UUID[]> IDS =
      StatementCache.parameter("ids", SQLDataType.UUID.array());
  private static final Param<String[]> KEYS =
      StatementCache.parameter("keys", SQLDataType.CLOB.array());

  /** By {@link CommandQueries#rawEnqueuedAt}: false at 0, true at 1. */
  private final StatementCache.Statement[] reinsert = new StatementCache.Statement[2];

  private final StatementCache.Statement[] park = new StatementCache.Statement[2];
  private final StatementCache.Statement releaseKeys;
  private final StatementCache.Statement history;

  /** The statements on the tables of {@code t}. */
  public DeliveryStatements(CommandTables t) {
    for (int i = 0; i < 2; i++) {
      boolean raw = i == 1;
      reinsert[i] =
          StatementCache.render(
              dsl ->
                  dsl.insertInto(
                          t.commands,
                          CommandQueries.columns(
                              FAILURES, DELIVER_AT, IDEMPOTENCY_KEY, RELEASE_KEY))
                      .values(
                          CommandQueries.storedParameters(
                              raw,
                              StatementCache.parameter("failures", FAILURES.getDataType()),
                              CommandTables.after(
                                  StatementCache.parameter("delay", SQLDataType.VARCHAR)),
                              StatementCache.parameter("key", IDEMPOTENCY_KEY.getDataType()),
                              StatementCache.parameter("release", RELEASE_KEY.getDataType()))),
              names("failures", "delay", "key", "release"));
      park[i] =
          StatementCache.render(
              dsl ->
                  dsl.insertInto(t.deadLetters, DeadLetterQueries.COLUMNS)
                      .values(
                          CommandQueries.storedParameters(
                              raw,
                              StatementCache.parameter("failures", FAILURES.getDataType()),
                              StatementCache.parameter("error", LAST_ERROR.getDataType()),
                              CLOCK_TIMESTAMP)),
              names("failures", "error"));
    }
    // A key row matches both its key and its command, so a key another command holds now is left
    // alone.
    releaseKeys =
        StatementCache.render(
            dsl ->
                dsl.deleteFrom(t.idempotencyKeys)
                    .where(IDEMPOTENCY_KEY.eq(DSL.any(KEYS)))
                    .and(MESSAGE_ID.eq(DSL.any(IDS))),
            "keys",
            "ids");
    history =
        StatementCache.render(
            dsl -> historyInsert(dsl, t), "ids", "types", "keys", "attempts", "micros");
  }

  private static String[] names(String... more) {
    String[] all = CommandQueries.STORED_PARAMETERS.toArray(new String[0]);
    String[] out = java.util.Arrays.copyOf(all, all.length + more.length);
    System.arraycopy(more, 0, out, all.length, more.length);
    return out;
  }

  /**
   * {@code INSERT … SELECT … FROM unnest(?, …) AS u(…)} ({@link StatementCache#rows}): one row per
   * element of five arrays, one per column; the database clock stamps them.
   */
  private static org.jooq.Query historyInsert(org.jooq.DSLContext dsl, CommandTables t) {
    Table<?> u =
        StatementCache.rows(
            false,
            "u",
            List.of("id", "type", "key", "attempts", "micros"),
            IDS,
            StatementCache.parameter("types", SQLDataType.CLOB.array()),
            KEYS,
            StatementCache.parameter("attempts", SQLDataType.INTEGER.array()),
            StatementCache.parameter("micros", SQLDataType.BIGINT.array()));
    List<Field<?>> columns =
        List.of(MESSAGE_ID, MESSAGE_TYPE, IDEMPOTENCY_KEY, ATTEMPTS, HANDLING_MICROS);
    return dsl.insertInto(t.commandHistory, columns)
        .select(
            dsl.select(
                    DSL.field(DSL.name("u", "id"), MESSAGE_ID.getDataType()),
                    DSL.field(DSL.name("u", "type"), MESSAGE_TYPE.getDataType()),
                    DSL.field(DSL.name("u", "key"), IDEMPOTENCY_KEY.getDataType()),
                    DSL.field(DSL.name("u", "attempts"), ATTEMPTS.getDataType()),
                    DSL.field(DSL.name("u", "micros"), HANDLING_MICROS.getDataType()))
                .from(u));
  }

  /**
   * Puts a claimed command back (transactional mode: the claim deleted it) with a new failure
   * count, due {@code delay} from now by the database clock, with its key and priority.
   */
  public void reinsert(Connection c, Delivery d, UUID id, int failures, Duration delay)
      throws SQLException {
    CommandQueries.Claimed claimed =
        d.driverState() instanceof CommandQueries.Claimed cl ? cl : null;
    statement(reinsert, d)
        .executeUpdate(
            c,
            CommandQueries.stored(
                d,
                id,
                failures,
                CommandTables.interval(delay == null ? Duration.ZERO : delay),
                claimed == null ? null : claimed.idempotencyKey(),
                claimed != null && claimed.releaseKey()));
  }

  /**
   * Parks a claimed command (its row is already deleted) from its delivery; {@code last_error} is
   * the failure reason made safe to store ({@link Inputs#reason}), the parking time the database
   * clock's.
   */
  public void park(Connection c, Delivery d, UUID id, int failures, String reason)
      throws SQLException {
    statement(park, d)
        .executeUpdate(c, CommandQueries.stored(d, id, failures, Inputs.reason(reason)));
  }

  private static StatementCache.Statement statement(StatementCache.Statement[] byRaw, Delivery d) {
    return byRaw[CommandQueries.rawEnqueuedAt(d) ? 1 : 0];
  }

  /**
   * Deletes the keys of commands whose key lives while they are pending ({@code ids} and {@code
   * keys} pairwise), in the transaction of their handling or parking.
   */
  public void releaseKeys(Connection c, List<UUID> ids, List<String> keys) throws SQLException {
    releaseKeys.executeUpdate(c, keys.toArray(String[]::new), ids.toArray(UUID[]::new));
  }

  /** Writes {@code rows} (at least one) in one statement; the database clock stamps them. */
  public void record(Connection c, List<RetentionQueries.HistoryRow> rows) throws SQLException {
    int n = rows.size();
    UUID[] ids = new UUID[n];
    String[] types = new String[n];
    String[] keys = new String[n];
    Integer[] attempts = new Integer[n];
    Long[] micros = new Long[n];
    for (int i = 0; i < n; i++) {
      RetentionQueries.HistoryRow r = rows.get(i);
      ids[i] = r.messageId();
      types[i] = r.type();
      keys[i] = r.idempotencyKey();
      attempts[i] = r.attempts();
      micros[i] = r.handlingMicros();
    }
    history.executeUpdate(c, ids, types, keys, attempts, micros);
  }
}
