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
import org.jooq.ResultQuery;
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
  public static ResultQuery<Record> acquire(DSLContext dsl, List<String> types, int max) {
    if (types.size() == 1) {
      return headOf(dsl, DSL.val(types.get(0)), max);
    }
    Table<?> names = DSL.unnest(DSL.val(types.toArray(String[]::new))).as("t", "type");
    Field<String> name = DSL.field(DSL.name("t", "type"), SQLDataType.CLOB);
    Table<?> due = DSL.lateral(headOf(dsl, name, max).asTable("due"));
    List<SelectField<?>> fields = new ArrayList<>();
    for (Field<?> f : COLUMNS) {
      fields.add(due.field(f.getName()));
    }
    return dsl.select(fields).from(names).crossJoin(due).limit(max);
  }

  private static Select<Record> headOf(DSLContext dsl, Field<String> type, int max) {
    return dsl.select(COLUMNS)
        .from(COMMANDS)
        .where(MESSAGE_TYPE.eq(type))
        .and(DELIVER_AT.le(STATEMENT_TIMESTAMP))
        .orderBy(DELIVER_AT)
        .limit(max)
        .forUpdate()
        .skipLocked();
  }

  /** Runs the acquire statement and maps the rows to deliveries. */
  public static List<Delivery> fetchDue(DSLContext dsl, List<String> types, int max) {
    List<Delivery> out = new ArrayList<>();
    for (Record r : acquire(dsl, types, max).fetch()) {
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

  /** Deletes a handled command. */
  public static int delete(DSLContext dsl, UUID id) {
    return dsl.deleteFrom(COMMANDS).where(MESSAGE_ID.eq(id)).execute();
  }

  /** Makes a command due {@code delay} from now (database clock) with a new failure count. */
  public static int postpone(DSLContext dsl, UUID id, int failures, Duration delay) {
    return dsl.update(COMMANDS)
        .set(FAILURES, failures)
        .set(DELIVER_AT, Enqueuer.deliverAt(delay, null))
        .where(MESSAGE_ID.eq(id))
        .execute();
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
