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
