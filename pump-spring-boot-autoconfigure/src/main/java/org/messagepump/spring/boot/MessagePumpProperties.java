package org.messagepump.spring.boot;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.engine.PumpOptions;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code messagepump.*} properties: whether there are pumps, how the library's tables are
 * migrated and in which schemas, the options every pump takes ({@code messagepump.defaults.*}) and
 * those of each pump by its name ({@code messagepump.pumps.<name>.*}). A pump's name is the one its
 * {@link PumpDefinition} bean gives; options left out take {@code messagepump.defaults}, then
 * {@link PumpOptions#defaults()}. An unknown property under {@code messagepump} fails the binding,
 * naming it.
 */
@ConfigurationProperties(prefix = "messagepump", ignoreUnknownFields = false)
public class MessagePumpProperties {

  /**
   * Whether the pumps are created at all; false declares none (producers, migrations and the
   * console stay), for instance on nodes that only enqueue.
   */
  private boolean enabled = true;

  /** Whether the pumps start with the application context (and stop with it). */
  private boolean autoStartup = true;

  /**
   * How the library's tables are created or upgraded at startup: none (you run them), library (each
   * module's own migrate) or flyway (the module's locations through the application's own Flyway
   * configuration, after the application's migrations).
   */
  private Migrate migrate = Migrate.NONE;

  /** Options every pump takes unless its own messagepump.pumps.<name>.* set them. */
  private final Pump defaults = new Pump();

  /** Options of each pump, by pump name; unset ones take messagepump.defaults.*. */
  private Map<String, Pump> pumps = new LinkedHashMap<>();

  /** The command queue's tables. */
  private final Commands commands = new Commands();

  /** The event store's tables. */
  private final Events events = new Events();

  /** The partition groups' (balancer's) tables. */
  private final Balancer balancer = new Balancer();

  /**
   * The operations console (module pump-console), mounted in the application's servlet container.
   */
  private final Console console = new Console();

  /** Tracing of enqueues, appends, stores and deliveries through Micrometer's Observation API. */
  private final Tracing tracing = new Tracing();

  /** How the library's tables are migrated at startup. */
  public enum Migrate {
    /** Not at startup: run the modules' migrate yourself (or {@code pump migrate}). */
    NONE,
    /** Each module's own {@code migrate(dataSource)} before the pumps start. */
    LIBRARY,
    /** The modules' Flyway locations run by the application's own Flyway configuration. */
    FLYWAY
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public boolean isAutoStartup() {
    return autoStartup;
  }

  public void setAutoStartup(boolean autoStartup) {
    this.autoStartup = autoStartup;
  }

  public Migrate getMigrate() {
    return migrate;
  }

  public void setMigrate(Migrate migrate) {
    this.migrate = migrate;
  }

  public Map<String, Pump> getPumps() {
    return pumps;
  }

  public void setPumps(Map<String, Pump> pumps) {
    this.pumps = pumps;
  }

  public Pump getDefaults() {
    return defaults;
  }

  /** The options of pump {@code name}: its own over {@link #getDefaults()}. */
  Pump options(String name) {
    Pump own = pumps.get(name);
    return (own != null ? own : new Pump()).over(defaults);
  }

  public Commands getCommands() {
    return commands;
  }

  public Events getEvents() {
    return events;
  }

  public Balancer getBalancer() {
    return balancer;
  }

  public Console getConsole() {
    return console;
  }

  public Tracing getTracing() {
    return tracing;
  }

  /**
   * The {@code messagepump.tracing.*} properties: tracing is on when the application has an
   * ObservationRegistry bean (Spring Boot Actuator) unless disabled here.
   */
  public static class Tracing {

    /**
     * Observe every enqueue, append and store (a producer span whose context the messages carry)
     * and every delivery (a consumer span of it) through the application's ObservationRegistry, so
     * that Spring Boot's tracing bridge puts them in the caller's trace.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /**
   * The {@code messagepump.console.*} properties. The console is off unless enabled: its actions
   * retry, discard, reset and unpark work, so mounting it is a deliberate choice. Needs
   * pump-console on the class path and a servlet web application.
   */
  public static class Console {

    /** Mount the operations console's servlet. */
    private boolean enabled = false;

    /** The path it is mounted under, e.g. /ops/messagepump (its pages are below it). */
    private String path = "/messagepump";

    /** Show only: every action is refused and no action button is drawn. */
    private boolean readOnly = false;

    /** Show payload previews of dead letters (they may hold personal data). */
    private boolean showPayloads = false;

    /**
     * A token of at least 16 characters that every request must carry; without it the console
     * answers loopback clients only (unless remote-without-token).
     */
    private String accessToken;

    /**
     * Serve other hosts without a token: only when the application's own security (Spring Security,
     * a proxy with login) guards the path.
     */
    private boolean remoteWithoutToken = false;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }

    public boolean isReadOnly() {
      return readOnly;
    }

    public void setReadOnly(boolean readOnly) {
      this.readOnly = readOnly;
    }

    public boolean isShowPayloads() {
      return showPayloads;
    }

    public void setShowPayloads(boolean showPayloads) {
      this.showPayloads = showPayloads;
    }

    public String getAccessToken() {
      return accessToken;
    }

    public void setAccessToken(String accessToken) {
      this.accessToken = accessToken;
    }

    public boolean isRemoteWithoutToken() {
      return remoteWithoutToken;
    }

    public void setRemoteWithoutToken(boolean remoteWithoutToken) {
      this.remoteWithoutToken = remoteWithoutToken;
    }

    /**
     * The servlet mapping of {@link #getPath()}: {@code <path>/*}.
     *
     * @throws IllegalArgumentException naming the property when the path is not a plain absolute
     *     path
     */
    public String servletMapping() {
      String p = path == null ? "" : path.strip();
      if (p.endsWith("/")) {
        p = p.substring(0, p.length() - 1);
      }
      if (!p.matches("(/[A-Za-z0-9._~-]+)+")) {
        throw new IllegalArgumentException(
            "messagepump.console.path must be an absolute path of plain segments, such as"
                + " /ops/messagepump; got '"
                + path
                + "'");
      }
      return p + "/*";
    }
  }

  /**
   * One pump's options ({@code messagepump.pumps.<name>.*}), or the defaults every pump takes
   * ({@code messagepump.defaults.*}). An option left unset takes the one under {@code
   * messagepump.defaults}, and when that is unset too, the one of {@link PumpOptions#defaults()}.
   */
  public static class Pump {

    /**
     * Worker threads: at most this many deliveries' transactions are open at once; in lease mode,
     * at most this many handlers run at once, none holding a transaction (default 4).
     */
    private Integer workers;

    /** Deliveries per transaction, 1 to 64 (default 1). */
    private Integer batchSize;

    /** Wait after a poll that found nothing (default 1s). */
    private Duration pollInterval;

    /**
     * Backoff base: the Busy delay and the first Failed delay (default 250ms). Shorthand for
     * retry.backoff-base.
     */
    private Duration backoffBase;

    /**
     * Backoff cap: the longest delay after repeated failures (default 5m). Shorthand for
     * retry.backoff-cap.
     */
    private Duration backoffCap;

    /**
     * Failures after which a delivery is parked (default 25). Shorthand for retry.max-attempts;
     * retry.forever=true never parks.
     */
    private Integer maxFailures;

    /**
     * The retry policy: attempts, backoff and failures not worth retrying, for every message type
     * and overridden per type (retry.by-type). Its options win over backoff-base, backoff-cap and
     * max-failures.
     */
    private final Retry retry = new Retry();

    /**
     * How long stopping waits for in-flight handlers before interrupting and rolling back (default
     * 10s).
     */
    private Duration shutdownGrace;

    /**
     * Whether to LISTEN on the driver's NOTIFY channel, so new work wakes an idle pump (default
     * true).
     */
    private Boolean notifications;

    /**
     * The longest a handler may run; past it the handler is interrupted, its writes roll back (in
     * lease mode, those it already committed stay) and the delivery fails with
     * HandlerTimeoutException. Unset means no limit.
     */
    private Duration handlerTimeout;

    /**
     * Handler timeouts of single message types (command type, event type, balancer group's
     * messages), overriding handler-timeout; keys with dots go in brackets, e.g. {@code
     * handler-timeout-by-type.[orders.PlaceOrder]=30s}.
     */
    private Map<String, Duration> handlerTimeoutByType = new LinkedHashMap<>();

    /**
     * Bean name of the DataSource the LISTEN connection comes from, when it must not come from the
     * pump's pool (a direct connection past PgBouncer in transaction mode). Unset means the pump's
     * own DataSource.
     */
    private String notificationsDataSource;

    public Integer getWorkers() {
      return workers;
    }

    public void setWorkers(Integer workers) {
      this.workers = workers;
    }

    public Integer getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(Integer batchSize) {
      this.batchSize = batchSize;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }

    public Duration getBackoffBase() {
      return backoffBase;
    }

    public void setBackoffBase(Duration backoffBase) {
      this.backoffBase = backoffBase;
    }

    public Duration getBackoffCap() {
      return backoffCap;
    }

    public void setBackoffCap(Duration backoffCap) {
      this.backoffCap = backoffCap;
    }

    public Integer getMaxFailures() {
      return maxFailures;
    }

    public Retry getRetry() {
      return retry;
    }

    public void setMaxFailures(Integer maxFailures) {
      this.maxFailures = maxFailures;
    }

    public Duration getShutdownGrace() {
      return shutdownGrace;
    }

    public void setShutdownGrace(Duration shutdownGrace) {
      this.shutdownGrace = shutdownGrace;
    }

    public Boolean getNotifications() {
      return notifications;
    }

    public void setNotifications(Boolean notifications) {
      this.notifications = notifications;
    }

    public Duration getHandlerTimeout() {
      return handlerTimeout;
    }

    public void setHandlerTimeout(Duration handlerTimeout) {
      this.handlerTimeout = handlerTimeout;
    }

    public Map<String, Duration> getHandlerTimeoutByType() {
      return handlerTimeoutByType;
    }

    public void setHandlerTimeoutByType(Map<String, Duration> handlerTimeoutByType) {
      this.handlerTimeoutByType = handlerTimeoutByType;
    }

    public String getNotificationsDataSource() {
      return notificationsDataSource;
    }

    public void setNotificationsDataSource(String notificationsDataSource) {
      this.notificationsDataSource = notificationsDataSource;
    }

    /**
     * These options over {@code defaults}: each option set here, else the one set in {@code
     * defaults}; the per-type handler timeouts are merged, these winning for the same type.
     */
    Pump over(Pump defaults) {
      Pump m = new Pump();
      m.workers = workers != null ? workers : defaults.workers;
      m.batchSize = batchSize != null ? batchSize : defaults.batchSize;
      m.pollInterval = pollInterval != null ? pollInterval : defaults.pollInterval;
      m.backoffBase = backoffBase != null ? backoffBase : defaults.backoffBase;
      m.backoffCap = backoffCap != null ? backoffCap : defaults.backoffCap;
      m.maxFailures = maxFailures != null ? maxFailures : defaults.maxFailures;
      retry.over(defaults.retry, m.retry);
      m.shutdownGrace = shutdownGrace != null ? shutdownGrace : defaults.shutdownGrace;
      m.notifications = notifications != null ? notifications : defaults.notifications;
      m.handlerTimeout = handlerTimeout != null ? handlerTimeout : defaults.handlerTimeout;
      m.handlerTimeoutByType.putAll(defaults.handlerTimeoutByType);
      m.handlerTimeoutByType.putAll(handlerTimeoutByType);
      m.notificationsDataSource =
          notificationsDataSource != null
              ? notificationsDataSource
              : defaults.notificationsDataSource;
      return m;
    }

    /**
     * The pump options these properties give: {@link PumpOptions#defaults()} changed by each option
     * that is set (the one place properties map to options; {@link PumpOptions} checks the values,
     * naming the option). The backoff-base, backoff-cap and max-failures shorthands change the
     * default retry policy first, then the retry options change it. The notifications DataSource, a
     * bean name here, is resolved by the caller.
     *
     * @throws IllegalArgumentException naming the option that is out of range or in conflict
     */
    PumpOptions toOptions() {
      PumpOptions o = PumpOptions.defaults();
      if (workers != null) {
        o = o.withWorkers(workers);
      }
      if (batchSize != null) {
        o = o.withBatchSize(batchSize);
      }
      if (pollInterval != null) {
        o = o.withPollInterval(pollInterval);
      }
      if (backoffBase != null || backoffCap != null) {
        RetryPolicy p = o.retryPolicy();
        o =
            o.withBackoff(
                backoffBase != null ? backoffBase : p.backoffBase(),
                backoffCap != null ? backoffCap : p.backoffCap());
      }
      if (maxFailures != null) {
        o = o.withMaxFailures(maxFailures);
      }
      RetryPolicy pump = retry.applyTo(o.retryPolicy(), "retry");
      o = o.withRetryPolicy(pump);
      for (Map.Entry<String, RetryOptions> type : retry.byType.entrySet()) {
        o =
            o.withRetryPolicy(
                type.getKey(),
                type.getValue().applyTo(pump, "retry.by-type.[" + type.getKey() + "]"));
      }
      if (shutdownGrace != null) {
        o = o.withShutdownGrace(shutdownGrace);
      }
      if (notifications != null) {
        o = o.withNotifications(notifications);
      }
      if (handlerTimeout != null) {
        o = o.withHandlerTimeout(handlerTimeout);
      }
      for (Map.Entry<String, Duration> type : handlerTimeoutByType.entrySet()) {
        o = o.withHandlerTimeout(type.getKey(), type.getValue());
      }
      return o;
    }

    /** The pump's retry policy, as {@link #toOptions()} gives it. */
    RetryPolicy retryPolicy() {
      return toOptions().retryPolicy();
    }

    /** The retry policies of single types, as {@link #toOptions()} gives them. */
    Map<String, RetryPolicy> retryPolicyByType() {
      return toOptions().typeRetryPolicies();
    }
  }

  /**
   * Retry options ({@code retry.*} of a pump, or of one type under {@code retry.by-type}): each one
   * set changes the policy it applies to; those unset keep it.
   */
  public static class RetryOptions {

    /**
     * The failed attempt that parks a delivery: with 5, the fifth failure parks it (default 25).
     */
    private Integer maxAttempts;

    /** Never park: retry until handled (max-attempts is then ignored). */
    private Boolean forever;

    /**
     * Exponential backoff's base: the Busy delay and the first wait after a failure (default
     * 250ms).
     */
    private Duration backoffBase;

    /**
     * Exponential backoff's cap: the longest wait after repeated failures (default 5m); the waits
     * are jittered between the base and min(cap, base * 2^failures).
     */
    private Duration backoffCap;

    /**
     * The same wait after every failure, instead of the exponential backoff (and the Busy delay);
     * excludes backoff-base and backoff-cap.
     */
    private Duration fixedDelay;

    /**
     * Exception classes not worth retrying: a failure that is an instance of one parks the delivery
     * at once, e.g. com.example.CardDeclinedException. Unset keeps those of the policy it applies
     * to (none by default).
     */
    private List<Class<? extends Throwable>> nonRetryable;

    public Integer getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(Integer maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    public Boolean getForever() {
      return forever;
    }

    public void setForever(Boolean forever) {
      this.forever = forever;
    }

    public Duration getBackoffBase() {
      return backoffBase;
    }

    public void setBackoffBase(Duration backoffBase) {
      this.backoffBase = backoffBase;
    }

    public Duration getBackoffCap() {
      return backoffCap;
    }

    public void setBackoffCap(Duration backoffCap) {
      this.backoffCap = backoffCap;
    }

    public Duration getFixedDelay() {
      return fixedDelay;
    }

    public void setFixedDelay(Duration fixedDelay) {
      this.fixedDelay = fixedDelay;
    }

    public List<Class<? extends Throwable>> getNonRetryable() {
      return nonRetryable;
    }

    public void setNonRetryable(List<Class<? extends Throwable>> nonRetryable) {
      this.nonRetryable = nonRetryable;
    }

    /** These options over {@code defaults}, into {@code m}: each set here, else the default's. */
    void over(RetryOptions defaults, RetryOptions m) {
      m.maxAttempts = maxAttempts != null ? maxAttempts : defaults.maxAttempts;
      m.forever = forever != null ? forever : defaults.forever;
      m.backoffBase = backoffBase != null ? backoffBase : defaults.backoffBase;
      m.backoffCap = backoffCap != null ? backoffCap : defaults.backoffCap;
      m.fixedDelay = fixedDelay != null ? fixedDelay : defaults.fixedDelay;
      m.nonRetryable = nonRetryable != null ? nonRetryable : defaults.nonRetryable;
    }

    /**
     * {@code policy} changed by the options set here; {@code prefix} names them in errors.
     *
     * @throws IllegalArgumentException naming the option that is out of range or in conflict
     */
    RetryPolicy applyTo(RetryPolicy policy, String prefix) {
      try {
        return change(policy);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(prefix + ": " + e.getMessage(), e);
      }
    }

    private RetryPolicy change(RetryPolicy policy) {
      RetryPolicy p = policy;
      if (Boolean.TRUE.equals(forever)) {
        p = p.withMaxAttempts(RetryPolicy.UNLIMITED_ATTEMPTS);
      } else if (maxAttempts != null) {
        p = p.withMaxAttempts(maxAttempts);
      }
      if (fixedDelay != null) {
        if (backoffBase != null || backoffCap != null) {
          throw new IllegalArgumentException(
              "fixed-delay excludes backoff-base and backoff-cap: set either");
        }
        p = p.withFixedDelay(fixedDelay);
      } else if (backoffBase != null || backoffCap != null) {
        p =
            p.withExponentialBackoff(
                backoffBase != null ? backoffBase : p.backoffBase(),
                backoffCap != null ? backoffCap : p.backoffCap());
      }
      if (nonRetryable != null) {
        p = p.withNonRetryable(new ArrayList<>(nonRetryable));
      }
      return p;
    }
  }

  /**
   * The retry options of a pump ({@code messagepump.pumps.<name>.retry.*}, or {@code
   * messagepump.defaults.retry.*}), with those of single message types.
   */
  public static class Retry extends RetryOptions {

    /**
     * Retry options of single message types (command type, event type), over the pump's; keys with
     * dots go in brackets, e.g. {@code retry.by-type.[orders.PlaceOrder].max-attempts=3}.
     */
    private Map<String, RetryOptions> byType = new LinkedHashMap<>();

    public Map<String, RetryOptions> getByType() {
      return byType;
    }

    public void setByType(Map<String, RetryOptions> byType) {
      this.byType = byType;
    }

    /** These options over {@code defaults}; per-type entries merged, these winning. */
    void over(Retry defaults, Retry m) {
      super.over(defaults, m);
      m.byType.putAll(defaults.byType);
      m.byType.putAll(byType);
    }
  }

  /** The command queue's tables: {@code messagepump.commands.*}. */
  public static class Commands {

    /**
     * The schema of the command queue's tables, for the producers, the pumps and the startup
     * migrations: lower-case letters, digits and _, not starting with a digit.
     */
    private String schema = "commandqueue";

    /**
     * Whether the queue keeps a history of handled commands (id, type, key, attempts, handling
     * time), written in each handling transaction: one more insert per transaction. Trim it with
     * {@code messagepump.commands.retention.history-age}.
     */
    private boolean history = false;

    private final Scheduler scheduler = new Scheduler();

    private final Retention retention = new Retention();

    public String getSchema() {
      return schema;
    }

    public void setSchema(String schema) {
      this.schema = schema;
    }

    public boolean isHistory() {
      return history;
    }

    public void setHistory(boolean history) {
      this.history = history;
    }

    public Scheduler getScheduler() {
      return scheduler;
    }

    public Retention getRetention() {
      return retention;
    }
  }

  /**
   * The thread that fires the command queue's recurring schedules: {@code
   * messagepump.commands.scheduler.*}. Every {@code Schedule} bean is defined (stored, or updated)
   * at start-up.
   */
  public static class Scheduler {

    /**
     * Whether this process runs the scheduler. Unset: it runs when the application defines at least
     * one {@code Schedule} bean. Set it to true in a process that only fires schedules defined
     * elsewhere, to false in one that defines schedules but leaves firing them to others. Any
     * number of processes may run it: each tick is enqueued once.
     */
    private Boolean enabled;

    /** The shortest time between two checks: a tick fires at most about this late. */
    private Duration pollInterval = PumpOptions.defaults().pollInterval();

    /** The longest sleep between two checks while nothing fires. */
    private Duration maxIdle = Duration.ofSeconds(30);

    public Boolean getEnabled() {
      return enabled;
    }

    public void setEnabled(Boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }

    public Duration getMaxIdle() {
      return maxIdle;
    }

    public void setMaxIdle(Duration maxIdle) {
      this.maxIdle = maxIdle;
    }
  }

  /**
   * The command queue's retention job: {@code messagepump.commands.retention.*}. It deletes expired
   * idempotency keys always, and dead letters and history rows past their ages when those are set,
   * in short batches of their own transactions.
   */
  public static class Retention {

    /** Whether this process runs the retention job. Any number of processes may run it. */
    private boolean enabled = false;

    /** Delete dead letters parked longer ago than this. Unset: dead letters are kept. */
    private Duration deadLetterAge;

    /** Delete history rows written longer ago than this. Unset: the history is kept. */
    private Duration historyAge;

    /** Rows deleted per transaction, 1 to 10,000. */
    private int batchSize = 1000;

    /** Time between two passes of the job. */
    private Duration interval = Duration.ofMinutes(5);

    /** Pause between two full batches of a pass, leaving the database to other work. */
    private Duration batchPause = Duration.ofMillis(50);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getDeadLetterAge() {
      return deadLetterAge;
    }

    public void setDeadLetterAge(Duration deadLetterAge) {
      this.deadLetterAge = deadLetterAge;
    }

    public Duration getHistoryAge() {
      return historyAge;
    }

    public void setHistoryAge(Duration historyAge) {
      this.historyAge = historyAge;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
      this.batchSize = batchSize;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }

    public Duration getBatchPause() {
      return batchPause;
    }

    public void setBatchPause(Duration batchPause) {
      this.batchPause = batchPause;
    }
  }

  /** The event store's tables: {@code messagepump.events.*}. */
  public static class Events {

    /**
     * The schema of the event store's tables, for the producers, the pumps and the startup
     * migrations: lower-case letters, digits and _, not starting with a digit.
     */
    private String schema = "eventstream";

    public String getSchema() {
      return schema;
    }

    public void setSchema(String schema) {
      this.schema = schema;
    }
  }

  /** The partition groups' (balancer's) tables: {@code messagepump.balancer.*}. */
  public static class Balancer {

    /**
     * The schema of the partition groups' (balancer's) tables, for the producers, the pumps and the
     * startup migrations: lower-case letters, digits and _, not starting with a digit.
     */
    private String schema = "balancer";

    public String getSchema() {
      return schema;
    }

    public void setSchema(String schema) {
      this.schema = schema;
    }
  }
}
