package org.messagepump.console.internal;

import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.PendingCommand;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventOperations;

/**
 * The drivers' operator APIs on the console's schemas (the drivers' defaults unless configured).
 * Operators need no codec: the console works on any database whatever its message classes.
 */
public final class Stores {

  /** Where a retried command is now. */
  public enum CommandState {
    /** Back in the queue, not handled yet. */
    WAITING,
    /** In the queue, its handler running under a lease (lease mode). */
    LEASED,
    /** Parked again. */
    DEAD_LETTER,
    /** Gone from the queue: handled (a handled command is deleted), or discarded. */
    DONE
  }

  /**
   * Where a command is, and for a leased one its lease's holder and expiry (else null).
   *
   * @param state where it is
   * @param holder the lease's holder, when {@link CommandState#LEASED}
   * @param leaseExpiresAt when the lease runs out unless extended, when {@link CommandState#LEASED}
   */
  public record CommandStatus(CommandState state, String holder, Instant leaseExpiresAt) {}

  private final DataSource dataSource;
  private final CommandOperations commands;
  private final EventOperations events;
  private final BalancerOperations balancer;
  private final String balancerSchema;

  /**
   * The operator APIs on the given schemas; a bad schema name throws the driver's {@link
   * IllegalArgumentException}.
   */
  public Stores(
      DataSource dataSource, String commandsSchema, String eventsSchema, String balancerSchema) {
    this.dataSource = dataSource;
    this.commands = CommandOperations.of(dataSource, commandsSchema);
    this.events = EventOperations.of(dataSource, eventsSchema);
    this.balancer = BalancerOperations.of(dataSource, balancerSchema);
    this.balancerSchema = balancerSchema;
  }

  CommandOperations commands() {
    return commands;
  }

  EventOperations events() {
    return events;
  }

  List<GroupStats> groups() {
    return balancer.groups();
  }

  /** What is paused in each driver: three reads of the drivers' pause tables. */
  Sampler.Pauses pauses() {
    return new Sampler.Pauses(
        commands.pausedTypes(), events.pausedHandlers(), balancer.pausedGroups());
  }

  BalancerOperations balancer() {
    return balancer;
  }

  /**
   * The message ids of up to {@code limit} dead letters of {@code type}, in {@code tx}: what a bulk
   * action on a type records as its targets. The command queue's API lists whole dead letters
   * (payloads too, at most 10,000), so this reads the ids alone, with one bound query.
   */
  List<String> deadLetterIds(Tx tx, String type, int limit) {
    Field<UUID> id = DSL.field(DSL.name("message_id"), SQLDataType.UUID);
    return tx.dsl()
        .select(id)
        .from(DSL.table(DSL.name(commands.schema(), "dead_letters")))
        .where(DSL.field(DSL.name("message_type"), SQLDataType.CLOB).eq(type))
        .orderBy(id)
        .limit(limit)
        .fetch(r -> r.value1().toString());
  }

  /** A key of a balancer group and how many messages it holds. */
  record KeyCount(String key, long messages) {}

  /**
   * The {@code limit} keys of {@code group} with the most messages, most first (ties by key), after
   * {@code after} when it is not null (keyset paging): the balancer's API lists keys in rotation
   * order only, so this counts them with one bound query on the index of a key's messages.
   */
  List<KeyCount> hottestKeys(String group, KeyCount after, int limit) {
    Field<String> key = DSL.field(DSL.name("partition_key"), SQLDataType.CLOB);
    Field<Integer> count = DSL.count();
    Field<Integer> n = count.as("n");
    Condition page =
        after == null
            ? DSL.noCondition()
            : count
                .lt(DSL.val((int) Math.min(Integer.MAX_VALUE, after.messages())))
                .or(
                    count
                        .eq(DSL.val((int) Math.min(Integer.MAX_VALUE, after.messages())))
                        .and(key.gt(after.key())));
    return Transactions.inNew(
        dataSource,
        "counting the messages of each key of group " + group,
        tx ->
            tx.dsl()
                .select(key, n)
                .from(DSL.table(DSL.name(balancerSchema, "messages")))
                .where(DSL.field(DSL.name("partition_group"), SQLDataType.CLOB).eq(group))
                .groupBy(key)
                .having(page)
                .orderBy(n.desc(), key)
                .limit(limit)
                .fetch(r -> new KeyCount(r.value1(), r.value2())));
  }

  /** Which pending commands a list of the job view shows. */
  enum JobState {
    /** Due now (a command whose lease expired is due again). */
    QUEUED,
    /** Due later: a delay, a due time or a failure's backoff; not running under a lease. */
    SCHEDULED,
    /** Failed at least once, wherever it stands. */
    FAILING
  }

  /**
   * A pending command as the job view lists it; {@code rank} is its place in the claim order (its
   * due time moved earlier by its priority), the keyset of the list with {@code id}.
   */
  record Job(
      UUID id,
      String type,
      String correlationId,
      Instant enqueuedAt,
      Instant dueAt,
      int failures,
      int priority,
      String leasedBy,
      boolean later,
      java.time.OffsetDateTime rank) {}

  /** A position in a list of jobs: after this claim rank and message id. */
  record JobCursor(java.time.OffsetDateTime rank, UUID id) {}

  /**
   * Up to {@code limit} pending commands of {@code type} in {@code state}, in claim order (claim
   * rank, then message id), after {@code after} when it is not null. One bound statement on a range
   * of the queue's index of a type's commands by claim rank ({@code commands_ranked}): queued ones
   * are read from its start, scheduled ones from ten minutes ago on (a rank is at most nine minutes
   * before the due time); failing ones are those of the range that failed, so that list reads as
   * far along the type's commands as it takes to find a page of them.
   */
  List<Job> jobs(String type, JobState state, JobCursor after, int limit) {
    Field<String> typeField = DSL.field(DSL.name("message_type"), SQLDataType.CLOB);
    Field<java.time.OffsetDateTime> rank =
        DSL.field(DSL.name("claim_rank"), SQLDataType.TIMESTAMPWITHTIMEZONE);
    Field<UUID> id = DSL.field(DSL.name("message_id"), SQLDataType.UUID);
    Condition when =
        switch (state) {
          case QUEUED -> DSL.condition("deliver_at <= clock_timestamp()");
          case SCHEDULED ->
              DSL.condition(
                  "deliver_at > clock_timestamp() AND leased_by IS NULL"
                      + " AND claim_rank > clock_timestamp() - interval '10 minutes'");
          case FAILING -> DSL.condition("failures > 0");
        };
    Condition page =
        after == null
            ? DSL.noCondition()
            : DSL.row(rank, id).gt(DSL.row(DSL.val(after.rank()), DSL.val(after.id())));
    return Transactions.inNew(
        dataSource,
        "listing pending commands of type " + type,
        tx ->
            tx.dsl()
                .resultQuery(
                    "SELECT message_id, message_type, correlation_id,"
                        + " CASE WHEN isfinite(enqueued_at) THEN enqueued_at"
                        + " ELSE to_timestamp(0) END,"
                        + " CASE WHEN isfinite(deliver_at) THEN deliver_at ELSE to_timestamp(0) END,"
                        + " failures, priority, leased_by, deliver_at > clock_timestamp(), claim_rank"
                        + " FROM {0} WHERE {1} AND {2} AND {3} ORDER BY claim_rank, message_id"
                        + " LIMIT {4}",
                    DSL.table(DSL.name(commands.schema(), "commands")),
                    typeField.eq(type),
                    when,
                    page,
                    DSL.val(limit))
                .fetch(
                    r ->
                        new Job(
                            r.get(0, UUID.class),
                            r.get(1, String.class),
                            r.get(2, String.class),
                            r.get(3, Instant.class),
                            r.get(4, Instant.class),
                            r.get(5, Integer.class),
                            r.get(6, Integer.class),
                            r.get(7, String.class),
                            r.get(8, Boolean.class),
                            r.get(9, java.time.OffsetDateTime.class))));
  }

  /** One handler's checkpoint of a stream, as the job view shows a stream found by its key. */
  record StreamJob(
      long streamId,
      long end,
      String handlerKey,
      Long offset,
      int failures,
      java.time.OffsetDateTime resumeAt,
      java.time.OffsetDateTime parkedAt,
      String parkedReason) {}

  /**
   * The stream with application key {@code streamKey} and its checkpoint of each of {@code
   * handlers} (null offset: the handler has not read it yet); empty when no stream has that key.
   * One bound statement: the key's primary key, the stream's, and one probe of the checkpoints'
   * primary key per handler.
   */
  List<StreamJob> stream(String streamKey, List<String> handlerKeys) {
    String schema = events.schema();
    return Transactions.inNew(
        dataSource,
        "reading the stream of a key",
        tx ->
            tx.dsl()
                .resultQuery(
                    "SELECT s.id, s.next_offset, h.handler_key, c.checkpoint_offset,"
                        + " coalesce(c.failures, 0), c.resume_at, c.parked_at, c.parked_reason"
                        + " FROM {0} AS k JOIN {1} AS s ON s.id = k.stream_id"
                        + " LEFT JOIN unnest({2}::text[]) AS h(handler_key) ON true"
                        + " LEFT JOIN {3} AS c ON c.handler_key = h.handler_key"
                        + " AND c.stream_id = s.id WHERE k.stream_key = {4}"
                        + " ORDER BY h.handler_key",
                    DSL.table(DSL.name(schema, "stream_keys")),
                    DSL.table(DSL.name(schema, "streams")),
                    DSL.val(handlerKeys.toArray(String[]::new)),
                    DSL.table(DSL.name(schema, "handler_checkpoints")),
                    DSL.val(streamKey))
                .fetch(
                    r ->
                        new StreamJob(
                            r.get(0, Long.class),
                            r.get(1, Long.class),
                            r.get(2, String.class),
                            r.get(3, Long.class),
                            r.get(4, Integer.class),
                            r.get(5, java.time.OffsetDateTime.class),
                            r.get(6, java.time.OffsetDateTime.class),
                            r.get(7, String.class))));
  }

  /** A key of a balancer group whose head failed: its failures, when it is tried again, parked. */
  record FailingKey(String key, int failures, java.time.OffsetDateTime resumeAt, boolean parked) {}

  /**
   * Up to {@code limit} keys of {@code group} whose head failed at least once (waiting out a
   * backoff, or parked), by key, after {@code afterKey} when it is not null: one bound statement on
   * a range of the partitions' primary key (group, key), which it reads as far as it takes to find
   * a page of them.
   */
  List<FailingKey> failingKeys(String group, String afterKey, int limit) {
    Field<String> key = DSL.field(DSL.name("partition_key"), SQLDataType.CLOB);
    return Transactions.inNew(
        dataSource,
        "listing failing keys of group " + group,
        tx ->
            tx.dsl()
                .resultQuery(
                    "SELECT partition_key, failures,"
                        + " CASE WHEN resume_at > clock_timestamp() THEN resume_at END,"
                        + " parked_at IS NOT NULL FROM {0} WHERE partition_group = {1}"
                        + " AND failures > 0 AND {2} ORDER BY partition_key LIMIT {3}",
                    DSL.table(DSL.name(balancerSchema, "partitions")),
                    DSL.val(group),
                    afterKey == null ? DSL.noCondition() : key.gt(afterKey),
                    DSL.val(limit))
                .fetch(
                    r ->
                        new FailingKey(
                            r.get(0, String.class),
                            r.get(1, Integer.class),
                            r.get(2, java.time.OffsetDateTime.class),
                            r.get(3, Boolean.class))));
  }

  /** A balancer message as the job view shows it: where it is and how often it was tried. */
  record MessageJob(
      long id, String group, String key, int bytes, Instant receivedAt, int attempts) {}

  /**
   * Messages of the balancer: the one with id {@code messageId} when it is not null (its primary
   * key), else the first {@code limit} of {@code group}'s key {@code key} in delivery order (a
   * range of the index of a key's messages). One bound statement.
   */
  List<MessageJob> messages(Long messageId, String group, String key, int limit) {
    Field<Long> id = DSL.field(DSL.name("id"), SQLDataType.BIGINT);
    Condition which =
        messageId != null
            ? id.eq(messageId)
            : DSL.field(DSL.name("partition_group"), SQLDataType.CLOB)
                .eq(group)
                .and(DSL.field(DSL.name("partition_key"), SQLDataType.CLOB).eq(key));
    return Transactions.inNew(
        dataSource,
        "reading balancer messages",
        tx ->
            tx.dsl()
                .resultQuery(
                    "SELECT id, partition_group, partition_key, octet_length(content),"
                        + " CASE WHEN isfinite(received_at) THEN received_at"
                        + " ELSE to_timestamp(0) END, attempts FROM {0} WHERE {1}"
                        + " ORDER BY partition_group, partition_key, id LIMIT {2}",
                    DSL.table(DSL.name(balancerSchema, "messages")), which, DSL.val(limit))
                .fetch(
                    r ->
                        new MessageJob(
                            r.get(0, Long.class),
                            r.get(1, String.class),
                            r.get(2, String.class),
                            r.get(3, Integer.class),
                            r.get(4, Instant.class),
                            r.get(5, Integer.class))));
  }

  /**
   * Where a command is, from the command queue's look-ups: pending (waiting, or running under a
   * lease), else a dead letter, else gone.
   */
  CommandStatus commandState(UUID messageId) {
    java.util.Optional<PendingCommand> pending = commands.pending().find(messageId);
    if (pending.isPresent()) {
      PendingCommand p = pending.get();
      return p.state() == PendingCommand.State.LEASED
          ? new CommandStatus(CommandState.LEASED, p.leaseHolder(), p.leaseExpiresAt())
          : new CommandStatus(CommandState.WAITING, null, null);
    }
    return new CommandStatus(
        commands.deadLetters().find(messageId).isPresent()
            ? CommandState.DEAD_LETTER
            : CommandState.DONE,
        null,
        null);
  }
}
