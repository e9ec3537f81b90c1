package org.messagepump.eventstream;

import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Limits;
import org.messagepump.core.Pause;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Migrations;
import org.messagepump.core.spi.Pauses;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.internal.CheckpointOperations;
import org.messagepump.eventstream.internal.EventRows;
import org.messagepump.eventstream.internal.EventTables;
import org.messagepump.eventstream.internal.LagQueries;

/**
 * The operator face of the event store: everything that reads or changes a store's state without
 * its codec. It migrates the schema and lists the grants a runtime role needs, pauses and resumes
 * handlers, reads streams and their raw events, and works on the handlers' checkpoints: lag per
 * stream, parked streams and resuming them, replaying a handler from offset 0, moving one
 * checkpoint. Made with {@link #of(DataSource, String)} (no codec needed: for operators' tools), or
 * obtained from {@link EventStore#operations()}. Reads run in a transaction of their own.
 *
 * <pre>{@code
 * EventOperations ops = EventOperations.of(dataSource, "eventstream");
 * ops.migrate();
 * List<HandlerLag> lag = ops.lagSummaries();
 * ops.resumeAll("orders-projection");
 * }</pre>
 *
 * <p>The operations that change checkpoints ({@link #reset}, {@link #setCheckpoint}, {@link
 * #resume}, {@link #resumeAll}) come in two forms with one code path: in the caller's transaction
 * ({@code reset(tx, key)}, as {@link EventStore#append(Tx, List)} is), or in a transaction of their
 * own ({@code reset(key)}). Either way they are linearizable with deliveries: each first takes the
 * handler's lock (its row in {@code handlers}, which every transaction creating a checkpoint row of
 * the handler holds until it ends, including a delivery that created the row of the stream it is
 * handling), then updates the checkpoint rows, waiting for any a delivery holds. So they take
 * effect after every delivery that overlapped them and never miss a row; and they hold those locks
 * until the transaction ends, so no delivery of the handler on a changed row commits before it.
 * That is what makes a rebuild exact: {@code reset(tx, key)}, then empty the read model, in one
 * transaction (docs/eventstream.md, "Rebuilding a read model").
 *
 * <p>The transaction must be READ COMMITTED (PostgreSQL's default): each statement must see what
 * the deliveries it waited for committed. Bad input is an {@link IllegalArgumentException} (a
 * {@link NullPointerException} for a required null) before anything is written, and the caller's
 * transaction survives it.
 */
public final class EventOperations {

  /** The largest page of {@link #behind} and {@link #parkedStreams}. */
  public static final int MAX_PAGE = 10_000;

  /** The largest number of events {@link #read} returns at once. */
  public static final int MAX_READ_LIMIT = 10_000;

  private static final int MAX_ROLE_BYTES = 63;

  private final DataSource dataSource;
  private final EventTables tables;
  private final CheckpointOperations operations;
  private final LagQueries lagQueries;
  private final LagGauges gauges;

  // The columns of the statements joining streams and checkpoints, qualified with their table.
  private final Field<Long> streamId;
  private final Field<Long> nextOffset;
  private final Field<String> cpHandlerKey;
  private final Field<Long> cpStreamId;
  private final Field<Long> cpOffset;
  private final Field<Integer> cpFailures;
  private final Field<OffsetDateTime> cpResumeAt;
  private final Field<OffsetDateTime> cpParkedAt;
  private final Field<String> cpParkedReason;

  EventOperations(DataSource dataSource, EventTables tables) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.operations = new CheckpointOperations(tables);
    this.lagQueries = new LagQueries(tables);
    this.gauges = new LagGauges(tables.schema(), this::summaries);
    Table<?> streams = tables.streams;
    Table<?> cp = tables.checkpoints;
    this.streamId = EventTables.column(streams, EventTables.ID);
    this.nextOffset = EventTables.column(streams, EventTables.NEXT_OFFSET);
    this.cpHandlerKey = EventTables.column(cp, EventTables.HANDLER_KEY);
    this.cpStreamId = EventTables.column(cp, EventTables.STREAM_ID);
    this.cpOffset = EventTables.column(cp, EventTables.CHECKPOINT_OFFSET);
    this.cpFailures = EventTables.column(cp, EventTables.FAILURES);
    this.cpResumeAt = EventTables.column(cp, EventTables.RESUME_AT);
    this.cpParkedAt = EventTables.column(cp, EventTables.PARKED_AT);
    this.cpParkedReason = EventTables.column(cp, EventTables.PARKED_REASON);
  }

  /** The operations on the {@value EventStore#DEFAULT_SCHEMA} schema of {@code dataSource}. */
  public static EventOperations of(DataSource dataSource) {
    return of(dataSource, EventStore.DEFAULT_SCHEMA);
  }

  /**
   * The operations on the event store in {@code schema} of {@code dataSource}.
   *
   * @throws IllegalArgumentException when {@code dataSource} is null, or {@code schema} is not 1-40
   *     lower-case letters, digits or {@code _} (not starting with a digit) or names a system
   *     schema
   */
  public static EventOperations of(DataSource dataSource, String schema) {
    if (dataSource == null) {
      throw new IllegalArgumentException("dataSource must not be null");
    }
    return new EventOperations(dataSource, EventTables.of(Inputs.schema("schema", schema)));
  }

  /** The schema the store's tables live in. */
  public String schema() {
    return tables.schema();
  }

  /** The data source these operations run on. */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * Creates or upgrades the event store tables in this schema (created if missing), with the
   * schema's own Flyway history table ({@code <schema>.eventstream_flyway_history}). Returns the
   * number of migrations applied.
   */
  public int migrate() {
    // The one migration path of every driver: Flyway into the schema with its own history
    // table, serialized across processes by an advisory lock (core's Migrations).
    return Migrations.migrate(
        dataSource,
        tables.schema(),
        EventTables.HISTORY_TABLE,
        "classpath:db/" + EventTables.SCHEMA,
        java.util.Map.of());
  }

  /**
   * The statements that give {@code role} exactly what a store in this schema needs at run time
   * (after {@link #migrate()} ran as the schema's owner): USAGE on the schema; SELECT, INSERT,
   * UPDATE and DELETE on its seven tables; USAGE and SELECT on the stream id and checkpoint turn
   * sequences. Identifiers are quoted. Nothing is sent to the database.
   *
   * @throws IllegalArgumentException for a role name that is empty, holds NUL or is longer than 63
   *     UTF-8 bytes (PostgreSQL would truncate it)
   */
  public List<String> grantStatements(String role) {
    Inputs.text("role", Inputs.key("role", role), MAX_ROLE_BYTES);
    EventTables t = tables;
    String r = EventTables.quoted(DSL.name(role));
    List<String> names = new java.util.ArrayList<>();
    for (String table : EventTables.TABLE_NAMES) {
      names.add(t.quoted(table));
    }
    String tableList = String.join(", ", names);
    return List.of(
        "GRANT USAGE ON SCHEMA " + EventTables.quoted(DSL.name(t.schema())) + " TO " + r,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE " + tableList + " TO " + r,
        "GRANT USAGE, SELECT ON SEQUENCE "
            + t.quoted("streams_id_seq")
            + ", "
            + t.quoted("checkpoint_turns")
            + " TO "
            + r);
  }

  /**
   * Pauses the handler {@code handlerKey} cluster-wide: from the next poll on, no pump of any
   * process acquires events for it (its claim statement finds nothing; deliveries already being
   * handled finish). Appends go on, and the handler's checkpoints stay where they are, so it
   * resumes where it stopped. A key not registered yet may be paused. Returns true when the key was
   * not paused yet (a second pause keeps the first reason).
   *
   * @throws IllegalArgumentException when the key is null, blank, holds NUL or is over {@link
   *     Limits#MAX_KEY_BYTES} UTF-8 bytes, or the reason is over {@link Limits#MAX_REASON_CHARS}
   *     bytes or holds NUL; nothing is sent
   */
  public boolean pauseHandler(String handlerKey, String reason) {
    tables.pauses.checkName(handlerKey);
    Pauses.checkReason(reason);
    return Transactions.inNew(
        dataSource,
        "pausing an event handler",
        tx -> tables.pauses.pause(tx.dsl(), handlerKey, reason));
  }

  /**
   * Resumes a handler paused with {@link #pauseHandler}; true when it was paused.
   *
   * @throws IllegalArgumentException for a bad key, as {@link #pauseHandler}
   */
  public boolean resumeHandler(String handlerKey) {
    tables.pauses.checkName(handlerKey);
    return Transactions.inNew(
        dataSource, "resuming an event handler", tx -> tables.pauses.resume(tx.dsl(), handlerKey));
  }

  /** The handler keys paused cluster-wide, by key; {@link Pause#name()} is the handler key. */
  public List<Pause> pausedHandlers() {
    return Transactions.inNew(
        dataSource, "listing paused event handlers", tx -> tables.pauses.list(tx.dsl()));
  }

  /** The stream of an application key, empty when nothing was appended to the key yet. */
  public OptionalLong streamOf(String streamKey) {
    Inputs.key("streamKey", streamKey);
    Long id =
        Transactions.inNew(
            dataSource,
            "looking up a stream key",
            tx ->
                tx.dsl()
                    .select(EventTables.STREAM_ID)
                    .from(tables.streamKeys)
                    .where(EventTables.STREAM_KEY.eq(streamKey))
                    .fetchOne(org.jooq.Record1::value1));
    return id == null ? OptionalLong.empty() : OptionalLong.of(id);
  }

  /**
   * Reads up to {@code limit} committed events of an application key's stream from {@code
   * fromOffset}, in order (none when the key has no stream): to rebuild an aggregate ({@link
   * EventStore#decode} decodes them).
   */
  public List<StoredEvent> readKey(String streamKey, long fromOffset, int limit) {
    OptionalLong id = streamOf(streamKey);
    if (id.isEmpty()) {
      checkRead(fromOffset, limit);
      return List.of();
    }
    return read(id.getAsLong(), fromOffset, limit);
  }

  /**
   * Reads up to {@code limit} committed events of a stream from {@code fromOffset}, in order,
   * undecoded ({@link EventStore#decode} decodes them).
   *
   * @throws org.messagepump.core.UndecodableMessageException when a stored event's headers are not
   *     a JSON object of strings (the message names the event, not its data)
   */
  public List<StoredEvent> read(long streamId, long fromOffset, int limit) {
    checkRead(fromOffset, limit);
    return Transactions.inNew(
        dataSource,
        "reading stream " + streamId,
        tx ->
            tx.dsl()
                .select(EventRows.COLUMNS)
                .from(tables.events)
                .where(EventTables.STREAM_ID.eq(streamId))
                .and(EventTables.STREAM_OFFSET.ge(fromOffset))
                .orderBy(EventTables.STREAM_OFFSET)
                .limit(limit)
                .fetch(r -> EventStore.storedEvent(EventRows.toReadableRow(r))));
  }

  private static void checkRead(long fromOffset, int limit) {
    if (fromOffset < 0) {
      throw new IllegalArgumentException("fromOffset must not be negative: " + fromOffset);
    }
    if (limit < 1 || limit > MAX_READ_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_READ_LIMIT + ": " + limit);
    }
  }

  /** Every stream with its committed next offset, by id. */
  public List<StreamInfo> streams() {
    return Transactions.inNew(
        dataSource,
        "listing streams",
        tx ->
            tx.dsl()
                .select(EventTables.ID, EventTables.NEXT_OFFSET, EventTables.CREATED_AT)
                .from(tables.streams)
                .orderBy(EventTables.ID)
                .fetch(
                    r ->
                        new StreamInfo(
                            r.value1(),
                            r.value2(),
                            r.value3() == null ? null : r.value3().toInstant())));
  }

  /**
   * How many events every stream holds together (the sum of the streams' committed next offsets):
   * one aggregate over the streams, whatever the number of handlers. Operators take differences of
   * it for the rate of appends.
   */
  public long eventCount() {
    return Transactions.inNew(
        dataSource,
        "counting events",
        tx ->
            tx.dsl()
                .select(DSL.coalesce(DSL.sum(EventTables.NEXT_OFFSET), java.math.BigDecimal.ZERO))
                .from(tables.streams)
                .fetchOne()
                .value1()
                .longValue());
  }

  /**
   * Every handler key that has started reading at least one stream, sorted. One index probe per
   * key, however many streams there are.
   */
  public List<String> handlerKeys() {
    return Transactions.inNew(
        dataSource, "listing handler keys", tx -> jdbc(() -> lagQueries.handlerKeys(conn(tx))));
  }

  /**
   * Per handler (sorted by key): how many streams lag and are parked, the total lag and failures.
   * Unlike summing {@link #checkpoints}, its cost grows with the streams that may lag (rows behind
   * their stream's end, parked rows, streams changed since the handler last looked), found through
   * the pollers' indexes, not with every stream times every handler.
   */
  public List<HandlerLag> lagSummaries() {
    return summaries().stream()
        .map(
            s ->
                new HandlerLag(
                    s.handlerKey(), s.laggingStreams(), s.parkedStreams(), s.lag(), s.failures()))
        .toList();
  }

  private List<LagQueries.Summary> summaries() {
    return Transactions.inNew(
        dataSource, "summing the handlers' lag", tx -> jdbc(() -> lagQueries.summaries(conn(tx))));
  }

  LagGauges gauges() {
    return gauges;
  }

  /**
   * A page of the streams {@code handlerKey} lags on, fails on or has parked, with their keys:
   * parked first, then the largest lag, then by stream id. Pass the {@link StreamLag#cursor()} of
   * the last entry of a page as {@code after} for the next one ({@code null} for the first). Its
   * cost grows with the streams that may lag (see {@link #lagSummaries()}), not with every stream.
   *
   * @throws IllegalArgumentException for a bad key, a limit outside 1..{@value #MAX_PAGE}, or a
   *     cursor of another handler; nothing is sent
   */
  public List<StreamLag> behind(String handlerKey, StreamLag.Cursor after, int limit) {
    requireKey(handlerKey);
    requireLimit(limit);
    if (after != null && !after.handlerKey().equals(handlerKey)) {
      throw new IllegalArgumentException(
          "the cursor is of handler '" + after.handlerKey() + "', not '" + handlerKey + "'");
    }
    return Transactions.inNew(
        dataSource,
        "listing the streams handler '" + handlerKey + "' lags on",
        tx ->
            jdbc(
                () ->
                    lagQueries
                        .behind(
                            conn(tx),
                            handlerKey,
                            after != null && after.parked(),
                            after == null ? null : after.lag(),
                            after == null ? 0 : after.streamId(),
                            limit)
                        .stream()
                        .map(EventOperations::streamLag)
                        .toList()));
  }

  /**
   * A page of the streams parked for any handler, with their keys: the largest lag first, then by
   * handler key and stream id. Pass the {@link StreamLag#cursor()} of the last entry of a page as
   * {@code after} for the next one ({@code null} for the first).
   *
   * @throws IllegalArgumentException for a limit outside 1..{@value #MAX_PAGE}; nothing is sent
   */
  public List<StreamLag> parkedStreams(StreamLag.Cursor after, int limit) {
    requireLimit(limit);
    return Transactions.inNew(
        dataSource,
        "listing parked streams",
        tx ->
            jdbc(
                () ->
                    lagQueries
                        .parked(
                            conn(tx),
                            after == null ? null : after.lag(),
                            after == null ? null : after.handlerKey(),
                            after == null ? 0 : after.streamId(),
                            limit)
                        .stream()
                        .map(EventOperations::streamLag)
                        .toList()));
  }

  private static void requireLimit(int limit) {
    if (limit < 1 || limit > MAX_PAGE) {
      throw new IllegalArgumentException("limit must be 1.." + MAX_PAGE + ": " + limit);
    }
  }

  private static StreamLag streamLag(LagQueries.Row r) {
    return new StreamLag(
        new Checkpoint(
            r.handlerKey(),
            r.streamId(),
            r.offset(),
            r.nextOffset(),
            r.failures(),
            instant(r.resumeAt()),
            instant(r.parkedAt()),
            r.parkedReason(),
            r.tracked()),
        r.streamKey());
  }

  private static java.sql.Connection conn(Tx tx) {
    return tx.connection();
  }

  /** A JDBC read whose {@link SQLException} becomes the drivers' {@link DatabaseException}. */
  private interface JdbcRead<T> {
    T read() throws SQLException;
  }

  private static <T> T jdbc(JdbcRead<T> read) {
    try {
      return read.read();
    } catch (SQLException e) {
      throw new DatabaseException("reading the handlers' lag", e);
    }
  }

  /**
   * The handler's checkpoint of every stream, by stream id; streams it has not started reading are
   * listed with offset 0 and {@code tracked = false}.
   */
  public List<Checkpoint> checkpoints(String handlerKey) {
    requireKey(handlerKey);
    return Transactions.inNew(
        dataSource,
        "reading the checkpoints of handler '" + handlerKey + "'",
        tx ->
            tx.dsl()
                .select(streamId, nextOffset)
                .select(checkpointColumns())
                .from(tables.streams)
                .leftJoin(tables.checkpoints)
                .on(cpStreamId.eq(streamId))
                .and(cpHandlerKey.eq(handlerKey))
                .orderBy(streamId)
                .fetch(r -> checkpoint(handlerKey, r)));
  }

  /** The handler's total lag: events at or after its checkpoints, over every stream. */
  public long lag(String handlerKey) {
    return checkpoints(handlerKey).stream().mapToLong(Checkpoint::lag).sum();
  }

  /** The streams parked for {@code handlerKey}, by stream id. */
  public List<Checkpoint> parked(String handlerKey) {
    requireKey(handlerKey);
    return parkedWhere(cpHandlerKey.eq(handlerKey));
  }

  /** The streams parked for any handler, by handler key and stream id. */
  public List<Checkpoint> parked() {
    return parkedWhere(cpParkedAt.isNotNull());
  }

  private List<Checkpoint> parkedWhere(Condition condition) {
    return Transactions.inNew(
        dataSource,
        "listing parked streams",
        tx ->
            tx.dsl()
                .select(streamId, nextOffset)
                .select(checkpointColumns())
                .from(tables.checkpoints)
                .join(tables.streams)
                .on(streamId.eq(cpStreamId))
                .where(condition)
                .and(cpParkedAt.isNotNull())
                .orderBy(cpHandlerKey, cpStreamId)
                .fetch(r -> checkpoint(r.get(cpHandlerKey), r)));
  }

  /**
   * Resumes a parked stream for a handler, in a transaction of its own: failures reset, due now,
   * from the same checkpoint (the event that failed comes first). Returns false when it was not
   * parked. See {@link #resume(Tx, String, long)}.
   */
  public boolean resume(String handlerKey, long streamId) {
    requireKey(handlerKey);
    return Transactions.inNew(
        dataSource, resuming(handlerKey), tx -> resume(tx, handlerKey, streamId));
  }

  /**
   * Resumes a parked stream for a handler in the caller's transaction {@code tx} (not committed
   * here), holding the handler's lock until it ends (see the class doc). Returns false when it was
   * not parked.
   *
   * @throws NullPointerException when {@code tx} or the key is null; nothing is sent
   * @throws IllegalArgumentException for a bad key, or a {@code tx} with autocommit on or not in a
   *     READ COMMITTED transaction; nothing is written and the transaction stays usable
   */
  public boolean resume(Tx tx, String handlerKey, long streamId) {
    joinable(tx, handlerKey);
    return Transactions.inCaller(
            tx, resuming(handlerKey), t -> operations.resume(t.dsl(), handlerKey, streamId))
        == 1;
  }

  /** Resumes every stream parked for {@code handlerKey} in a transaction of its own; how many. */
  public int resumeAll(String handlerKey) {
    requireKey(handlerKey);
    return Transactions.inNew(dataSource, resuming(handlerKey), tx -> resumeAll(tx, handlerKey));
  }

  /**
   * Resumes every stream parked for {@code handlerKey} in the caller's transaction {@code tx} (not
   * committed here), holding the handler's lock until it ends; returns how many.
   *
   * @throws NullPointerException when {@code tx} or the key is null; nothing is sent
   * @throws IllegalArgumentException as {@link #resume(Tx, String, long)}
   */
  public int resumeAll(Tx tx, String handlerKey) {
    joinable(tx, handlerKey);
    return Transactions.inCaller(
        tx, resuming(handlerKey), t -> operations.resume(t.dsl(), handlerKey, null));
  }

  private static String resuming(String handlerKey) {
    return "resuming parked streams of handler '" + handlerKey + "'";
  }

  /**
   * Replays every stream for {@code handlerKey} from offset 0, in a transaction of its own:
   * checkpoints to 0, failures reset, parked streams resumed. Returns how many checkpoints were
   * reset. To clear a read model in the same transaction, use {@link #reset(Tx, String)}.
   */
  public int reset(String handlerKey) {
    requireKey(handlerKey);
    return Transactions.inNew(dataSource, resetting(handlerKey), tx -> reset(tx, handlerKey));
  }

  /**
   * Replays every stream for {@code handlerKey} from offset 0 in the caller's transaction {@code
   * tx} (not committed here): checkpoints to 0, failures reset, parked streams resumed. Returns how
   * many checkpoints were reset.
   *
   * <p>It waits for every delivery of the handler in flight, and from then until {@code tx} ends no
   * delivery of the handler commits: so the caller's writes after it in {@code tx} (emptying the
   * read model the handler writes) and the reset take effect together, and every event is applied
   * once to the emptied read model. Write the read model after this call, not before: a delivery in
   * flight holds its checkpoint while it waits for rows the caller would already hold.
   *
   * @throws NullPointerException when {@code tx} or the key is null; nothing is sent
   * @throws IllegalArgumentException for a bad key, or a {@code tx} with autocommit on or not in a
   *     READ COMMITTED transaction; nothing is written and the transaction stays usable
   */
  public int reset(Tx tx, String handlerKey) {
    joinable(tx, handlerKey);
    return Transactions.inCaller(
        tx, resetting(handlerKey), t -> operations.reset(t.dsl(), handlerKey));
  }

  private static String resetting(String handlerKey) {
    return "resetting handler '" + handlerKey + "'";
  }

  /**
   * Moves one checkpoint to {@code newOffset} (backwards replays, forwards skips) if it is at
   * {@code expectedOffset} (an untracked stream counts as 0), in a transaction of its own. Failures
   * are reset. See {@link #setCheckpoint(Tx, String, long, long, long)}.
   *
   * @throws CheckpointConflictException when the checkpoint is elsewhere; nothing is changed
   * @throws IllegalArgumentException for a negative offset or an unknown stream
   */
  public void setCheckpoint(String handlerKey, long streamId, long expectedOffset, long newOffset) {
    requireKey(handlerKey);
    requireOffsets(expectedOffset, newOffset);
    Transactions.inNew(
        dataSource,
        setting(handlerKey, streamId),
        tx -> {
          setCheckpoint(tx, handlerKey, streamId, expectedOffset, newOffset);
          return null;
        });
  }

  /**
   * Moves one checkpoint to {@code newOffset} if it is at {@code expectedOffset} (an untracked
   * stream counts as 0), in the caller's transaction {@code tx} (not committed here), holding the
   * handler's lock until it ends: the delivery in flight on the stream is waited for, and none
   * commits on it until {@code tx} ends. Failures are reset.
   *
   * @throws CheckpointConflictException when the checkpoint is elsewhere; nothing is written and
   *     the transaction stays usable (the handler's lock stays held until it ends)
   * @throws NullPointerException when {@code tx} or the key is null; nothing is sent
   * @throws IllegalArgumentException for a bad key or a negative offset (nothing is sent), an
   *     unknown stream, or a {@code tx} with autocommit on or not in a READ COMMITTED transaction;
   *     nothing is written and the transaction stays usable
   */
  public void setCheckpoint(
      Tx tx, String handlerKey, long streamId, long expectedOffset, long newOffset) {
    joinable(tx, handlerKey);
    requireOffsets(expectedOffset, newOffset);
    long found =
        Transactions.inCaller(
            tx,
            setting(handlerKey, streamId),
            t -> {
              // Streams are never deleted: checked once, before the handler is locked.
              if (!operations.streamExists(t.dsl(), streamId)) {
                throw new IllegalArgumentException("stream " + streamId + " does not exist");
              }
              return operations.setCheckpoint(
                  t.dsl(), handlerKey, streamId, expectedOffset, newOffset);
            });
    if (found != expectedOffset) {
      throw new CheckpointConflictException(handlerKey, streamId, expectedOffset, found);
    }
  }

  private static String setting(String handlerKey, long streamId) {
    return "setting the checkpoint of handler '" + handlerKey + "' on stream " + streamId;
  }

  private static void requireOffsets(long expectedOffset, long newOffset) {
    if (expectedOffset < 0 || newOffset < 0) {
      throw new IllegalArgumentException(
          "offsets must not be negative: expected " + expectedOffset + ", new " + newOffset);
    }
  }

  /**
   * Checks what can be checked without the database before an operation joins {@code tx}: the
   * transaction is one (autocommit off: the handler's lock must outlive the statement), the key is
   * valid.
   */
  private static void joinable(Tx tx, String handlerKey) {
    Objects.requireNonNull(tx, "tx must not be null");
    requireKey(handlerKey);
    boolean autoCommit;
    try {
      autoCommit = tx.connection().getAutoCommit();
    } catch (SQLException e) {
      throw new DatabaseException("reading the connection's autocommit mode", e);
    }
    if (autoCommit) {
      throw new IllegalArgumentException(
          "tx must be an open transaction (autocommit off): the handler's lock is held until it"
              + " ends");
    }
  }

  private List<org.jooq.Field<?>> checkpointColumns() {
    return List.of(cpHandlerKey, cpOffset, cpFailures, cpResumeAt, cpParkedAt, cpParkedReason);
  }

  private Checkpoint checkpoint(String handlerKey, Record r) {
    boolean tracked = r.get(cpHandlerKey) != null;
    return new Checkpoint(
        handlerKey,
        r.get(streamId),
        tracked ? r.get(cpOffset) : 0,
        r.get(nextOffset),
        tracked ? r.get(cpFailures) : 0,
        instant(r.get(cpResumeAt)),
        instant(r.get(cpParkedAt)),
        r.get(cpParkedReason),
        tracked);
  }

  private static Instant instant(OffsetDateTime t) {
    // 'epoch' is the default of a never postponed checkpoint: report it as null.
    if (t == null || t.toEpochSecond() <= 0) {
      return null;
    }
    return t.toInstant();
  }

  private static void requireKey(String handlerKey) {
    Inputs.key("handlerKey", handlerKey);
  }
}
