package org.messagepump.balancer.internal;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Name;
import org.jooq.Sequence;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;

/** jOOQ names of the {@code balancer} schema's tables, columns and sequence. */
public final class Schema {

  private Schema() {}

  /** The schema name. */
  public static final String SCHEMA = "balancer";

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

    private static <T> Field<T> f(String column, org.jooq.DataType<T> type) {
      return DSL.field(DSL.name(SCHEMA, "partitions", column), type);
    }
  }

  /** {@code clock_timestamp()}: the database clock, advancing within a transaction. */
  public static Field<OffsetDateTime> clock() {
    return DSL.function("clock_timestamp", SQLDataType.TIMESTAMPWITHTIMEZONE);
  }

  /** {@code clock_timestamp() + duration}: a time every process agrees on. */
  public static Field<OffsetDateTime> clockPlus(Duration duration) {
    return clock().plus(DSL.val(DayToSecond.valueOf(duration)));
  }

  /** A qualified name in the balancer schema. */
  public static Name name(String... parts) {
    String[] all = new String[parts.length + 1];
    all[0] = SCHEMA;
    System.arraycopy(parts, 0, all, 1, parts.length);
    return DSL.name(all);
  }
}
