package org.messagepump.spring.boot;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.MessagePump;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code messagepump.*} properties: how the library's tables are migrated, and the options of
 * each pump by its name ({@code messagepump.pumps.<name>.*}). A pump's name is the one its {@link
 * PumpDefinition} bean gives; options left out take the defaults of {@link MessagePump}.
 */
@ConfigurationProperties("messagepump")
public class MessagePumpProperties {

  /** Whether the pumps start with the application context (and stop with it). */
  private boolean autoStartup = true;

  /**
   * How the library's tables are created or upgraded at startup: none (you run them), library (each
   * module's own migrate) or flyway (the module's locations through the application's own Flyway
   * configuration, after the application's migrations).
   */
  private Migrate migrate = Migrate.NONE;

  /** Options of each pump, by pump name. */
  private Map<String, Pump> pumps = new LinkedHashMap<>();

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

  /** One pump's options; each defaults to the matching {@code MessagePump.DEFAULT_*}. */
  public static class Pump {

    /** Worker threads: at most this many deliveries' transactions are open at once. */
    private int workers = MessagePump.DEFAULT_WORKERS;

    /** Deliveries per transaction, 1 to 64. */
    private int batchSize = MessagePump.DEFAULT_BATCH_SIZE;

    /** Wait after a poll that found nothing. */
    private Duration pollInterval = MessagePump.DEFAULT_POLL_INTERVAL;

    /** Backoff base: the Busy delay and the first Failed delay. */
    private Duration backoffBase = MessagePump.DEFAULT_BACKOFF_BASE;

    /** Backoff cap: the longest delay after repeated failures. */
    private Duration backoffCap = MessagePump.DEFAULT_BACKOFF_CAP;

    /** Failures after which a delivery is parked; unset means never (retry forever). */
    private Integer maxFailures;

    /** How long stopping waits for in-flight handlers before interrupting and rolling back. */
    private Duration shutdownGrace = MessagePump.DEFAULT_SHUTDOWN_GRACE;

    /** Whether to LISTEN on the driver's NOTIFY channel, so new work wakes an idle pump. */
    private boolean notifications = MessagePump.DEFAULT_NOTIFICATIONS;

    public int getWorkers() {
      return workers;
    }

    public void setWorkers(int workers) {
      this.workers = workers;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
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

    public boolean isNotifications() {
      return notifications;
    }

    public void setNotifications(boolean notifications) {
      this.notifications = notifications;
    }

    /** Applies these options to a pump builder (whose setters validate them, naming the option). */
    MessagePump.Builder applyTo(MessagePump.Builder b) {
      b.workers(workers)
          .batchSize(batchSize)
          .pollInterval(pollInterval)
          .backoff(backoffBase, backoffCap)
          .shutdownGrace(shutdownGrace)
          .notifications(notifications);
      if (maxFailures != null) {
        b.maxFailures(maxFailures);
      }
      return b;
    }
  }
}
