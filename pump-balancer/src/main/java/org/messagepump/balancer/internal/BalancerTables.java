package org.messagepump.balancer.internal;

import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.Sequence;
import org.jooq.Table;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Pauses;

/**
 * jOOQ names of one balancer schema (see {@code db/balancer/V*.sql}): the tables and the sequence
 * are per instance, qualified with the schema the balancer was built for and quoted by jOOQ; the
 * columns are the same in every schema (qualified with their table's name, as the two tables share
 * column names).
 */
public final class BalancerTables {

  /** The default schema. */
  public static final String SCHEMA = "balancer";

  /** Flyway's history table, in the balancer's schema (so every schema has its own). */
  public static final String HISTORY_TABLE = "balancer_flyway_history";

  /** The table names, in the order {@code grantStatements} lists them. */
  public static final java.util.List<String> TABLE_NAMES =
      java.util.List.of("messages", "partitions", "paused_groups");

  private static final BalancerTables DEFAULT = new BalancerTables(SCHEMA);

  private final String schema;
  private final Settings settings;
  private final org.messagepump.core.spi.StatementSets<BalancerTables> statements =
      new org.messagepump.core.spi.StatementSets<>(this);

  /** Stored messages. */
  public final Table<Record> messages;

  /** One row per key with messages or a lease: its place in the rotation and its state. */
  public final Table<Record> partitions;

  /** The rotation: each key's place, drawn when it joins (or moves back). */
  public final Sequence<Long> rotation;

  /**
   * The partition groups paused cluster-wide (V2, {@code paused_groups}), through the drivers' one
   * pause mechanism; acquisition carries its {@link Pauses#notPaused} condition.
   */
  public final Pauses pauses;

  private BalancerTables(String schema) {
    this.schema = schema;
    this.messages = DSL.table(DSL.name(schema, "messages"));
    this.partitions = DSL.table(DSL.name(schema, "partitions"));
    this.rotation = DSL.sequence(DSL.name(schema, "rotation"), SQLDataType.BIGINT);
    this.pauses =
        Pauses.of(
                DSL.table(DSL.name(schema, "paused_groups")),
                DSL.field(DSL.name("partition_group"), SQLDataType.CLOB),
                "group")
            .refusingBlankNames();
    this.settings = new Settings().withRenderSchema(true).withExecuteLogging(false);
  }

  /**
   * The statements of one kind for this schema ({@code kind}: a query class's holder of rendered
   * statements), made by {@code render} on first use and kept with these tables: every driver and
   * operation of a balancer shares them, and every balancer of the default schema. Kept per schema,
   * not per driver: a driver rendering its own through jOOQ at its start was a burst of rendering
   * and of JIT compilation (docs/benchmarks.md).
   */
  public <T> T statements(Class<T> kind, java.util.function.Function<BalancerTables, T> render) {
    return statements.get(kind, render);
  }

  /** The tables of {@code schema}, validated by {@link #schemaName}. */
  public static BalancerTables of(String schema) {
    String s = schemaName(schema);
    return s.equals(SCHEMA) ? DEFAULT : new BalancerTables(s);
  }

  /** The tables of the default schema. */
  public static BalancerTables defaults() {
    return DEFAULT;
  }

  /** The schema name. */
  public String schema() {
    return schema;
  }

  /**
   * Checks a schema name ({@link org.messagepump.core.spi.Inputs#schema}): a lower-case identifier
   * of at most {@value Inputs#MAX_SCHEMA_LENGTH} characters, not a PostgreSQL system schema; else
   * {@link IllegalArgumentException}.
   */
  public static String schemaName(String schema) {
    return Inputs.schema("schema", schema);
  }

  /**
   * The NOTIFY channel stores of this schema signal and its balancer pumps listen on ({@link
   * org.messagepump.core.spi.WakeSignal#channel}).
   */
  public String wakeChannel() {
    return org.messagepump.core.spi.WakeSignal.channel("balancer", schema);
  }

  /**
   * What precedes group and key in the text hashed to a producer's advisory lock id. The default
   * schema keeps the lock ids of earlier versions (a rolling upgrade keeps one key's producers
   * serialized); another schema gets its own.
   */
  public String lockPrefix() {
    return schema.equals(SCHEMA) ? "" : schema + "|";
  }

  /** A jOOQ context on {@code tx}'s connection. */
  public DSLContext dsl(org.messagepump.core.Tx tx) {
    return dsl(tx.connection());
  }

  /** As {@link #dsl(org.messagepump.core.Tx)}, on {@code connection}. */
  public DSLContext dsl(java.sql.Connection connection) {
    return DSL.using(connection, SQLDialect.POSTGRES, settings);
  }

  /** As {@link #dsl(org.messagepump.core.Tx)}, without connection: to render statements once. */
  public DSLContext render() {
    return DSL.using(SQLDialect.POSTGRES, settings);
  }

  /** Column {@code id} of messages. */
  public static final Field<Long> M_ID = m("id", SQLDataType.BIGINT);

  /** Column {@code partition_group} of messages. */
  public static final Field<String> M_GROUP = m("partition_group", SQLDataType.CLOB);

  /** Column {@code partition_key} of messages. */
  public static final Field<String> M_KEY = m("partition_key", SQLDataType.CLOB);

  /** Column {@code content} of messages. */
  public static final Field<byte[]> M_CONTENT = m("content", SQLDataType.BLOB);

  /** Column {@code properties} of messages. */
  public static final Field<JSONB> M_PROPERTIES = m("properties", SQLDataType.JSONB);

  /** Column {@code received_at} of messages. */
  public static final Field<OffsetDateTime> M_RECEIVED_AT =
      m("received_at", SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code attempts} of messages: expired hand-off leases. */
  public static final Field<Integer> M_ATTEMPTS = m("attempts", SQLDataType.INTEGER);

  /** Column {@code partition_group} of partitions. */
  public static final Field<String> P_GROUP = p("partition_group", SQLDataType.CLOB);

  /** Column {@code partition_key} of partitions. */
  public static final Field<String> P_KEY = p("partition_key", SQLDataType.CLOB);

  /** Column {@code rotation} of partitions: the key's place. */
  public static final Field<Long> P_ROTATION = p("rotation", SQLDataType.BIGINT);

  /** Column {@code failures} of partitions. */
  public static final Field<Integer> P_FAILURES = p("failures", SQLDataType.INTEGER);

  /** Column {@code resume_at} of partitions: when a postponed key is due. */
  public static final Field<OffsetDateTime> P_RESUME_AT =
      p("resume_at", SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code lease_message_id} of partitions: the handed-off message, null when none. */
  public static final Field<Long> P_LEASE_MESSAGE_ID = p("lease_message_id", SQLDataType.BIGINT);

  /** Column {@code lease_token} of partitions. */
  public static final Field<UUID> P_LEASE_TOKEN = p("lease_token", SQLDataType.UUID);

  /** Column {@code lease_owner} of partitions. */
  public static final Field<String> P_LEASE_OWNER = p("lease_owner", SQLDataType.CLOB);

  /** Column {@code lease_until} of partitions. */
  public static final Field<OffsetDateTime> P_LEASE_UNTIL =
      p("lease_until", SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code parked_at} of partitions. */
  public static final Field<OffsetDateTime> P_PARKED_AT =
      p("parked_at", SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code parked_reason} of partitions. */
  public static final Field<String> P_PARKED_REASON = p("parked_reason", SQLDataType.CLOB);

  /**
   * Column {@code joined} of partitions: true when the key's rotation was taken by joining the
   * rotation (a new key row, a lease that ended, an unparked key), false when one of its turns
   * moved it back (migration V3).
   */
  public static final Field<Boolean> P_JOINED = p("joined", SQLDataType.BOOLEAN);

  private static <T> Field<T> m(String column, org.jooq.DataType<T> type) {
    return DSL.field(DSL.name("messages", column), type);
  }

  private static <T> Field<T> p(String column, org.jooq.DataType<T> type) {
    return DSL.field(DSL.name("partitions", column), type);
  }

  /** {@code clock_timestamp()}: the database clock, advancing within a transaction. */
  public static Field<OffsetDateTime> clock() {
    return DatabaseClock.nowOffset();
  }

  /**
   * The keys of one bound {@code text[]} as a set for {@code IN} / {@code NOT IN}, unnested once
   * under {@code alias} (column {@code k}). Not {@code = any(cast(? as text[]))} or {@code <>
   * all(...)}: with the generic plan a connection keeps, that cast was evaluated (the whole array
   * parsed) for every row filtered, a sequential scan of the group's keys: 8 ms per batch of 100
   * messages over 1,000 keys in the bench's fill (perf: {@code array_in} under {@code ExecScan}).
   */
  static org.jooq.Select<org.jooq.Record1<String>> keySet(Field<String[]> keys, String alias) {
    return DSL.select(DSL.field(DSL.name(alias, "k"), String.class))
        .from(DSL.unnest(keys).as(alias, "k"));
  }
}
