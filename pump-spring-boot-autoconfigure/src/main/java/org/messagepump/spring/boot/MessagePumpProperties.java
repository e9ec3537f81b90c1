package org.messagepump.spring.boot;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.MessagePump;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code messagepump.*} properties: whether there are pumps, how the library's tables are
 * migrated and in which schemas, the options every pump takes ({@code messagepump.defaults.*}) and
 * those of each pump by its name ({@code messagepump.pumps.<name>.*}). A pump's name is the one its
 * {@link PumpDefinition} bean gives; options left out take {@code messagepump.defaults}, then the
 * defaults of {@link MessagePump}. An unknown property under {@code messagepump} fails the binding,
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
   * messagepump.defaults}, and when that is unset too, the matching {@code MessagePump.DEFAULT_*}.
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

    /** Backoff base: the Busy delay and the first Failed delay (default 250ms). */
    private Duration backoffBase;

    /** Backoff cap: the longest delay after repeated failures (default 5m). */
    private Duration backoffCap;

    /** Failures after which a delivery is parked; unset means never (retry forever). */
    private Integer maxFailures;

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
     * Applies the options that are set to a pump builder (whose setters validate them, naming the
     * option); the notifications DataSource, a bean name here, is resolved by the caller.
     */
    MessagePump.Builder applyTo(MessagePump.Builder b) {
      if (workers != null) {
        b.workers(workers);
      }
      if (batchSize != null) {
        b.batchSize(batchSize);
      }
      if (pollInterval != null) {
        b.pollInterval(pollInterval);
      }
      b.backoff(
          backoffBase != null ? backoffBase : MessagePump.DEFAULT_BACKOFF_BASE,
          backoffCap != null ? backoffCap : MessagePump.DEFAULT_BACKOFF_CAP);
      if (maxFailures != null) {
        b.maxFailures(maxFailures);
      }
      if (shutdownGrace != null) {
        b.shutdownGrace(shutdownGrace);
      }
      if (notifications != null) {
        b.notifications(notifications);
      }
      if (handlerTimeout != null) {
        b.handlerTimeout(handlerTimeout);
      }
      handlerTimeoutByType.forEach(b::handlerTimeout);
      return b;
    }
  }

  /** The command queue's tables: {@code messagepump.commands.*}. */
  public static class Commands {

    /**
     * The schema of the command queue's tables, for the producers, the pumps and the startup
     * migrations: lower-case letters, digits and _, not starting with a digit.
     */
    private String schema = "commandqueue";

    public String getSchema() {
      return schema;
    }

    public void setSchema(String schema) {
      this.schema = schema;
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
