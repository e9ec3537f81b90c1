package org.messagepump.commands;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import org.messagepump.commands.internal.Recurrence;
import org.messagepump.core.spi.Inputs;

/**
 * The definition of a recurring command: a name, when it ticks (a cron expression in a time zone,
 * or a fixed interval), the command enqueued at each tick and a {@link MisfirePolicy}. Defined in
 * code with {@link CommandQueue#defineSchedule}, which stores it; every input is checked here,
 * before anything is sent, with {@link IllegalArgumentException}.
 *
 * <pre>{@code
 * queue.defineSchedule(
 *     Schedule.cron("nightly-report", "0 30 2 * * *", ZoneId.of("Europe/Berlin"), new MakeReport())
 *         .withMisfire(MisfirePolicy.catchUp(1)));
 * queue.defineSchedule(Schedule.every("heartbeat", Duration.ofMinutes(5), new Heartbeat()));
 * }</pre>
 *
 * <p>Cron expressions have five fields (minute, hour, day of month, month, day of week) or six
 * (second first); they are matched on the wall clock of the zone. Around daylight-saving
 * transitions (java.time's resolution of a local time, as {@link java.time.ZonedDateTime#ofLocal}):
 * a tick whose wall-clock time falls in a skipped hour fires later by the length of the gap (02:30
 * becomes 03:30), once; a tick in a repeated hour fires once, in the first pass. An interval
 * ignores the zone: it ticks every {@code interval} from the time it was first defined.
 */
public final class Schedule {

  /** Header of each command a schedule enqueues: the schedule's name. */
  public static final String HEADER_SCHEDULE = "messagepump-schedule";

  /**
   * Header of each command a schedule enqueues: the tick (ISO-8601 instant) it was enqueued for;
   * for a manual trigger, the database time of the trigger.
   */
  public static final String HEADER_TICK = "messagepump-tick";

  /** Header set to {@code true} on a command enqueued by {@link Schedules#trigger}. */
  public static final String HEADER_TRIGGERED = "messagepump-triggered";

  /** Shortest interval: one second (a cron expression's resolution too). */
  public static final Duration MIN_INTERVAL = Duration.ofSeconds(1);

  /** Longest interval: about 100 years. */
  public static final Duration MAX_INTERVAL = Duration.ofDays(36_500);

  /** Longest schedule name in characters. */
  public static final int MAX_NAME_LENGTH = 200;

  /** Longest cron expression in characters. */
  public static final int MAX_CRON_LENGTH = 1_000;

  private final String name;
  private final String cron;
  private final Duration interval;
  private final ZoneId zone;
  private final NewCommand command;
  private final MisfirePolicy misfire;

  private Schedule(
      String name,
      String cron,
      Duration interval,
      ZoneId zone,
      NewCommand command,
      MisfirePolicy misfire) {
    this.name = name;
    this.cron = cron;
    this.interval = interval;
    this.zone = zone;
    this.command = command;
    this.misfire = misfire;
  }

  /**
   * A schedule ticking when {@code expression} matches the wall clock of {@code zone}. {@code
   * command} is a command object the queue's codec encodes, or a {@link NewCommand} (typed or raw,
   * with its options).
   */
  public static Schedule cron(String name, String expression, ZoneId zone, Object command) {
    if (zone == null) {
      throw new IllegalArgumentException("zone must not be null");
    }
    return new Schedule(
        name(name),
        expression(expression, zone),
        null,
        zone,
        command(command),
        MisfirePolicy.skip());
  }

  /**
   * As {@link #cron(String, String, ZoneId, Object)} with the zone by its id ({@code
   * "Europe/Berlin"}, {@code "UTC"}, {@code "+02:00"}); an unknown id is refused.
   */
  public static Schedule cron(String name, String expression, String zone, Object command) {
    return cron(name, expression, zone(zone), command);
  }

  /**
   * A schedule ticking every {@code interval} ({@link #MIN_INTERVAL} to {@link #MAX_INTERVAL}, in
   * whole milliseconds) from the time it is first defined.
   */
  public static Schedule every(String name, Duration interval, Object command) {
    if (interval == null) {
      throw new IllegalArgumentException("interval must not be null");
    }
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("interval must be positive: " + interval);
    }
    if (interval.compareTo(MIN_INTERVAL) < 0 || interval.compareTo(MAX_INTERVAL) > 0) {
      throw new IllegalArgumentException(
          "interval must be between " + MIN_INTERVAL + " and " + MAX_INTERVAL + ": " + interval);
    }
    if (interval.getNano() % 1_000_000 != 0) {
      throw new IllegalArgumentException(
          "interval must be a whole number of milliseconds: " + interval);
    }
    return new Schedule(
        name(name), null, interval, ZoneOffset.UTC, command(command), MisfirePolicy.skip());
  }

  /** This schedule with another misfire policy (default {@link MisfirePolicy#skip()}). */
  public Schedule withMisfire(MisfirePolicy misfire) {
    if (misfire == null) {
      throw new IllegalArgumentException("misfire must not be null");
    }
    return new Schedule(name, cron, interval, zone, command, misfire);
  }

  /**
   * This schedule with the command's options replaced: a correlation id, headers and a priority are
   * kept on every command enqueued; an idempotency key, a causation id, a delay or a due time make
   * no sense for a recurring command and are refused, as are the headers the schedule sets itself.
   */
  public Schedule withOptions(EnqueueOptions options) {
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    NewCommand c =
        command instanceof NewCommand.Raw raw
            ? NewCommand.raw(raw.type(), raw.payload(), options)
            : NewCommand.of(((NewCommand.Typed) command).command(), options);
    return new Schedule(name, cron, interval, zone, command(c), misfire);
  }

  /** The schedule's name, unique in the queue's schema. */
  public String name() {
    return name;
  }

  /** The cron expression, or null for an interval schedule. */
  public String cron() {
    return cron;
  }

  /** The interval, or null for a cron schedule. */
  public Duration interval() {
    return interval;
  }

  /** The zone cron expressions are read in ({@code Z} for an interval). */
  public ZoneId zone() {
    return zone;
  }

  /** The command enqueued at each tick, with its options. */
  public NewCommand command() {
    return command;
  }

  /** What happens to missed ticks. */
  public MisfirePolicy misfire() {
    return misfire;
  }

  @Override
  public String toString() {
    return "Schedule["
        + name
        + ", "
        + (cron != null ? "cron '" + cron + "' in " + zone : "every " + interval)
        + ", "
        + misfire
        + "]";
  }

  private static String name(String name) {
    if (name == null) {
      throw new IllegalArgumentException("name must not be null");
    }
    if (name.isBlank() || name.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "name must not be blank and at most " + MAX_NAME_LENGTH + " characters");
    }
    return Inputs.key("name", name);
  }

  static String expression(String expression, ZoneId zone) {
    if (expression == null) {
      throw new IllegalArgumentException("cron expression must not be null");
    }
    Inputs.text("cron expression", expression, MAX_CRON_LENGTH);
    if (Recurrence.cron(expression, zone).next(java.time.Instant.EPOCH) == null) {
      throw new IllegalArgumentException("cron expression '" + expression + "' never matches");
    }
    return expression.trim();
  }

  static ZoneId zone(String zone) {
    if (zone == null) {
      throw new IllegalArgumentException("zone must not be null");
    }
    Inputs.text("zone", zone, 100);
    try {
      return ZoneId.of(zone);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("unknown time zone '" + zone + "'", e);
    }
  }

  private static NewCommand command(Object command) {
    if (command == null) {
      throw new IllegalArgumentException("command must not be null");
    }
    NewCommand c = command instanceof NewCommand n ? n : NewCommand.of(command);
    EnqueueOptions o = c.options();
    if (o.idempotencyKey() != null) {
      throw new IllegalArgumentException(
          "a recurring command cannot have an idempotency key: it would enqueue once only");
    }
    if (o.causationId() != null) {
      throw new IllegalArgumentException("a recurring command has no causation id");
    }
    if (o.delay() != null || o.deliverAt() != null) {
      throw new IllegalArgumentException(
          "a recurring command is due at its tick: no delay or deliverAt");
    }
    for (String h : new String[] {HEADER_SCHEDULE, HEADER_TICK, HEADER_TRIGGERED}) {
      if (o.headers().containsKey(h)) {
        throw new IllegalArgumentException("header '" + h + "' is set by the schedule");
      }
    }
    return c;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Schedule s
        && name.equals(s.name)
        && Objects.equals(cron, s.cron)
        && Objects.equals(interval, s.interval)
        && zone.equals(s.zone)
        && command.equals(s.command)
        && misfire.equals(s.misfire);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, cron, interval, zone, command, misfire);
  }
}
