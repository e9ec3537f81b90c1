package org.messagepump.console.internal;

import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.Balancer;
import org.messagepump.balancer.GroupStats;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.PendingCommand;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Transactions;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventStore;

/**
 * The drivers' operator APIs on the console's schemas (the drivers' defaults unless configured).
 * They never decode payloads, so an empty type registry is enough: the console works on any
 * database whatever its message classes.
 */
public final class Stores {

  private static final JsonMessageCodec NO_TYPES =
      JsonMessageCodec.of(MessageTypes.builder().build());

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
  private final CommandQueue commands;
  private final EventStore events;
  private final EventHandlers handlers;
  private final String balancerSchema;

  /**
   * The operator APIs on the given schemas; a bad schema name throws the driver's {@link
   * IllegalArgumentException}.
   */
  public Stores(
      DataSource dataSource, String commandsSchema, String eventsSchema, String balancerSchema) {
    this.dataSource = dataSource;
    this.commands = CommandQueue.builder(dataSource).codec(NO_TYPES).schema(commandsSchema).build();
    this.events = EventStore.builder(dataSource, NO_TYPES).schema(eventsSchema).build();
    this.handlers = events.handlers();
    // The balancer checks its schema when a MessageBalancer is built: do it now, not at a request.
    MessageBalancer.builder(dataSource, "console").schema(balancerSchema).build();
    this.balancerSchema = balancerSchema;
  }

  CommandQueue commands() {
    return commands;
  }

  EventStore events() {
    return events;
  }

  EventHandlers handlers() {
    return handlers;
  }

  List<GroupStats> groups() {
    return Balancer.groups(dataSource, balancerSchema);
  }

  MessageBalancer balancer(String group) {
    return MessageBalancer.builder(dataSource, group).schema(balancerSchema).build();
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
