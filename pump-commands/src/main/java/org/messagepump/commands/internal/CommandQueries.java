package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.CAUSATION_ID;
import static org.messagepump.commands.internal.CommandTables.CLOCK_TIMESTAMP;
import static org.messagepump.commands.internal.CommandTables.COMMANDS;
import static org.messagepump.commands.internal.CommandTables.CORRELATION_ID;
import static org.messagepump.commands.internal.CommandTables.DEAD_LETTERS;
import static org.messagepump.commands.internal.CommandTables.DELIVER_AT;
import static org.messagepump.commands.internal.CommandTables.ENQUEUED_AT;
import static org.messagepump.commands.internal.CommandTables.FAILURES;
import static org.messagepump.commands.internal.CommandTables.HEADERS;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.PAYLOAD;
import static org.messagepump.commands.internal.CommandTables.STATEMENT_TIMESTAMP;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record3;
import org.jooq.SQLDialect;
import org.jooq.Select;
import org.jooq.SelectField;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.commands.QueueDepth;
import org.messagepump.core.Envelope;
import org.messagepump.core.spi.Delivery;

/** The SQL of the pending-commands table: acquire, delete, postpone, depth. */
public final class CommandQueries {

  private static final List<Field<?>> COLUMNS =
      List.of(
          MESSAGE_ID,
          MESSAGE_TYPE,
          CORRELATION_ID,
          CAUSATION_ID,
          HEADERS,
          PAYLOAD,
          FAILURES,
          ENQUEUED_AT,
          DELIVER_AT);

  private CommandQueries() {}

  /**
   * The acquire statement: up to {@code max} due commands of {@code types}, row-locked with {@code
   * SKIP LOCKED}, oldest first within a type. One type: one index range scan on {@code
   * (message_type, deliver_at)}. Several types: a lateral join over the type names, one such scan
   * per type, taken in the order given until {@code max} rows are found — the scans run lazily, so
   * only returned rows are locked, and the cost depends on {@code max} and the number of types,
   * never on the backlog. The caller rotates the order of the types between calls for fairness.
   */
  public static Select<Record> acquire(DSLContext dsl, List<String> types, int max) {
    return acquire(dsl, types, max, COLUMNS);
  }

  /** The acquire statement returning only {@code columns} of the locked rows. */
  private static Select<Record> acquire(
      DSLContext dsl, List<String> types, int max, List<Field<?>> columns) {
    if (types.size() == 1) {
      return headOf(dsl, DSL.val(types.get(0)), max, columns);
    }
    Table<?> names = DSL.unnest(DSL.val(types.toArray(String[]::new))).as("t", "type");
    Field<String> name = DSL.field(DSL.name("t", "type"), SQLDataType.CLOB);
    Table<?> due = DSL.lateral(headOf(dsl, name, max, columns).asTable("due"));
    List<SelectField<?>> fields = new ArrayList<>();
    for (Field<?> f : columns) {
      fields.add(due.field(f.getName()));
    }
    return dsl.select(fields).from(names).crossJoin(due).limit(max);
  }

  private static Select<Record> headOf(
      DSLContext dsl, Field<String> type, int max, List<Field<?>> columns) {
    return dsl.select(columns)
        .from(COMMANDS)
        .where(MESSAGE_TYPE.eq(type))
        .and(DELIVER_AT.le(STATEMENT_TIMESTAMP))
        .orderBy(DELIVER_AT)
        .limit(max)
        .forUpdate()
        .skipLocked();
  }

  /**
   * Claims up to {@code max} due commands in one round trip: the acquire statement's rows are
   * deleted and returned ({@code DELETE … WHERE message_id IN (acquire) RETURNING …}). The delete
   * is the success bookkeeping, done up front: it commits with the handler's writes, a rollback (or
   * a dead connection) brings the commands back, and a postponement re-inserts the row in the same
   * transaction. Oldest first within a type.
   *
   * <p>The statement is built and rendered by jOOQ once per driver and run through plain JDBC on
   * every poll: building and rendering it per poll was the largest part of the pump's own CPU per
   * delivery in the drain benchmark, on a machine where the pump and PostgreSQL share two cores.
   * The SQL text never changes (the type order and the limit are bind values), so the PostgreSQL
   * driver keeps it prepared on the server.
   */
  public static final class Claim {

    private final List<String> types;
    private final java.util.Map<Long, String> sqlByTurn =
        new java.util.concurrent.ConcurrentHashMap<>();

    /** The claim for a driver of {@code types} (at least one), in registration order. */
    public Claim(List<String> types) {
      if (types.isEmpty()) {
        throw new IllegalArgumentException("types must not be empty");
      }
      this.types = List.copyOf(types);
    }

    /**
     * The SQL text that claims up to {@code max} commands scanning the types from {@code start} on
     * (wrapping around), every value inlined. Without parameters PostgreSQL plans the statement
     * once per connection and reuses the plan; with the type and the limit as parameters the server
     * log showed a fresh custom plan at every bind (0.14 ms per delivery, as much as executing it).
     * A pump uses one {@code max} (its batch size), so there is one text per type.
     */
    public String sql(int start, int max) {
      return sqlByTurn.computeIfAbsent(
          ((long) start << 32) | max,
          k -> {
            List<String> order = new ArrayList<>(types.size());
            for (int i = 0; i < types.size(); i++) {
              order.add(types.get((start + i) % types.size()));
            }
            DSLContext render = DSL.using(SQLDialect.POSTGRES, RENDER);
            return render.renderInlined(claim(render, order, max));
          });
    }

    /** Runs the claim on {@code connection}, the types scanned from {@code start} on. */
    public List<Delivery> run(Connection connection, int start, int max) throws SQLException {
      List<Delivery> out = new ArrayList<>(Math.min(max, 64));
      try (PreparedStatement ps = connection.prepareStatement(sql(start, max));
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(delivery(rs));
        }
      }
      if (out.size() > 1) {
        out.sort(java.util.Comparator.comparing(Claim::deliverAt));
      }
      return out;
    }

    private static Delivery delivery(ResultSet rs) throws SQLException {
      UUID id = rs.getObject(1, UUID.class);
      Envelope e =
          new Envelope(
              id.toString(),
              rs.getString(2),
              rs.getString(3),
              rs.getString(4),
              rs.getObject(8, OffsetDateTime.class).toInstant(),
              HeadersJson.read(JSONB.jsonbOrNull(rs.getString(5))),
              rs.getBytes(6));
      return new Delivery(
          e,
          rs.getInt(7),
          null,
          new Claimed(id, rs.getObject(9, OffsetDateTime.class).toInstant()));
    }

    private static Instant deliverAt(Delivery d) {
      return ((Claimed) d.driverState()).deliverAt();
    }
  }

  /** A claimed command's id and due time (the driver state of its delivery). */
  public record Claimed(UUID id, Instant deliverAt) {}

  private static final org.jooq.conf.Settings RENDER =
      new org.jooq.conf.Settings().withRenderSchema(true);

  /**
   * The claim statement. {@code = ANY(ARRAY(acquire))} rather than {@code IN (acquire)}: the locked
   * ids are computed first and the delete finds them by primary key, where {@code IN} may be
   * planned as a semi-join scanning the whole table.
   */
  public static org.jooq.DeleteResultStep<Record> claim(
      DSLContext dsl, List<String> types, int max) {
    // The inner scan locks and returns ids only; the delete returns the full rows.
    Table<?> claim = acquire(dsl, types, max, List.of(MESSAGE_ID)).asTable("claim");
    return dsl.deleteFrom(COMMANDS)
        .where(
            MESSAGE_ID.eq(
                DSL.any(
                    DSL.array(
                        dsl.select(claim.field(MESSAGE_ID.getName(), UUID.class)).from(claim)))))
        .returning(COLUMNS);
  }

  /** Puts a claimed command back with a new failure count, due {@code delay} from now. */
  public static void reinsert(DSLContext dsl, Delivery d, UUID id, int failures, Duration delay) {
    List<Field<?>> values = stored(d.envelope(), id);
    values.add(DSL.val(failures, FAILURES));
    values.add(Enqueuer.deliverAt(delay, null));
    dsl.insertInto(COMMANDS, columns(FAILURES, DELIVER_AT)).values(values).execute();
  }

  /** The columns a command keeps wherever it is stored (pending or dead letter). */
  static final List<Field<?>> STORED =
      List.of(
          MESSAGE_ID, MESSAGE_TYPE, CORRELATION_ID, CAUSATION_ID, HEADERS, PAYLOAD, ENQUEUED_AT);

  /** {@link #STORED} followed by {@code more}. */
  static List<Field<?>> columns(Field<?>... more) {
    List<Field<?>> all = new ArrayList<>(STORED);
    all.addAll(List.of(more));
    return all;
  }

  /** Bind values for {@link #STORED}, taken from a claimed command's envelope (a mutable list). */
  static List<Field<?>> stored(Envelope e, UUID id) {
    return new ArrayList<>(
        List.of(
            DSL.val(id, MESSAGE_ID),
            DSL.val(e.type(), MESSAGE_TYPE),
            DSL.val(e.correlationId(), CORRELATION_ID),
            DSL.val(e.causationId(), CAUSATION_ID),
            DSL.val(HeadersJson.write(e.headers()), HEADERS),
            DSL.val(e.payload(), PAYLOAD),
            DSL.val(e.createdAt(), ENQUEUED_AT)));
  }

  /** Per type: due, delayed and dead-letter counts. */
  public static QueueDepth depth(DSLContext dsl) {
    Field<Integer> due = DSL.count().filterWhere(DELIVER_AT.le(CLOCK_TIMESTAMP)).as("due");
    Field<Integer> delayed = DSL.count().filterWhere(DELIVER_AT.gt(CLOCK_TIMESTAMP)).as("delayed");
    Map<String, long[]> counts = new HashMap<>();
    for (Record3<String, Integer, Integer> r :
        dsl.select(MESSAGE_TYPE, due, delayed).from(COMMANDS).groupBy(MESSAGE_TYPE).fetch()) {
      long[] c = counts.computeIfAbsent(r.value1(), k -> new long[3]);
      c[0] = r.value2();
      c[1] = r.value3();
    }
    for (var r :
        dsl.select(MESSAGE_TYPE, DSL.count()).from(DEAD_LETTERS).groupBy(MESSAGE_TYPE).fetch()) {
      counts.computeIfAbsent(r.value1(), k -> new long[3])[2] = r.value2();
    }
    Map<String, QueueDepth.TypeDepth> byType = new HashMap<>();
    counts.forEach((type, c) -> byType.put(type, new QueueDepth.TypeDepth(c[0], c[1], c[2])));
    return new QueueDepth(byType);
  }
}
