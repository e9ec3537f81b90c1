package org.messagepump.commands;

import java.sql.Connection;
import java.sql.PreparedStatement;
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
import org.jooq.InsertValuesStep4;
import org.jooq.Record;
import org.jooq.Record2;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.conf.Settings;
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
import org.messagepump.core.spi.WakeSignal;

/**
 * Validates, encodes and inserts commands: idempotency keys first (one multi-row insert, then one
 * look-up of the keys that existed), then the commands in multi-row inserts of up to {@value
 * #ROWS_PER_INSERT} rows. Everything is validated before anything is written.
 *
 * <p>In the public package, package-private: it works on the public types ({@link NewCommand},
 * {@link EnqueueOptions}, {@link EnqueueResult}), and {@code internal} must not depend on them.
 */
final class Enqueuer {

  private static final Field<Instant> CREATED_AT =
      DSL.field(DSL.name("created_at"), SQLDataType.INSTANT);

  /**
   * Rows per insert statement. The keys' multi-row insert binds 4 values a row, 20,000 per
   * statement, well under the 65,535 at which jOOQ would inline every value into the SQL text; the
   * commands' insert binds eleven arrays of at most this many elements.
   */
  static final int ROWS_PER_INSERT = 5000;

  private final MessageCodec codec;
  private final CommandTables tables;
  private final String channel;
  private final boolean notify;
  private final Limits limits;
  private final ProducerHook hook;
  private final String insertSql;

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
    this.tables = tables;
    this.limits = limits;
    this.channel = channel;
    this.notify = notify;
    this.hook = hook;
    this.insertSql = insertSql(tables);
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
    DSLContext dsl = tx.dsl();
    EnqueueResult[] results = new EnqueueResult[commands.size()];
    Map<String, UUID> keyOwners = claimKeys(dsl, tables, commands);
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
  private static Map<String, UUID> claimKeys(
      DSLContext dsl, CommandTables t, List<EncodedCommand> commands) {
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
    Table<Record> keys = t.idempotencyKeys;
    for (int from = 0; from < sorted.size(); from += ROWS_PER_INSERT) {
      // A key's period runs from its creation: both times are the statement's start.
      InsertValuesStep4<Record, String, UUID, Instant, Instant> insert =
          dsl.insertInto(
              keys,
              CommandTables.IDEMPOTENCY_KEY,
              CommandTables.MESSAGE_ID,
              CREATED_AT,
              CommandTables.EXPIRES_AT);
      for (Map.Entry<String, EncodedCommand> e :
          sorted.subList(from, Math.min(sorted.size(), from + ROWS_PER_INSERT))) {
        EnqueueOptions o = e.getValue().options();
        insert =
            insert.values(
                DSL.val(e.getKey(), CommandTables.IDEMPOTENCY_KEY),
                DSL.val(e.getValue().messageId(), CommandTables.MESSAGE_ID),
                CommandTables.STATEMENT_TIMESTAMP,
                o.keyMode() == EnqueueOptions.KeyMode.PERIOD
                    ? CommandTables.STATEMENT_TIMESTAMP.plus(
                        DSL.val(org.jooq.types.DayToSecond.valueOf(o.keyPeriod())))
                    : DSL.val((Instant) null, CommandTables.EXPIRES_AT));
      }
      // An expired key (of a period) is taken over in the same statement: the conflicting row is
      // locked and, if still expired, given to this command. A second enqueuer of the same key
      // waits for the lock, then finds it no longer expired: exactly one of them takes it. A key
      // that is not expired stays locked by this transaction, so the look-up below finds it.
      for (Record2<String, UUID> r :
          insert
              .onConflict(CommandTables.IDEMPOTENCY_KEY)
              .doUpdate()
              .set(CommandTables.MESSAGE_ID, DSL.excluded(CommandTables.MESSAGE_ID))
              .set(CommandTables.EXPIRES_AT, DSL.excluded(CommandTables.EXPIRES_AT))
              .set(CREATED_AT, DSL.excluded(CREATED_AT))
              .where(
                  DSL.field(DSL.name("idempotency_keys", "expires_at"), SQLDataType.INSTANT)
                      .le(CommandTables.CLOCK_TIMESTAMP))
              .returningResult(CommandTables.IDEMPOTENCY_KEY, CommandTables.MESSAGE_ID)
              .fetch()) {
        owners.put(r.value1(), r.value2());
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
      // The keys as one text[] parameter, whatever their number: an IN list would pass one bind
      // value per key, and past 65,535 jOOQ inlines them all into the SQL text. A join with the
      // unnested array, not "= ANY(array)": with many keys that would be tested row by row.
      Table<?> wanted =
          DSL.unnest(DSL.val(taken.toArray(String[]::new), SQLDataType.CLOB.array()))
              .as("wanted", "k");
      dsl.select(CommandTables.IDEMPOTENCY_KEY, CommandTables.MESSAGE_ID)
          .from(t.idempotencyKeys)
          .join(wanted)
          .on(CommandTables.IDEMPOTENCY_KEY.eq(DSL.field(DSL.name("wanted", "k"), String.class)))
          .fetch()
          .forEach(r -> owners.put(r.value1(), r.value2()));
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
   * The insert of a list of commands: one row per element of eleven bound arrays, one per column
   * ({@code INSERT … SELECT … FROM unnest(?, ?, …)}). The text is the same whatever the number of
   * rows, so it is rendered once per queue and the PostgreSQL driver keeps it prepared on the
   * server; a multi-row {@code VALUES} list would be a new statement, rendered by jOOQ and parsed
   * and planned by the server, for every batch size, with ten bind values per row. The due time is
   * computed per row: the given instant, else the database clock ({@code clock_timestamp()}, so
   * rows keep their order) plus the delay. Instants and delays travel as ISO 8601 text ({@code
   * Instant.toString()}, {@code Duration.toString()}), which PostgreSQL reads exactly in any
   * session time zone.
   */
  private static String insertSql(CommandTables t) {
    DSLContext render = DSL.using(SQLDialect.POSTGRES, new Settings().withRenderSchema(true));
    List<Field<?>> columns =
        List.of(
            CommandTables.MESSAGE_ID,
            CommandTables.MESSAGE_TYPE,
            CommandTables.CORRELATION_ID,
            CommandTables.CAUSATION_ID,
            CommandTables.HEADERS,
            CommandTables.PAYLOAD,
            CommandTables.DELIVER_AT,
            CommandTables.PRIORITY,
            CommandTables.IDEMPOTENCY_KEY,
            CommandTables.RELEASE_KEY);
    StringBuilder names = new StringBuilder();
    for (Field<?> c : columns) {
      names.append(names.length() == 0 ? "" : ", ").append(render.render(c));
    }
    return "insert into "
        + render.render(t.commands)
        + " ("
        + names
        + ") select u.id, u.type, u.correlation, u.causation, u.headers, u.payload,"
        + " coalesce(u.at, clock_timestamp() + u.delay, clock_timestamp()),"
        + " u.priority, u.key, u.release"
        + " from unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[]::jsonb[],"
        + " ?::bytea[], ?::text[]::timestamptz[], ?::text[]::interval[], ?::smallint[], ?::text[],"
        + " ?::boolean[])"
        + " as u(id, type, correlation, causation, headers, payload, at, delay, priority, key,"
        + " release)";
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
    try (PreparedStatement ps = connection.prepareStatement(insertSql)) {
      ps.setArray(1, connection.createArrayOf("uuid", ids));
      ps.setArray(2, connection.createArrayOf("text", types));
      ps.setArray(3, connection.createArrayOf("text", correlations));
      ps.setArray(4, connection.createArrayOf("text", causations));
      ps.setArray(5, connection.createArrayOf("text", headers));
      ps.setArray(6, connection.createArrayOf("bytea", payloads));
      ps.setArray(7, connection.createArrayOf("text", at));
      ps.setArray(8, connection.createArrayOf("text", delays));
      ps.setArray(9, connection.createArrayOf("int2", priorities));
      ps.setArray(10, connection.createArrayOf("text", keys));
      ps.setArray(11, connection.createArrayOf("bool", release));
      ps.executeUpdate();
    }
  }
}
