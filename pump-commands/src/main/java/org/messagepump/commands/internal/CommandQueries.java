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

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Record3;
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
   */
  public static List<Delivery> claimDue(DSLContext dsl, List<String> types, int max) {
    List<Record> rows = new ArrayList<>(claim(dsl, types, max).fetch());
    rows.sort(java.util.Comparator.comparing(r -> r.get(DELIVER_AT)));
    return toDeliveries(rows);
  }

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

  private static List<Delivery> toDeliveries(List<? extends Record> rows) {
    List<Delivery> out = new ArrayList<>();
    for (Record r : rows) {
      UUID id = r.get(0, UUID.class);
      Envelope e =
          new Envelope(
              id.toString(),
              r.get(1, String.class),
              r.get(2, String.class),
              r.get(3, String.class),
              r.get(7, ENQUEUED_AT.getType()),
              HeadersJson.read(r.get(4, HEADERS.getType())),
              r.get(5, byte[].class));
      out.add(new Delivery(e, r.get(6, Integer.class), null, id));
    }
    return out;
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
