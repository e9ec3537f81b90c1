package org.messagepump.commands;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Query;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.HeadersJson;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.ProducerHooks;
import org.messagepump.core.Tx;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.StatementCache;
import org.messagepump.core.spi.WakeSignal;

/**
 * Validates, encodes and inserts commands: idempotency keys first (one insert, then one look-up of
 * the keys that existed), then the commands in inserts of up to {@value #ROWS_PER_INSERT} rows.
 * Everything is validated before anything is written. Each statement takes its rows as bound
 * arrays, one per column: built with jOOQ and rendered once per queue through {@link
 * StatementCache}, its text is the same whatever the number of rows, so the PostgreSQL driver keeps
 * it prepared on the server; a multi-row {@code VALUES} list would be a new statement, rendered by
 * jOOQ and parsed and planned by the server, for every batch size.
 *
 * <p>In the public package, package-private: it works on the public types ({@link NewCommand},
 * {@link EnqueueOptions}, {@link EnqueueResult}), and {@code internal} must not depend on them.
 */
final class Enqueuer {

  private static final Field<Instant> CREATED_AT =
      DSL.field(DSL.name("created_at"), SQLDataType.INSTANT);

  /** Rows per insert of commands: it binds eleven arrays of at most this many elements. */
  static final int ROWS_PER_INSERT = 5000;

  private final MessageCodec codec;
  private final String channel;
  private final boolean notify;
  private final Limits limits;
  private final ProducerHook hook;
  private final StatementCache.Statement insertCommands;
  private final StatementCache.Statement insertKeys;
  private final StatementCache.Statement findKeys;

  /**
   * An enqueuer into {@code tables} encoding with {@code codec}, checking input against {@code
   * limits}, signalling {@code channel} when {@code notify}, and calling {@code hook} (may be null)
   * on each insert.
   */
  Enqueuer(
      MessageCodec codec,
      CommandTables tables,
      Limits limits,
      String channel,
      boolean notify,
      ProducerHook hook) {
    this.codec = codec;
    this.limits = limits;
    this.channel = channel;
    this.notify = notify;
    this.hook = hook;
    this.insertCommands = StatementCache.render(dsl -> insertCommands(dsl, tables), COMMAND_ARRAYS);
    this.insertKeys =
        StatementCache.render(dsl -> insertKeys(dsl, tables), "keys", "ids", "periods");
    this.findKeys = StatementCache.render(dsl -> findKeys(dsl, tables), "keys");
  }

  /** Validates and encodes; throws {@link IllegalArgumentException} naming the first problem. */
  List<EncodedCommand> encode(List<? extends NewCommand> commands) {
    if (commands == null) {
      throw new IllegalArgumentException("commands must not be null");
    }
    List<EncodedCommand> out = new ArrayList<>(commands.size());
    for (int i = 0; i < commands.size(); i++) {
      NewCommand c = commands.get(i);
      if (c == null) {
        throw new IllegalArgumentException("command must not be null (index " + i + ")");
      }
      out.add(encode(c));
    }
    return out;
  }

  private EncodedCommand encode(NewCommand c) {
    String type;
    byte[] payload;
    if (c instanceof NewCommand.Raw raw) {
      type = raw.type();
      payload = raw.payload();
    } else {
      Object command = ((NewCommand.Typed) c).command();
      try {
        type = codec.typeOf(command.getClass());
      } catch (UnknownMessageTypeException e) {
        throw new IllegalArgumentException(
            "command class " + command.getClass().getName() + " is not registered with the codec",
            e);
      }
      if (type == null || type.isBlank() || type.length() > CommandQueue.MAX_TYPE_LENGTH) {
        throw new IllegalArgumentException(
            "the codec gave an invalid type name for " + command.getClass().getName());
      }
      Inputs.key("type of " + command.getClass().getName(), type);
      payload = codec.encode(command);
      if (payload == null) {
        throw new IllegalArgumentException(
            "the codec encoded " + command.getClass().getName() + " as null");
      }
    }
    if (payload.length > limits.maxPayloadBytes()) {
      throw new IllegalArgumentException(
          "payload of command '"
              + type
              + "' is "
              + payload.length
              + " bytes, over maxPayloadBytes ("
              + limits.maxPayloadBytes()
              + ")");
    }
    EnqueueOptions o = c.options();
    Inputs.headers(o.headers(), limits);
    return new EncodedCommand(UUID.randomUUID(), type, payload, o);
  }

  /**
   * Inserts encoded commands in {@code tx}; results in input order. With a producer hook, its
   * headers are added to each command's (the command's own win) and it is told the outcome.
   */
  List<EnqueueResult> insert(Tx tx, List<EncodedCommand> commands) {
    if (hook == null) {
      return write(tx, commands);
    }
    List<String> types = new ArrayList<>(commands.size());
    for (EncodedCommand c : commands) {
      types.add(c.type());
    }
    ProducerHook.Send send =
        ProducerHooks.start(
            hook,
            CommandDriver.NAME,
            ProducerHooks.commonDestination(types),
            commands.size(),
            commands.size() == 1 ? commands.get(0).messageId().toString() : null);
    List<EnqueueResult> results;
    try {
      results = write(tx, withHeaders(commands, ProducerHooks.headers(send)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    ProducerHooks.sent(send, results.size() == 1 ? results.get(0).messageId().toString() : null);
    return results;
  }

  /** {@code commands} with {@code injected} added to their headers, checked against the limits. */
  private List<EncodedCommand> withHeaders(
      List<EncodedCommand> commands, Map<String, String> injected) {
    if (injected.isEmpty()) {
      return commands;
    }
    List<EncodedCommand> out = new ArrayList<>(commands.size());
    for (EncodedCommand c : commands) {
      Map<String, String> headers =
          Inputs.headers(ProducerHooks.merge(c.options().headers(), injected), limits);
      out.add(
          new EncodedCommand(
              c.messageId(), c.type(), c.payload(), c.options().withHeaders(headers)));
    }
    return out;
  }

  private List<EnqueueResult> write(Tx tx, List<EncodedCommand> commands) {
    EnqueueResult[] results = new EnqueueResult[commands.size()];
    Map<String, UUID> keyOwners;
    try {
      keyOwners = claimKeys(tx.connection(), commands);
    } catch (SQLException ex) {
      throw new org.jooq.exception.DataAccessException(
          "inserting idempotency keys: " + ex.getMessage(), ex);
    }
    List<EncodedCommand> fresh = new ArrayList<>(commands.size());
    for (int i = 0; i < commands.size(); i++) {
      EncodedCommand c = commands.get(i);
      String key = c.options().idempotencyKey();
      UUID owner = key == null ? c.messageId() : keyOwners.get(key);
      if (owner.equals(c.messageId())) {
        results[i] = new EnqueueResult.Enqueued(c.messageId());
        fresh.add(c);
      } else {
        results[i] = new EnqueueResult.Duplicate(owner);
      }
    }
    try {
      for (int from = 0; from < fresh.size(); from += ROWS_PER_INSERT) {
        insertCommands(
            tx.connection(), fresh.subList(from, Math.min(fresh.size(), from + ROWS_PER_INSERT)));
      }
    } catch (SQLException ex) {
      throw new org.jooq.exception.DataAccessException(
          "inserting commands: " + ex.getMessage(), ex);
    }
    if (notify && !fresh.isEmpty()) {
      try {
        WakeSignal.send(tx.connection(), channel);
      } catch (java.sql.SQLException ex) {
        throw new org.jooq.exception.DataAccessException("signalling " + channel, ex);
      }
    }
    return Arrays.asList(results);
  }

  /**
   * Inserts the keys (sorted, so concurrent batches lock them in one order) and returns, per key,
   * the message id owning it: one of ours when we inserted it, else the original one.
   */
  private Map<String, UUID> claimKeys(Connection connection, List<EncodedCommand> commands)
      throws SQLException {
    Map<String, EncodedCommand> candidates = new LinkedHashMap<>();
    for (EncodedCommand c : commands) {
      String key = c.options().idempotencyKey();
      if (key != null) {
        candidates.putIfAbsent(key, c);
      }
    }
    Map<String, UUID> owners = new HashMap<>();
    if (candidates.isEmpty()) {
      return owners;
    }
    List<Map.Entry<String, EncodedCommand>> sorted = new ArrayList<>(candidates.entrySet());
    sorted.sort(Map.Entry.comparingByKey(Comparator.naturalOrder()));
    int n = sorted.size();
    String[] keys = new String[n];
    UUID[] ids = new UUID[n];
    String[] periods = new String[n];
    for (int i = 0; i < n; i++) {
      Map.Entry<String, EncodedCommand> e = sorted.get(i);
      EnqueueOptions o = e.getValue().options();
      keys[i] = e.getKey();
      ids[i] = e.getValue().messageId();
      periods[i] =
          o.keyMode() == EnqueueOptions.KeyMode.PERIOD
              ? CommandTables.interval(o.keyPeriod())
              : null;
    }
    try (PreparedStatement ps = insertKeys.prepare(connection, keys, ids, periods);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        owners.put(rs.getString(1), rs.getObject(2, UUID.class));
      }
    }
    List<String> taken = new ArrayList<>();
    for (String key : candidates.keySet()) {
      if (!owners.containsKey(key)) {
        taken.add(key);
      }
    }
    if (!taken.isEmpty()) {
      // A new statement: under READ COMMITTED it sees the key committed by the transaction
      // whose insert made ours do nothing.
      Object wanted = taken.toArray(String[]::new);
      try (PreparedStatement ps = findKeys.prepare(connection, wanted);
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          owners.put(rs.getString(1), rs.getObject(2, UUID.class));
        }
      }
      for (String key : taken) {
        if (!owners.containsKey(key)) {
          throw new IllegalStateException(
              "an idempotency key conflicted but is not visible (isolation level?)");
        }
      }
    }
    return owners;
  }

  /**
   * The insert of keys: one row per element of parameters {@code keys} (in the order the rows are
   * inserted and locked), {@code ids} and {@code periods} (the period of a key that expires, as
   * {@link CommandTables#interval} text, else null). A key's period runs from its creation: both
   * times are the statement's start. An expired key (of a period) is taken over in the same
   * statement: the conflicting row is locked and, if still expired, given to this command. A second
   * enqueuer of the same key waits for the lock, then finds it no longer expired: exactly one of
   * them takes it. A key that is not expired stays locked by this transaction, so the look-up
   * ({@link #findKeys}) finds it. Returns the keys inserted or taken over, with their message ids.
   */
  private static Query insertKeys(DSLContext dsl, CommandTables t) {
    Table<?> u =
        StatementCache.rows(
            false,
            "u",
            List.of("key", "id", "period"),
            StatementCache.parameter("keys", SQLDataType.CLOB.array()),
            StatementCache.parameter("ids", SQLDataType.UUID.array()),
            StatementCache.parameter("periods", SQLDataType.CLOB.array())
                .cast(SQLDataType.INTERVAL.array()));
    return dsl.insertInto(
            t.idempotencyKeys,
            CommandTables.IDEMPOTENCY_KEY,
            CommandTables.MESSAGE_ID,
            CREATED_AT,
            CommandTables.EXPIRES_AT)
        .select(
            dsl.select(
                    DSL.field(DSL.name("u", "key"), String.class),
                    DSL.field(DSL.name("u", "id"), UUID.class),
                    CommandTables.STATEMENT_TIMESTAMP,
                    CommandTables.STATEMENT_TIMESTAMP.plus(
                        DSL.field(DSL.name("u", "period"), SQLDataType.INTERVAL)))
                .from(u))
        .onConflict(CommandTables.IDEMPOTENCY_KEY)
        .doUpdate()
        .set(CommandTables.MESSAGE_ID, DSL.excluded(CommandTables.MESSAGE_ID))
        .set(CommandTables.EXPIRES_AT, DSL.excluded(CommandTables.EXPIRES_AT))
        .set(CREATED_AT, DSL.excluded(CREATED_AT))
        .where(
            DSL.field(DSL.name("idempotency_keys", "expires_at"), SQLDataType.INSTANT)
                .le(CommandTables.CLOCK_TIMESTAMP))
        .returningResult(CommandTables.IDEMPOTENCY_KEY, CommandTables.MESSAGE_ID);
  }

  /**
   * The keys of parameter {@code keys} (a {@code text[]}, whatever their number: an IN list would
   * pass one bind value per key) with their message ids: a join with the unnested array, not {@code
   * = ANY(array)}, which many keys would make a row-by-row test.
   */
  private static Query findKeys(DSLContext dsl, CommandTables t) {
    Table<?> wanted =
        DSL.unnest(StatementCache.parameter("keys", SQLDataType.CLOB.array())).as("wanted", "k");
    return dsl.select(CommandTables.IDEMPOTENCY_KEY, CommandTables.MESSAGE_ID)
        .from(t.idempotencyKeys)
        .join(wanted)
        .on(CommandTables.IDEMPOTENCY_KEY.eq(DSL.field(DSL.name("wanted", "k"), String.class)));
  }

  /** The parameters of {@link #insertCommands}, the columns' arrays, in order. */
  private static final String[] COMMAND_ARRAYS = {
    "ids",
    "types",
    "correlations",
    "causations",
    "headers",
    "payloads",
    "at",
    "delays",
    "priorities",
    "keys",
    "release"
  };

  /**
   * The insert of a list of commands: one row per element of eleven bound arrays, one per column
   * ({@code INSERT … SELECT … FROM unnest(?, ?, …)}, {@link StatementCache#rows}). The due time is
   * computed per row: the given instant, else the database clock ({@code clock_timestamp()}, so
   * rows keep their order) plus the delay. Instants and delays travel as ISO 8601 text ({@code
   * Instant.toString()}, {@code Duration.toString()}), which PostgreSQL reads exactly in any
   * session time zone; the headers as JSON text.
   */
  private static Query insertCommands(DSLContext dsl, CommandTables t) {
    List<String> names =
        List.of(
            "id",
            "type",
            "correlation",
            "causation",
            "headers",
            "payload",
            "at",
            "delay",
            "priority",
            "key",
            "release");
    Table<?> u =
        StatementCache.rows(
            false,
            "u",
            names,
            StatementCache.parameter("ids", SQLDataType.UUID.array()),
            StatementCache.parameter("types", SQLDataType.CLOB.array()),
            StatementCache.parameter("correlations", SQLDataType.CLOB.array()),
            StatementCache.parameter("causations", SQLDataType.CLOB.array()),
            StatementCache.parameter("headers", SQLDataType.CLOB.array())
                .cast(SQLDataType.JSONB.array()),
            StatementCache.parameter("payloads", SQLDataType.BLOB.array()),
            StatementCache.parameter("at", SQLDataType.CLOB.array())
                .cast(SQLDataType.INSTANT.array()),
            StatementCache.parameter("delays", SQLDataType.CLOB.array())
                .cast(SQLDataType.INTERVAL.array()),
            StatementCache.parameter("priorities", SQLDataType.SMALLINT.array()),
            StatementCache.parameter("keys", SQLDataType.CLOB.array()),
            StatementCache.parameter("release", SQLDataType.BOOLEAN.array()));
    Field<Instant> at = DSL.field(DSL.name("u", "at"), SQLDataType.INSTANT);
    Field<org.jooq.types.YearToSecond> delay =
        DSL.field(DSL.name("u", "delay"), SQLDataType.INTERVAL);
    return dsl.insertInto(
            t.commands,
            CommandTables.MESSAGE_ID,
            CommandTables.MESSAGE_TYPE,
            CommandTables.CORRELATION_ID,
            CommandTables.CAUSATION_ID,
            CommandTables.HEADERS,
            CommandTables.PAYLOAD,
            CommandTables.DELIVER_AT,
            CommandTables.PRIORITY,
            CommandTables.IDEMPOTENCY_KEY,
            CommandTables.RELEASE_KEY)
        .select(
            dsl.select(
                    DSL.field(DSL.name("u", "id"), SQLDataType.UUID),
                    DSL.field(DSL.name("u", "type"), SQLDataType.CLOB),
                    DSL.field(DSL.name("u", "correlation"), SQLDataType.CLOB),
                    DSL.field(DSL.name("u", "causation"), SQLDataType.CLOB),
                    DSL.field(DSL.name("u", "headers"), SQLDataType.JSONB),
                    DSL.field(DSL.name("u", "payload"), SQLDataType.BLOB),
                    DSL.coalesce(
                        at,
                        CommandTables.CLOCK_TIMESTAMP.plus(delay),
                        CommandTables.CLOCK_TIMESTAMP),
                    DSL.field(DSL.name("u", "priority"), SQLDataType.SMALLINT),
                    DSL.field(DSL.name("u", "key"), SQLDataType.CLOB),
                    DSL.field(DSL.name("u", "release"), SQLDataType.BOOLEAN))
                .from(u));
  }

  private void insertCommands(Connection connection, List<EncodedCommand> rows)
      throws SQLException {
    int n = rows.size();
    UUID[] ids = new UUID[n];
    String[] types = new String[n];
    String[] correlations = new String[n];
    String[] causations = new String[n];
    String[] headers = new String[n];
    byte[][] payloads = new byte[n][];
    String[] at = new String[n];
    String[] delays = new String[n];
    Short[] priorities = new Short[n];
    String[] keys = new String[n];
    Boolean[] release = new Boolean[n];
    for (int i = 0; i < n; i++) {
      EncodedCommand c = rows.get(i);
      EnqueueOptions o = c.options();
      ids[i] = c.messageId();
      types[i] = c.type();
      correlations[i] = o.correlationId();
      causations[i] = o.causationId();
      headers[i] = HeadersJson.write(o.headers()).data();
      payloads[i] = c.payload();
      at[i] = o.deliverAt() == null ? null : o.deliverAt().toString();
      delays[i] = o.delay() == null || o.delay().isZero() ? null : o.delay().toString();
      priorities[i] = (short) o.priority();
      keys[i] = o.idempotencyKey();
      release[i] = o.keyMode() == EnqueueOptions.KeyMode.WHILE_PENDING;
    }
    insertCommands.executeUpdate(
        connection,
        ids,
        types,
        correlations,
        causations,
        headers,
        payloads,
        at,
        delays,
        priorities,
        keys,
        release);
  }
}
