package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.CAUSATION_ID;
import static org.messagepump.commands.internal.CommandTables.CLAIM_RANK;
import static org.messagepump.commands.internal.CommandTables.CLOCK_TIMESTAMP;
import static org.messagepump.commands.internal.CommandTables.CORRELATION_ID;
import static org.messagepump.commands.internal.CommandTables.DELIVER_AT;
import static org.messagepump.commands.internal.CommandTables.ENQUEUED_AT;
import static org.messagepump.commands.internal.CommandTables.FAILURES;
import static org.messagepump.commands.internal.CommandTables.HEADERS;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.PAYLOAD;
import static org.messagepump.commands.internal.CommandTables.PRIORITY;
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
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.Select;
import org.jooq.SelectField;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Envelope;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.StatementCache;

/**
 * The SQL of the pending-commands table: acquire, delete, depth, and the columns and parameters of
 * a command as a postponement or a parking writes it back ({@link DeliveryStatements}).
 */
public final class CommandQueries {

  static final List<Field<?>> COLUMNS =
      List.of(
          MESSAGE_ID,
          MESSAGE_TYPE,
          CORRELATION_ID,
          CAUSATION_ID,
          HEADERS,
          PAYLOAD,
          FAILURES,
          ENQUEUED_AT,
          DELIVER_AT,
          PRIORITY);

  /**
   * What a claim returns: {@link #COLUMNS}, then the command's idempotency key and whether handling
   * or parking it releases the key (read by {@link ClaimStatement#delivery(ResultSet, Long, int)}).
   */
  static final List<Field<?>> CLAIMED = claimed();

  private static List<Field<?>> claimed() {
    List<Field<?>> all = new ArrayList<>(COLUMNS);
    all.add(CommandTables.IDEMPOTENCY_KEY);
    all.add(CommandTables.RELEASE_KEY);
    return List.copyOf(all);
  }

  private CommandQueries() {}

  /**
   * The acquire statement: up to {@code max} due commands of {@code types}, row-locked with {@code
   * SKIP LOCKED}, lowest {@code claim_rank} first within a type (the due time less one minute per
   * level of priority, see V5: highest priority first, aged by waiting). One type: one index range
   * scan on {@code (message_type, claim_rank, deliver_at)}, bounded by {@code claim_rank <= now},
   * the due check made on the index tuple. Several types: a lateral join over the type names, one
   * such scan per type, taken in the order given until {@code max} rows are found — the scans run
   * lazily, so only returned rows are locked, and the cost depends on {@code max} and the number of
   * types, never on the backlog. The caller rotates the order of the types between calls for
   * fairness. The type names are bind values (one {@code text} for one type, else one {@code
   * text[]}).
   */
  public static Select<Record> acquire(
      DSLContext dsl, CommandTables t, List<String> types, int max) {
    return acquire(dsl, t, types, max, COLUMNS);
  }

  /** The acquire statement returning only {@code columns} of the locked rows. */
  static Select<Record> acquire(
      DSLContext dsl, CommandTables t, List<String> types, int max, List<Field<?>> columns) {
    return types.size() == 1
        ? acquire(dsl, t, DSL.val(types.get(0), MESSAGE_TYPE), null, max, columns)
        : acquire(
            dsl, t, null, DSL.val(types.toArray(String[]::new), TYPES.getDataType()), max, columns);
  }

  /** The type name of a statement for one type ({@link #acquire}): parameter {@code type}. */
  static final Param<String> TYPE = StatementCache.parameter("type", MESSAGE_TYPE.getDataType());

  /** The type names of a statement for several types, in scan order: parameter {@code types}. */
  static final Param<String[]> TYPES = StatementCache.parameter("types", SQLDataType.CLOB.array());

  /**
   * The acquire statement for one type ({@code type}, {@code types} null) or for several ({@code
   * types}, a {@code text[]} in scan order, {@code type} null): the values or {@link #TYPE} and
   * {@link #TYPES}.
   */
  static Select<Record> acquire(
      DSLContext dsl,
      CommandTables t,
      Field<String> type,
      Field<String[]> types,
      int max,
      List<Field<?>> columns) {
    if (type != null) {
      // Two bind markers, both the type: the pause check is uncorrelated, so PostgreSQL runs it
      // once per statement (an InitPlan) instead of once per row of a paused type's backlog.
      return headOf(dsl, t, type, max, columns, t.pauses.notPaused(type));
    }
    Table<?> names = DSL.unnest(types).as("t", "type");
    Field<String> name = DSL.field(DSL.name("t", "type"), SQLDataType.CLOB);
    Table<?> due =
        DSL.lateral(headOf(dsl, t, name, max, columns, DSL.noCondition()).asTable("due"));
    List<SelectField<?>> fields = new ArrayList<>();
    for (Field<?> f : columns) {
      fields.add(due.field(f.getName()));
    }
    // The pause check filters the type names before each type's scan: a paused type costs one
    // primary-key probe, never a scan of its backlog.
    return dsl.select(fields)
        .from(names)
        .crossJoin(due)
        .where(t.pauses.notPaused(name))
        .limit(DSL.inline(max));
  }

  private static Select<Record> headOf(
      DSLContext dsl,
      CommandTables t,
      Field<String> type,
      int max,
      List<Field<?>> columns,
      org.jooq.Condition also) {
    // LIMIT is inlined on purpose (it is an int of the code, never user text): a bound LIMIT made
    // PostgreSQL build a custom plan at every execution, measured 1.67-2.40x slower per claim.
    return dsl.select(columns)
        .from(t.commands)
        .where(MESSAGE_TYPE.eq(type))
        // A due command's rank is at most now (a priority is a head start, never a delay): the
        // rank bounds the index range, the due time is checked on the index's third column.
        .and(CLAIM_RANK.le(STATEMENT_TIMESTAMP))
        .and(DELIVER_AT.le(STATEMENT_TIMESTAMP))
        .and(also)
        .orderBy(CLAIM_RANK, DELIVER_AT)
        .limit(DSL.inline(max))
        .forUpdate()
        .skipLocked();
  }

  /**
   * Claims up to {@code max} due commands in one round trip: the acquire statement's rows are
   * deleted and returned ({@code DELETE … WHERE message_id IN (acquire) RETURNING …}). The delete
   * is the success bookkeeping, done up front: it commits with the handler's writes, a rollback (or
   * a dead connection) brings the commands back, and a postponement re-inserts the row in the same
   * transaction. Highest priority first within a type, aged by waiting (see {@link #acquire}).
   *
   * <p>The statement is built by jOOQ once per schema, shape (one type or several) and batch size
   * and rendered once through a {@link StatementCache}, with the type names as parameters, and run
   * through plain JDBC on every poll: building and rendering it per poll was the largest part of
   * the pump's own CPU per delivery in the drain benchmark. The SQL text never changes (the type
   * order is the bound array, the limit an inlined integer of the code), so the PostgreSQL driver
   * keeps it prepared on the server.
   */
  public static final class ClaimStatement {

    private final CommandTables tables;
    private final List<String> types;

    /** The statement per batch size, for this driver's shape (one type or several). */
    private final StatementCache<Integer> byMax;

    /**
     * The claim texts of a schema, shared by its drivers ({@link CommandTables#statements}): per
     * shape, one type or several, at most one per batch size a pump may ask for. A driver keeps the
     * cache of its shape, so a poll looks up its batch size alone.
     */
    private static final class Texts {
      private final StatementCache<Integer> oneType = new StatementCache<>(Limits.MAX_BATCH_SIZE);
      private final StatementCache<Integer> severalTypes =
          new StatementCache<>(Limits.MAX_BATCH_SIZE);
    }

    /** The claim for a driver of {@code types} (at least one), in registration order. */
    public ClaimStatement(CommandTables tables, List<String> types) {
      if (types.isEmpty()) {
        throw new IllegalArgumentException("types must not be empty");
      }
      this.tables = tables;
      this.types = List.copyOf(types);
      Texts texts = tables.statements(Texts.class, t -> new Texts());
      this.byMax = this.types.size() == 1 ? texts.oneType : texts.severalTypes;
    }

    /**
     * The SQL text that claims up to {@code max} commands. One type: two bind markers, both the
     * type name (the scan and the pause check). Several types: one bind marker, the type names as a
     * {@code text[]} in scan order (any non-empty subset of the types). See {@link #bind}. Only the
     * limit, an integer of the code, is inlined.
     */
    public String sql(int max) {
      return statement(max).sql();
    }

    private StatementCache.Statement statement(int max) {
      boolean one = types.size() == 1;
      return byMax.statement(
          max,
          dsl -> claim(dsl, tables, one ? TYPE : null, one ? null : TYPES, max),
          one ? TYPE.getParamName() : TYPES.getParamName());
    }

    /**
     * Binds every type name, scanned from {@code start} on (wrapping around), to a statement of
     * {@link #sql} (its markers are the same for every {@code max}).
     */
    public void bind(PreparedStatement ps, int start) throws SQLException {
      statement(1).bind(ps, value(order(start, AcquisitionGate.ALL)));
    }

    /** The value of the statement's parameter: the one type name, or the names in scan order. */
    private Object value(String[] order) {
      return types.size() == 1 ? order[0] : order;
    }

    /** The types the gate admits, scanned from {@code start} on (wrapping around). */
    public String[] order(int start, AcquisitionGate gate) {
      List<String> order = new ArrayList<>(types.size());
      for (int i = 0; i < types.size(); i++) {
        String type = types.get((start + i) % types.size());
        if (gate.admits(type)) {
          order.add(type);
        }
      }
      return order.toArray(String[]::new);
    }

    /** Runs the claim on {@code connection}, the types scanned from {@code start} on. */
    public List<Delivery> run(Connection connection, int start, int max) throws SQLException {
      return run(connection, start, max, AcquisitionGate.ALL);
    }

    /**
     * Runs the claim for the types {@code gate} admits, scanned from {@code start} on; when it
     * admits none, returns empty without a round trip.
     */
    public List<Delivery> run(Connection connection, int start, int max, AcquisitionGate gate)
        throws SQLException {
      String[] order = order(start, gate);
      if (order.length == 0) {
        return List.of();
      }
      List<Delivery> out = new ArrayList<>(Math.min(max, 64));
      try (PreparedStatement ps = statement(max).prepare(connection, value(order))) {
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.add(delivery(rs));
          }
        }
      }
      if (out.size() > 1) {
        out.sort(java.util.Comparator.comparing(ClaimStatement::rank));
      }
      return out;
    }

    /**
     * One claimed row as a delivery. The headers column is parsed here, per row: a row whose
     * headers are not a JSON object of strings becomes a delivery with empty headers and a {@link
     * Claimed#problem()}, which {@code handle} reports as undecodable (a counted failure, parked at
     * the limit) while the other rows of the batch are handled. The stored text is kept in the
     * driver state and written back unchanged on postponement or parking.
     */
    private static Delivery delivery(ResultSet rs) throws SQLException {
      return delivery(rs, null, COLUMNS.size() + 1);
    }

    /**
     * As {@link #delivery(ResultSet)}, for a claim in lease mode with its fencing token; the key
     * columns of {@link #CLAIMED} are at {@code keyColumn} and the next one.
     */
    static Delivery delivery(ResultSet rs, Long leaseToken, int keyColumn) throws SQLException {
      UUID id = rs.getObject(1, UUID.class);
      String rawHeaders = rs.getString(5);
      Map<String, String> headers;
      String problem = null;
      try {
        headers = HeadersJson.read(rawHeaders);
      } catch (RuntimeException e) {
        headers = Map.of();
        problem = e.getMessage();
      }
      OffsetDateTime enqueuedAt = rs.getObject(8, OffsetDateTime.class);
      String rawEnqueuedAt = null;
      if (enqueuedAt.equals(OffsetDateTime.MAX) || enqueuedAt.equals(OffsetDateTime.MIN)) {
        // 'infinity' or '-infinity': no Instant to hand to the handler nor to write back
        problem = problem == null ? "stored enqueued_at is not a finite time" : problem;
        rawEnqueuedAt = rs.getString(8);
        enqueuedAt = OffsetDateTime.ofInstant(Instant.EPOCH, java.time.ZoneOffset.UTC);
      }
      Envelope e =
          new Envelope(
              id.toString(),
              rs.getString(2),
              rs.getString(3),
              rs.getString(4),
              enqueuedAt.toInstant(),
              headers,
              rs.getBytes(6));
      Instant deliverAt = rs.getObject(9, OffsetDateTime.class).toInstant();
      int priority = rs.getShort(10);
      String key = rs.getString(keyColumn);
      boolean releaseKey = rs.getBoolean(keyColumn + 1);
      return new Delivery(
          e,
          rs.getInt(7),
          null,
          problem == null
              ? new Claimed(id, deliverAt, null, null, null, leaseToken, priority, key, releaseKey)
              : new Claimed(
                  id,
                  deliverAt,
                  problem,
                  rawHeaders,
                  rawEnqueuedAt,
                  leaseToken,
                  priority,
                  key,
                  releaseKey));
    }

    /** The order of a claimed batch: the claim's, {@code claim_rank} as V5 computes it. */
    private static Instant rank(Delivery d) {
      Claimed c = (Claimed) d.driverState();
      return rank(c.deliverAt(), c.priority());
    }

    /** One minute of head start per level of priority, as V5's {@code claim_rank}. */
    static Instant rank(Instant dueAt, int priority) {
      return dueAt.minus(Duration.ofMinutes(priority));
    }

    /**
     * Claims one command again by id, whatever its due time, after the batch that held it rolled
     * back (see {@code Driver.reacquire}): deleted and returned as stored now, or empty when
     * another transaction has it locked or it is gone.
     */
    public static java.util.Optional<Delivery> reclaim(
        Connection connection, CommandTables tables, UUID id) throws SQLException {
      // Rare (after a rollback): rendered at each call, not kept.
      StatementCache.Statement s =
          StatementCache.render(
              render -> {
                Table<?> one =
                    render
                        .select(MESSAGE_ID)
                        .from(tables.commands)
                        .where(MESSAGE_ID.eq(StatementCache.parameter("id", SQLDataType.UUID)))
                        .forUpdate()
                        .skipLocked()
                        .asTable("one");
                return render
                    .deleteFrom(tables.commands)
                    .where(
                        MESSAGE_ID.eq(
                            DSL.any(
                                DSL.array(
                                    render
                                        .select(one.field(MESSAGE_ID.getName(), UUID.class))
                                        .from(one)))))
                    .returning(CLAIMED);
              },
              "id");
      try (PreparedStatement ps = s.prepare(connection, id);
          ResultSet rs = ps.executeQuery()) {
        return rs.next() ? java.util.Optional.of(delivery(rs)) : java.util.Optional.empty();
      }
    }
  }

  /**
   * A claimed command's id and due time (the driver state of its delivery); for a row that could
   * not be read, what was wrong (never quoting the data) and the stored text of its headers and
   * enqueue time, written back as they were on postponement or parking; in lease mode, the fencing
   * token of its claim (null in transactional mode); its priority, kept on postponement and
   * parking; its idempotency key (null: none) and whether handling or parking it releases the key.
   */
  public record Claimed(
      UUID id,
      Instant deliverAt,
      String problem,
      String rawHeaders,
      String rawEnqueuedAt,
      Long leaseToken,
      int priority,
      String idempotencyKey,
      boolean releaseKey) {

    /** A readable row's state, of priority 0. */
    public Claimed(UUID id, Instant deliverAt) {
      this(id, deliverAt, null, null, null, null, 0, null, false);
    }
  }

  /**
   * The claim statement. {@code = ANY(ARRAY(acquire))} rather than {@code IN (acquire)}: the locked
   * ids are computed first and the delete finds them by primary key, where {@code IN} may be
   * planned as a semi-join scanning the whole table.
   */
  public static org.jooq.DeleteResultStep<Record> claim(
      DSLContext dsl, CommandTables t, List<String> types, int max) {
    return types.size() == 1
        ? claim(dsl, t, DSL.val(types.get(0), MESSAGE_TYPE), null, max)
        : claim(dsl, t, null, DSL.val(types.toArray(String[]::new), TYPES.getDataType()), max);
  }

  /**
   * The claim statement for one type or several (see {@link #acquire(DSLContext, CommandTables,
   * Field, Field, int, List)}).
   */
  static org.jooq.DeleteResultStep<Record> claim(
      DSLContext dsl, CommandTables t, Field<String> type, Field<String[]> types, int max) {
    // The inner scan locks and returns ids only; the delete returns the full rows.
    Table<?> claim = acquire(dsl, t, type, types, max, List.of(MESSAGE_ID)).asTable("claim");
    return dsl.deleteFrom(t.commands)
        .where(
            MESSAGE_ID.eq(
                DSL.any(
                    DSL.array(
                        dsl.select(claim.field(MESSAGE_ID.getName(), UUID.class)).from(claim)))))
        .returning(CLAIMED);
  }

  /** The columns a command keeps wherever it is stored (pending or dead letter). */
  static final List<Field<?>> STORED =
      List.of(
          MESSAGE_ID,
          MESSAGE_TYPE,
          CORRELATION_ID,
          CAUSATION_ID,
          HEADERS,
          PAYLOAD,
          ENQUEUED_AT,
          PRIORITY);

  /** {@link #STORED} followed by {@code more}. */
  static List<Field<?>> columns(Field<?>... more) {
    List<Field<?>> all = new ArrayList<>(STORED);
    all.addAll(List.of(more));
    return all;
  }

  /**
   * Named parameters for {@link #STORED}, in order, named as {@link #STORED_PARAMETERS}, followed
   * by {@code more} (a mutable list). The enqueue time is an instant, or with {@code rawEnqueuedAt}
   * the text read from a row whose time is not finite ({@code 'infinity'}), cast back (see {@link
   * #stored}).
   */
  static List<Field<?>> storedParameters(boolean rawEnqueuedAt, Field<?>... more) {
    List<Field<?>> all =
        new ArrayList<>(
            List.of(
                StatementCache.parameter("id", MESSAGE_ID.getDataType()),
                StatementCache.parameter("type", MESSAGE_TYPE.getDataType()),
                StatementCache.parameter("correlation", CORRELATION_ID.getDataType()),
                StatementCache.parameter("causation", CAUSATION_ID.getDataType()),
                StatementCache.parameter("headers", HEADERS.getDataType()),
                StatementCache.parameter("payload", PAYLOAD.getDataType()),
                rawEnqueuedAt
                    ? StatementCache.parameter("enqueued_at", SQLDataType.VARCHAR)
                        .cast(ENQUEUED_AT.getDataType())
                    : StatementCache.parameter("enqueued_at", ENQUEUED_AT.getDataType()),
                StatementCache.parameter("priority", PRIORITY.getDataType())));
    all.addAll(List.of(more));
    return all;
  }

  /** The names of {@link #storedParameters}, in order. */
  static final List<String> STORED_PARAMETERS =
      List.of(
          "id",
          "type",
          "correlation",
          "causation",
          "headers",
          "payload",
          "enqueued_at",
          "priority");

  /**
   * Whether {@link #stored} gives the enqueue time of {@code d} as text: a claimed row whose time
   * is not finite.
   */
  static boolean rawEnqueuedAt(Delivery d) {
    return d.driverState() instanceof Claimed c && c.problem() != null && c.rawEnqueuedAt() != null;
  }

  /**
   * The values of {@link #storedParameters storedParameters(rawEnqueuedAt(d))}, taken from a
   * claimed command's envelope, followed by {@code more}; the headers and the enqueue time as
   * stored when they could not be read.
   */
  static Object[] stored(Delivery d, UUID id, Object... more) {
    Envelope e = d.envelope();
    Claimed claimed = d.driverState() instanceof Claimed c && c.problem() != null ? c : null;
    JSONB headers =
        claimed != null ? JSONB.valueOf(claimed.rawHeaders()) : HeadersJson.write(e.headers());
    Object enqueuedAt = rawEnqueuedAt(d) ? claimed.rawEnqueuedAt() : e.createdAt();
    Object[] stored = {
      id,
      e.type(),
      e.correlationId(),
      e.causationId(),
      headers,
      e.payload(),
      enqueuedAt,
      priority(d)
    };
    Object[] all = java.util.Arrays.copyOf(stored, stored.length + more.length);
    System.arraycopy(more, 0, all, stored.length, more.length);
    return all;
  }

  /** A claimed command's priority (0 for a delivery this driver did not claim). */
  static short priority(Delivery d) {
    return d.driverState() instanceof Claimed c ? (short) c.priority() : 0;
  }

  /**
   * How many commands of one type are due now, due later, leased and parked.
   *
   * @param due pending, not leased, and due now
   * @param delayed pending, not leased, and due later
   * @param deadLetters parked
   * @param leased pending and held by a lease (lease mode)
   * @param oldestDueSeconds how long the oldest due command has been due, in seconds by the
   *     database clock (0 when none is due)
   */
  public record TypeCounts(
      long due, long delayed, long deadLetters, long leased, double oldestDueSeconds) {}

  /**
   * Per type: due, delayed, leased and dead-letter counts and the oldest due command's wait
   * (database clock), in one statement. A leased command's {@code deliver_at} is its lease's
   * expiry: it counts as leased only.
   */
  public static Map<String, TypeCounts> depth(DSLContext dsl, CommandTables t) {
    Condition free = CommandTables.LEASED_BY.isNull();
    Condition isDue = free.and(DELIVER_AT.le(CLOCK_TIMESTAMP));
    Field<Integer> due = DSL.count().filterWhere(isDue).as("due");
    Field<Integer> delayed =
        DSL.count().filterWhere(free.and(DELIVER_AT.gt(CLOCK_TIMESTAMP))).as("delayed");
    Field<Integer> leased =
        DSL.count().filterWhere(CommandTables.LEASED_BY.isNotNull()).as("leased");
    Field<Double> oldestDue =
        DSL.field(
                "extract(epoch from {0} - {1})",
                Double.class, CLOCK_TIMESTAMP, DSL.min(DELIVER_AT).filterWhere(isDue))
            .as("oldest_due");
    Field<Integer> parked = DSL.field("0", Integer.class).as("parked");
    Field<Integer> dueZero = DSL.field("0", Integer.class);
    Field<Double> noWait = DSL.field("NULL::float8", Double.class);
    Map<String, TypeCounts> byType = new HashMap<>();
    var pending =
        dsl.select(MESSAGE_TYPE, due, delayed, leased, oldestDue, parked)
            .from(t.commands)
            .groupBy(MESSAGE_TYPE);
    var deadLetters =
        dsl.select(MESSAGE_TYPE, dueZero, dueZero, dueZero, noWait, DSL.count())
            .from(t.deadLetters)
            .groupBy(MESSAGE_TYPE);
    for (var r : pending.unionAll(deadLetters).fetch()) {
      TypeCounts was = byType.get(r.value1());
      double wait = r.value5() == null ? 0 : Math.max(0, r.value5());
      TypeCounts add = new TypeCounts(r.value2(), r.value3(), r.value6(), r.value4(), wait);
      byType.put(
          r.value1(),
          was == null
              ? add
              : new TypeCounts(
                  was.due() + add.due(),
                  was.delayed() + add.delayed(),
                  was.deadLetters() + add.deadLetters(),
                  was.leased() + add.leased(),
                  Math.max(was.oldestDueSeconds(), add.oldestDueSeconds())));
    }
    return byType;
  }
}
