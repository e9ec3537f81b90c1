package org.messagepump.balancer.internal;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Name;
import org.jooq.SQLDialect;
import org.jooq.Sequence;
import org.jooq.Table;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.DatabaseClock;

/**
 * jOOQ names of the balancer's tables, columns and sequence. They are written against the default
 * schema {@value #SCHEMA}; an instance in another schema renders them through a {@link Ctx}, whose
 * jOOQ render mapping replaces the schema (and quotes it, as every name).
 */
public final class Schema {

  private Schema() {}

  /** The default schema name. */
  public static final String SCHEMA = "balancer";

  /**
   * Checks a schema name ({@link org.messagepump.core.Inputs#schema}): lower-case letters, digits
   * and underscores, not starting with a digit, at most {@value
   * org.messagepump.core.Inputs#MAX_SCHEMA_LENGTH} characters, and not a PostgreSQL system schema.
   *
   * @throws IllegalArgumentException naming {@code argument} and the rule
   */
  public static String checkSchema(String argument, String schema) {
    return org.messagepump.core.Inputs.schema(argument, schema);
  }

  /**
   * One balancer schema as the code uses it: the jOOQ settings that map {@value #SCHEMA} onto it,
   * its NOTIFY channel, and the statements rendered once per schema (with bind markers).
   */
  public static final class Ctx {
    private final String schema;
    private final Settings settings;
    private final String wakeChannel;
    private final String lockPrefix;
    private final String deleteMany;
    private final String deleteOne;
    private final String keyLock;
    private final String keyDelete;

    private static final java.util.Map<String, Ctx> BY_SCHEMA =
        new java.util.concurrent.ConcurrentHashMap<>();

    /** The context of {@code schema} (validated by {@link #checkSchema}). */
    public static Ctx of(String schema) {
      return BY_SCHEMA.computeIfAbsent(checkSchema("schema", schema), Ctx::new);
    }

    private Ctx(String schema) {
      this.schema = schema;
      Settings s = new Settings().withRenderSchema(true).withExecuteLogging(false);
      if (!schema.equals(SCHEMA)) {
        s =
            s.withRenderMapping(
                new RenderMapping()
                    .withSchemata(new MappedSchema().withInput(SCHEMA).withOutput(schema)));
      }
      this.settings = s;
      this.wakeChannel = org.messagepump.core.WakeSignal.channel("balancer", schema);
      // The default schema keeps the lock ids of earlier versions (a rolling upgrade keeps one
      // key's producers serialized); another schema gets its own.
      this.lockPrefix = schema.equals(SCHEMA) ? "" : schema + "|";
      String[] deletes = DeliveryQueries.renderDeletes(render());
      this.deleteMany = deletes[0];
      this.deleteOne = deletes[1];
      String[] keyDeletes = DeliveryQueries.renderKeyDelete(render());
      this.keyLock = keyDeletes[0];
      this.keyDelete = keyDeletes[1];
    }

    /** The schema name. */
    public String schema() {
      return schema;
    }

    /** The NOTIFY channel stores signal and pumps of this schema listen on. */
    public String wakeChannel() {
      return wakeChannel;
    }

    /** What precedes group and key in the text hashed to a producer's advisory lock id. */
    public String lockPrefix() {
      return lockPrefix;
    }

    /** A jOOQ context on {@code tx}'s connection rendering names into this schema. */
    public DSLContext dsl(org.messagepump.core.Tx tx) {
      return dsl(tx.connection());
    }

    /** A jOOQ context on {@code connection} rendering names into this schema. */
    public DSLContext dsl(java.sql.Connection connection) {
      return DSL.using(connection, SQLDialect.POSTGRES, settings);
    }

    /** A jOOQ context without connection, to render statements once. */
    public DSLContext render() {
      return DSL.using(SQLDialect.POSTGRES, settings);
    }

    String deleteMany() {
      return deleteMany;
    }

    String deleteOne() {
      return deleteOne;
    }

    String keyLock() {
      return keyLock;
    }

    String keyDelete() {
      return keyDelete;
    }
  }

  /** {@code balancer.rotation}. */
  public static final Sequence<Long> ROTATION =
      DSL.sequence(DSL.name(SCHEMA, "rotation"), SQLDataType.BIGINT);

  /** {@code balancer.messages}. */
  public static final class M {
    private M() {}

    /** The table. */
    public static final Table<?> T = DSL.table(DSL.name(SCHEMA, "messages"));

    public static final Field<Long> ID = f("id", SQLDataType.BIGINT);
    public static final Field<String> GROUP = f("partition_group", SQLDataType.CLOB);
    public static final Field<String> KEY = f("partition_key", SQLDataType.CLOB);
    public static final Field<byte[]> CONTENT = f("content", SQLDataType.BLOB);
    public static final Field<JSONB> PROPERTIES = f("properties", SQLDataType.JSONB);
    public static final Field<OffsetDateTime> RECEIVED_AT =
        f("received_at", SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<Integer> ATTEMPTS = f("attempts", SQLDataType.INTEGER);

    private static <T> Field<T> f(String column, org.jooq.DataType<T> type) {
      return DSL.field(DSL.name(SCHEMA, "messages", column), type);
    }
  }

  /** {@code balancer.partitions}. */
  public static final class P {
    private P() {}

    /** The table. */
    public static final Table<?> T = DSL.table(DSL.name(SCHEMA, "partitions"));

    public static final Field<String> GROUP = f("partition_group", SQLDataType.CLOB);
    public static final Field<String> KEY = f("partition_key", SQLDataType.CLOB);
    public static final Field<Long> ROTATION = f("rotation", SQLDataType.BIGINT);
    public static final Field<Integer> FAILURES = f("failures", SQLDataType.INTEGER);
    public static final Field<OffsetDateTime> RESUME_AT =
        f("resume_at", SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<Long> LEASE_MESSAGE_ID = f("lease_message_id", SQLDataType.BIGINT);
    public static final Field<UUID> LEASE_TOKEN = f("lease_token", SQLDataType.UUID);
    public static final Field<String> LEASE_OWNER = f("lease_owner", SQLDataType.CLOB);
    public static final Field<OffsetDateTime> LEASE_UNTIL =
        f("lease_until", SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<OffsetDateTime> PARKED_AT =
        f("parked_at", SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<String> PARKED_REASON = f("parked_reason", SQLDataType.CLOB);

    /**
     * True when the key's rotation was taken by joining the rotation (a new key row, a lease that
     * ended, an unparked key), false when one of its turns moved it back (migration V3).
     */
    public static final Field<Boolean> JOINED = f("joined", SQLDataType.BOOLEAN);

    private static <T> Field<T> f(String column, org.jooq.DataType<T> type) {
      return DSL.field(DSL.name(SCHEMA, "partitions", column), type);
    }
  }

  /** {@code clock_timestamp()}: the database clock, advancing within a transaction. */
  public static Field<OffsetDateTime> clock() {
    return DatabaseClock.nowOffset();
  }

  /** {@code clock_timestamp() + duration}: a time every process agrees on. */
  public static Field<OffsetDateTime> clockPlus(Duration duration) {
    return DatabaseClock.afterOffset(duration);
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

  /** A qualified name in the balancer schema. */
  public static Name name(String... parts) {
    String[] all = new String[parts.length + 1];
    all[0] = SCHEMA;
    System.arraycopy(parts, 0, all, 1, parts.length);
    return DSL.name(all);
  }
}
