package org.messagepump.commands;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.core.spi.GaugeReading;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code messagepump.commands.queue.*} gauges of one queue, per message type: due, delayed,
 * leased and parked commands, and how long the oldest due command has waited. Every gauge of every
 * type reads one snapshot, taken by one statement ({@link CommandQueries#depth}) at most once per
 * {@link #REFRESH}, when a gauge is read: however many gauges and scrapes, the database sees at
 * most one depth query per interval, and none while nobody reads the meters.
 *
 * <p>A type gets its gauges when a driver for it is made, or when a snapshot finds it in the tables
 * (its gauges then appear from the next scrape on). At most {@link #MAX_TYPES} types get gauges (a
 * cardinality guard: type names are tag values); past that, one warning names the limit and further
 * types are left out of the gauges (they still count in {@link CommandOperations#depth()}).
 */
final class QueueGauges {

  /** How long one snapshot serves every gauge. */
  static final Duration REFRESH = Duration.ofSeconds(10);

  /** Most types with gauges per queue. */
  static final int MAX_TYPES = 100;

  private static final Logger log = LoggerFactory.getLogger(QueueGauges.class);
  private static final CommandQueries.TypeCounts NONE =
      new CommandQueries.TypeCounts(0, 0, 0, 0, 0);

  private final DataSource dataSource;
  private final CommandTables tables;
  private final Meters meters;
  private final Set<String> types = ConcurrentHashMap.newKeySet();
  private final GaugeReading<Map<String, CommandQueries.TypeCounts>> reading;
  private boolean warnedLimit;

  QueueGauges(DataSource dataSource, CommandTables tables, Meters meters) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.meters = meters;
    this.reading =
        GaugeReading.of(
            "command queue " + tables.schema() + ": the queue gauges",
            REFRESH,
            Map.of(),
            this::read);
  }

  /** Gives each of {@code names} its gauges (once per type; up to {@link #MAX_TYPES}). */
  void track(Collection<String> names) {
    names.forEach(this::track);
  }

  private void track(String type) {
    if (types.contains(type)) {
      return;
    }
    synchronized (types) {
      if (types.contains(type)) {
        return;
      }
      if (types.size() >= MAX_TYPES) {
        if (!warnedLimit) {
          warnedLimit = true;
          log.warn(
              "command queue {}: more than {} message types; the queue gauges leave out {} and"
                  + " every further type",
              tables.schema(),
              MAX_TYPES,
              type);
        }
        return;
      }
      types.add(type);
    }
    gauge("messagepump.commands.queue.due", "Commands due now, not leased", type, c -> c.due());
    gauge("messagepump.commands.queue.delayed", "Commands due later", type, c -> c.delayed());
    gauge(
        "messagepump.commands.queue.leased",
        "Commands whose handler runs under a lease",
        type,
        c -> c.leased());
    gauge("messagepump.commands.queue.parked", "Dead letters", type, c -> c.deadLetters());
    meters.gauge(
        "messagepump.commands.queue.oldest.due.age",
        "How long the oldest due command has waited (0 when none is due)",
        "seconds",
        () -> counts(type).oldestDueSeconds(),
        "schema",
        tables.schema(),
        "type",
        type);
  }

  private void gauge(
      String name,
      String description,
      String type,
      ToDoubleFunction<CommandQueries.TypeCounts> value) {
    meters.gauge(
        name,
        description,
        null,
        () -> value.applyAsDouble(counts(type)),
        "schema",
        tables.schema(),
        "type",
        type);
  }

  private CommandQueries.TypeCounts counts(String type) {
    return snapshot().getOrDefault(type, NONE);
  }

  /**
   * The last snapshot, taken again when it is older than {@link #REFRESH} ({@link GaugeReading}).
   */
  Map<String, CommandQueries.TypeCounts> snapshot() {
    return reading.get();
  }

  /** One snapshot; types found in the tables get their gauges (registering reads no gauge). */
  private Map<String, CommandQueries.TypeCounts> read() {
    Map<String, CommandQueries.TypeCounts> fresh =
        Transactions.inNew(
            dataSource, "reading the queue gauges", tx -> CommandQueries.depth(tx.dsl(), tables));
    track(fresh.keySet());
    return fresh;
  }
}
