package org.messagepump.commands;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntConsumer;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.Recurrence;
import org.messagepump.commands.internal.ScheduleQueries;
import org.messagepump.commands.internal.ScheduleQueries.Row;
import org.messagepump.commands.internal.TickPlan;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The recurring commands of a queue (table {@code schedules}), from {@link
 * CommandOperations#schedules()}: list, pause, resume, trigger and remove them; a {@link
 * CommandScheduler} (or {@link #fireDue()}) enqueues their ticks. They are defined in code with
 * {@link CommandQueue#defineSchedule}, which encodes their command with the queue's codec.
 *
 * <p>A check locks the due schedules ({@code FOR UPDATE SKIP LOCKED}), enqueues one command per
 * tick and moves each schedule's next tick on, in one transaction: a tick is enqueued exactly once
 * whatever the number of schedulers and processes, and a scheduler that dies mid-check rolls its
 * ticks back for another to fire. Tick times are computed against the database clock.
 */
public final class Schedules {

  /** Most schedules one check locks and fires; more are left to the next check. */
  public static final int SCHEDULES_PER_CHECK = 100;

  private static final Logger log = LoggerFactory.getLogger(Schedules.class);

  /** A tick header value as long as any, to check header limits when a schedule is defined. */
  private static final String LONGEST_TICK = "+1000000000-12-31T23:59:59.999999999Z";

  private final DataSource dataSource;
  private final CommandTables tables;
  private final Enqueuer enqueuer;
  private final IntConsumer enqueued;
  private final List<Runnable> wakeUps = new CopyOnWriteArrayList<>();
  private final Set<String> unreadable = ConcurrentHashMap.newKeySet();

  /**
   * The schedules of {@code tables}, whose ticks {@code enqueuer} inserts; {@code enqueued} is told
   * how many commands each committed check or trigger enqueued.
   */
  Schedules(DataSource dataSource, CommandTables tables, Enqueuer enqueuer, IntConsumer enqueued) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.enqueuer = enqueuer;
    this.enqueued = enqueued;
  }

  /**
   * Stores {@code schedule}: creates it, or updates the stored one of that name. Every process may
   * define its schedules at start-up: a definition that changes nothing writes nothing; one that
   * changes the command, options or misfire policy keeps the next tick; one that changes when it
   * ticks (expression, zone or interval) computes the next tick afresh from now. A paused schedule
   * stays paused. The command is encoded here (its class must be registered with the queue's codec,
   * its payload and headers within the queue's limits). Returns true when the schedule was created.
   * Reached through {@link CommandQueue#defineSchedule}, whose codec encodes the command.
   */
  boolean define(Schedule schedule) {
    if (schedule == null) {
      throw new IllegalArgumentException("schedule must not be null");
    }
    NewCommand c = schedule.command();
    EnqueueOptions o = c.options();
    // Encoded with the headers a tick adds, so a schedule that would break the limits is refused
    // now, not at each tick.
    Map<String, String> probe = new LinkedHashMap<>(o.headers());
    probe.put(Schedule.HEADER_SCHEDULE, schedule.name());
    probe.put(Schedule.HEADER_TICK, LONGEST_TICK);
    probe.put(Schedule.HEADER_TRIGGERED, "true");
    NewCommand probed =
        c instanceof NewCommand.Raw raw
            ? NewCommand.raw(raw.type(), raw.payload(), o.withHeaders(probe))
            : NewCommand.of(((NewCommand.Typed) c).command(), o.withHeaders(probe));
    EncodedCommand encoded = enqueuer.encode(List.of(probed)).get(0);
    String cron = schedule.cron();
    Long intervalMs = schedule.interval() == null ? null : schedule.interval().toMillis();
    String zone = schedule.zone().getId();
    boolean created =
        Transactions.inNew(
            dataSource,
            "defining schedule " + schedule.name(),
            tx -> {
              Instant now = ScheduleQueries.now(tx.dsl());
              Optional<Row> existing = ScheduleQueries.lock(tx.dsl(), tables, schedule.name());
              if (existing.isEmpty()) {
                Instant anchor = now.truncatedTo(ChronoUnit.MILLIS);
                Row fresh =
                    row(
                        schedule,
                        encoded,
                        o,
                        cron,
                        intervalMs,
                        zone,
                        anchor,
                        nextOf(schedule, anchor, now));
                if (ScheduleQueries.insert(tx.dsl(), tables, fresh)) {
                  return true;
                }
                existing = ScheduleQueries.lock(tx.dsl(), tables, schedule.name());
              }
              Row old = existing.orElseThrow();
              boolean sameTicks =
                  Objects.equals(old.cron(), cron)
                      && Objects.equals(old.intervalMs(), intervalMs)
                      && old.zone().equals(zone);
              Instant anchor = sameTicks ? old.anchorAt() : now.truncatedTo(ChronoUnit.MILLIS);
              Instant next = sameTicks ? old.nextFireAt() : nextOf(schedule, anchor, now);
              Row updated = row(schedule, encoded, o, cron, intervalMs, zone, anchor, next);
              if (!sameDefinition(old, updated)) {
                ScheduleQueries.redefine(tx.dsl(), tables, updated);
              }
              return false;
            });
    wake();
    return created;
  }

  private static Row row(
      Schedule s,
      EncodedCommand encoded,
      EnqueueOptions o,
      String cron,
      Long intervalMs,
      String zone,
      Instant anchor,
      Instant next) {
    return new Row(
        s.name(),
        cron,
        intervalMs,
        zone,
        anchor,
        s.misfire().maxCatchUp(),
        s.misfire().grace().toMillis(),
        encoded.type(),
        encoded.payload(),
        o.correlationId(),
        o.headers(),
        null,
        next,
        null,
        0,
        0,
        o.priority());
  }

  private static boolean sameDefinition(Row a, Row b) {
    return Objects.equals(a.anchorAt(), b.anchorAt())
        && Objects.equals(a.nextFireAt(), b.nextFireAt())
        && a.catchUp() == b.catchUp()
        && a.graceMs() == b.graceMs()
        && a.type().equals(b.type())
        && Arrays.equals(a.payload(), b.payload())
        && Objects.equals(a.correlationId(), b.correlationId())
        && a.headers().equals(b.headers())
        && a.priority() == b.priority();
  }

  private static Instant nextOf(Schedule s, Instant anchor, Instant now) {
    Recurrence r =
        s.cron() != null
            ? Recurrence.cron(s.cron(), s.zone())
            : Recurrence.interval(s.interval(), anchor);
    return r.next(now);
  }

  /** Every stored schedule, by name. */
  public List<ScheduleInfo> list() {
    return Transactions.inNew(
            dataSource, "listing schedules", tx -> ScheduleQueries.list(tx.dsl(), tables))
        .stream()
        .map(Schedules::info)
        .toList();
  }

  /** The stored schedule {@code name}, if any. */
  public Optional<ScheduleInfo> find(String name) {
    checkName(name);
    return list().stream().filter(s -> s.name().equals(name)).findFirst();
  }

  private static ScheduleInfo info(Row r) {
    return new ScheduleInfo(
        r.name(),
        r.cron(),
        r.intervalMs() == null ? null : Duration.ofMillis(r.intervalMs()),
        r.zone(),
        MisfirePolicy.of(r.catchUp(), Duration.ofMillis(r.graceMs())),
        r.type(),
        r.pausedAt(),
        r.nextFireAt(),
        r.lastFiredAt(),
        r.fired(),
        r.triggered());
  }

  /**
   * Pauses schedule {@code name} for every scheduler of every process: no tick fires until {@link
   * #resume}, and the ticks due meanwhile are never fired. True when it was running; false when it
   * was paused already or does not exist.
   */
  public boolean pause(String name) {
    checkName(name);
    return Transactions.inNew(
        dataSource,
        "pausing schedule " + name,
        tx -> ScheduleQueries.pause(tx.dsl(), tables, name));
  }

  /**
   * Resumes a paused schedule: its next tick is the first one after now (database clock). True when
   * it was paused; false when it was running or does not exist.
   */
  public boolean resume(String name) {
    checkName(name);
    boolean resumed =
        Transactions.inNew(
            dataSource,
            "resuming schedule " + name,
            tx -> {
              Optional<Row> row = ScheduleQueries.lock(tx.dsl(), tables, name);
              if (row.isEmpty() || row.get().pausedAt() == null) {
                return false;
              }
              Instant now = ScheduleQueries.now(tx.dsl());
              ScheduleQueries.resume(tx.dsl(), tables, name, recurrence(row.get()).next(now));
              return true;
            });
    if (resumed) {
      wake();
    }
    return resumed;
  }

  /**
   * Enqueues the schedule's command now, once, outside its ticks (paused or not; its next tick does
   * not move). The command carries the headers of a tick, {@link Schedule#HEADER_TICK} being the
   * database time, plus {@link Schedule#HEADER_TRIGGERED}. Returns the new command's message id,
   * empty when there is no schedule of that name.
   */
  public Optional<UUID> trigger(String name) {
    checkName(name);
    Optional<UUID> id =
        Transactions.inNew(
            dataSource,
            "triggering schedule " + name,
            tx -> {
              Optional<Row> row = ScheduleQueries.lock(tx.dsl(), tables, name);
              if (row.isEmpty()) {
                return Optional.<UUID>empty();
              }
              Instant now = ScheduleQueries.now(tx.dsl());
              EncodedCommand c = command(row.get(), now, true);
              enqueuer.insert(tx, List.of(c));
              ScheduleQueries.triggered(tx.dsl(), tables, name);
              return Optional.of(c.messageId());
            });
    id.ifPresent(i -> enqueued.accept(1));
    return id;
  }

  /** Deletes schedule {@code name}; true when it existed. Its enqueued commands stay. */
  public boolean remove(String name) {
    checkName(name);
    return Transactions.inNew(
        dataSource,
        "removing schedule " + name,
        tx -> ScheduleQueries.delete(tx.dsl(), tables, name));
  }

  /**
   * One check: enqueues a command for each due tick of up to {@value #SCHEDULES_PER_CHECK} due
   * schedules (those another scheduler is firing are skipped), applying their misfire policies, in
   * one transaction. Returns the number of commands enqueued. A {@link CommandScheduler} calls this
   * at its own pace; call it yourself to drive schedules from your own loop.
   */
  public int fireDue() {
    return check().fired();
  }

  /** What a check did and when the next one is worth making. */
  record Check(int fired, boolean full, Duration untilSoonest) {}

  Check check() {
    Check c = Transactions.inNew(dataSource, "firing due schedules", this::check);
    if (c.fired() > 0) {
      enqueued.accept(c.fired());
    }
    return c;
  }

  private Check check(Tx tx) {
    ScheduleQueries.Due due = ScheduleQueries.lockDue(tx.dsl(), tables, SCHEDULES_PER_CHECK);
    List<EncodedCommand> commands = new ArrayList<>();
    for (Row row : due.rows()) {
      Recurrence ticks;
      try {
        ticks = recurrence(row);
      } catch (RuntimeException e) {
        if (unreadable.add(row.name())) {
          log.warn(
              "commandqueue: schedule {} cannot be read here and is left to other processes: {}",
              row.name(),
              e.toString());
        }
        continue;
      }
      TickPlan plan =
          TickPlan.of(
              ticks, row.nextFireAt(), due.now(), Duration.ofMillis(row.graceMs()), row.catchUp());
      if (plan.skipped()) {
        log.info(
            "commandqueue: schedule {} missed ticks from {}; {}",
            row.name(),
            row.nextFireAt(),
            row.catchUp() == 0
                ? "skipped them"
                : "fired at most the last " + row.catchUp() + " of them");
      }
      for (Instant tick : plan.fire()) {
        commands.add(command(row, tick, false));
      }
      Instant last = plan.fire().isEmpty() ? null : plan.fire().get(plan.fire().size() - 1);
      ScheduleQueries.fired(tx.dsl(), tables, row.name(), plan.next(), last, plan.fire().size());
    }
    if (!commands.isEmpty()) {
      enqueuer.insert(tx, commands);
    }
    Instant[] soonest = ScheduleQueries.soonest(tx.dsl(), tables);
    Duration until = soonest[0] == null ? null : Duration.between(soonest[1], soonest[0]);
    return new Check(commands.size(), due.rows().size() == SCHEDULES_PER_CHECK, until);
  }

  private static Recurrence recurrence(Row row) {
    return row.cron() != null
        ? Recurrence.cron(row.cron(), ZoneId.of(row.zone()))
        : Recurrence.interval(Duration.ofMillis(row.intervalMs()), row.anchorAt());
  }

  private static EncodedCommand command(Row row, Instant tick, boolean triggered) {
    Map<String, String> headers = new LinkedHashMap<>(row.headers());
    headers.put(Schedule.HEADER_SCHEDULE, row.name());
    headers.put(Schedule.HEADER_TICK, tick.toString());
    if (triggered) {
      headers.put(Schedule.HEADER_TRIGGERED, "true");
    }
    EnqueueOptions options =
        new EnqueueOptions(null, null, null, row.correlationId(), null, headers, row.priority());
    return new EncodedCommand(UUID.randomUUID(), row.type(), row.payload(), options);
  }

  /** Registers a hook run after a definition or resume in this process (a scheduler's wake-up). */
  void addWakeUp(Runnable r) {
    wakeUps.add(r);
  }

  void removeWakeUp(Runnable r) {
    wakeUps.remove(r);
  }

  private void wake() {
    wakeUps.forEach(Runnable::run);
  }

  private static void checkName(String name) {
    if (name == null) {
      throw new IllegalArgumentException("name must not be null");
    }
    org.messagepump.core.spi.Inputs.key("name", name);
  }
}
