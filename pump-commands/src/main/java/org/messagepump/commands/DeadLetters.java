package org.messagepump.commands;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.DeadLetterQueries;
import org.messagepump.core.spi.GaugeReading;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Transactions;

/**
 * Operations on parked commands (from {@link CommandOperations#deadLetters()}): list, count, retry
 * (back into the queue, due now, failure count reset, same message id) and discard. Each call runs
 * in a transaction of its own.
 */
public final class DeadLetters {

  /** Most dead letters one {@link #list} call returns. */
  public static final int MAX_LIST_LIMIT = 10_000;

  /** How often the {@code messagepump.commands.deadletters} gauge re-counts, at most. */
  public static final Duration GAUGE_REFRESH = Duration.ofSeconds(10);

  private final DataSource dataSource;
  private final CommandTables tables;
  private final Meters.Counter retried;
  private final Meters.Counter discarded;
  private final GaugeReading<Double> gauge;

  DeadLetters(DataSource dataSource, CommandTables tables, Meters meters) {
    this.dataSource = dataSource;
    this.tables = tables;
    // NaN until the first count: unknown, not zero.
    this.gauge =
        GaugeReading.of(
            "command queue " + tables.schema() + ": the dead-letter gauge",
            GAUGE_REFRESH,
            Double.NaN,
            () -> (double) count());
    meters.gauge(
        "messagepump.commands.deadletters",
        "Parked commands (counted at most every 10 s, when the meter is read)",
        this,
        DeadLetters::gaugeValue);
    this.retried =
        meters.counter(
            "messagepump.commands.deadletters.retried", "Dead letters moved back into the queue");
    this.discarded =
        meters.counter("messagepump.commands.deadletters.discarded", "Dead letters deleted");
  }

  /** Up to {@code limit} dead letters of every type, oldest parked first. */
  public List<DeadLetter> list(int limit) {
    return list(null, limit);
  }

  /** Up to {@code limit} dead letters of {@code type} (null: every type), oldest parked first. */
  public List<DeadLetter> list(String type, int limit) {
    Inputs.optionalKey("type", type);
    if (limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_LIST_LIMIT + ": " + limit);
    }
    return Transactions.inNew(
        dataSource,
        "listing dead letters",
        tx ->
            DeadLetterQueries.list(tx.dsl(), tables, type, limit).stream()
                .map(DeadLetters::deadLetter)
                .toList());
  }

  /**
   * The next page of dead letters of {@code type} (null: every type) after the one parked at {@code
   * afterParkedAt} with id {@code afterMessageId} (the last entry of the previous page; both null:
   * from the first), in the order of {@link #list(String, int)}: oldest parked first, ties by
   * message id. Of one type it is a range of the dead letters' index.
   *
   * @throws IllegalArgumentException for a bad type, a limit outside 1..{@value #MAX_LIST_LIMIT},
   *     or only one of the two {@code after} values; nothing is sent
   */
  public List<DeadLetter> list(
      String type, java.time.Instant afterParkedAt, UUID afterMessageId, int limit) {
    if ((afterParkedAt == null) != (afterMessageId == null)) {
      throw new IllegalArgumentException(
          "afterParkedAt and afterMessageId go together: both null, or both set");
    }
    if (afterParkedAt == null) {
      return list(type, limit);
    }
    Inputs.optionalKey("type", type);
    if (limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_LIST_LIMIT + ": " + limit);
    }
    return Transactions.inNew(
        dataSource,
        "listing dead letters",
        tx ->
            DeadLetterQueries.listAfter(
                    tx.dsl(), tables, type, afterParkedAt, afterMessageId, limit)
                .stream()
                .map(DeadLetters::deadLetter)
                .toList());
  }

  /** The dead letter with this message id, if parked. */
  public Optional<DeadLetter> find(UUID messageId) {
    id(messageId);
    return Optional.ofNullable(
            Transactions.inNew(
                dataSource,
                "reading a dead letter",
                tx -> DeadLetterQueries.find(tx.dsl(), tables, messageId)))
        .map(DeadLetters::deadLetter);
  }

  /** Number of dead letters of every type. */
  public long count() {
    return count(null);
  }

  /** Number of dead letters of {@code type} (null: every type). */
  public long count(String type) {
    Inputs.optionalKey("type", type);
    return Transactions.inNew(
        dataSource, "counting dead letters", tx -> DeadLetterQueries.count(tx.dsl(), tables, type));
  }

  /** Moves one dead letter back into the queue; false when no such dead letter exists. */
  public boolean retry(UUID messageId) {
    id(messageId);
    int n =
        Transactions.inNew(
            dataSource,
            "retrying a dead letter",
            tx -> DeadLetterQueries.retry(tx.dsl(), tables, DeadLetterQueries.byId(messageId)));
    retried.increment(n);
    return n == 1;
  }

  /** Moves every dead letter of {@code type} (null: every type) back; returns how many. */
  public int retryAll(String type) {
    Inputs.optionalKey("type", type);
    int n =
        Transactions.inNew(
            dataSource,
            "retrying dead letters",
            tx -> DeadLetterQueries.retry(tx.dsl(), tables, DeadLetterQueries.ofType(type)));
    retried.increment(n);
    return n;
  }

  /** Deletes one dead letter for good; false when no such dead letter exists. */
  public boolean discard(UUID messageId) {
    id(messageId);
    int n =
        Transactions.inNew(
            dataSource,
            "discarding a dead letter",
            tx -> DeadLetterQueries.discard(tx.dsl(), tables, DeadLetterQueries.byId(messageId)));
    discarded.increment(n);
    return n == 1;
  }

  /** Deletes every dead letter of {@code type} (null: every type); returns how many. */
  public int discardAll(String type) {
    Inputs.optionalKey("type", type);
    int n =
        Transactions.inNew(
            dataSource,
            "discarding dead letters",
            tx -> DeadLetterQueries.discard(tx.dsl(), tables, DeadLetterQueries.ofType(type)));
    discarded.increment(n);
    return n;
  }

  /** The dead-letter count for the gauge, re-read at most every {@link #GAUGE_REFRESH}. */
  private double gaugeValue() {
    return gauge.get();
  }

  private static DeadLetter deadLetter(DeadLetterQueries.Parked p) {
    return new DeadLetter(p.envelope(), p.failures(), p.lastError(), p.parkedAt(), p.priority());
  }

  private static void id(UUID messageId) {
    if (messageId == null) {
      throw new IllegalArgumentException("messageId must not be null");
    }
  }
}
