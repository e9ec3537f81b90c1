package org.messagepump.core.engine;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.messagepump.core.Limits;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.spi.Inputs;

/**
 * The options of a pump's delivery loop, as one immutable value: worker threads, batch size, poll
 * interval, retry policies (the pump's and per message type), handler timeouts (the pump's and per
 * message type), shutdown grace period and notifications. {@link MessagePump.Builder}, {@link
 * PumpTester.Builder} and the Spring Boot properties all hold their options as a {@code
 * PumpOptions}: the defaults are those of {@link #defaults()}, and every value is checked here.
 *
 * <pre>{@code
 * PumpOptions options = PumpOptions.defaults()
 *     .withWorkers(8)
 *     .withBatchSize(16)
 *     .withRetryPolicy(RetryPolicy.defaults().withMaxAttempts(10))
 *     .withHandlerTimeout(Duration.ofSeconds(30));
 * MessagePump pump = MessagePump.builder(dataSource).driver(driver).options(options).build();
 * }</pre>
 *
 * <p>Immutable and thread-safe; each {@code with} method returns a changed copy and rejects a bad
 * value, null included, with an {@link IllegalArgumentException} naming the option and the value,
 * before anything is sent to the database. What a pump is wired to (its name, driver, DataSource,
 * thread factory, meter registry, interceptors) is set on the builder, not here.
 */
public final class PumpOptions {

  private static final PumpOptions DEFAULTS =
      new PumpOptions(
          4,
          1,
          Duration.ofSeconds(1),
          RetryPolicy.defaults(),
          Map.of(),
          null,
          Map.of(),
          Duration.ofSeconds(10),
          true);

  private final int workers;
  private final int batchSize;
  private final Duration pollInterval;
  private final RetryPolicy retryPolicy;
  private final Map<String, RetryPolicy> typePolicies;
  private final Duration handlerTimeout; // null: none
  private final Map<String, Duration> typeTimeouts;
  private final Duration shutdownGrace;
  private final boolean notifications;

  private PumpOptions(
      int workers,
      int batchSize,
      Duration pollInterval,
      RetryPolicy retryPolicy,
      Map<String, RetryPolicy> typePolicies,
      Duration handlerTimeout,
      Map<String, Duration> typeTimeouts,
      Duration shutdownGrace,
      boolean notifications) {
    this.workers = workers;
    this.batchSize = batchSize;
    this.pollInterval = pollInterval;
    this.retryPolicy = retryPolicy;
    this.typePolicies = typePolicies;
    this.handlerTimeout = handlerTimeout;
    this.typeTimeouts = typeTimeouts;
    this.shutdownGrace = shutdownGrace;
    this.notifications = notifications;
  }

  /**
   * The defaults: 4 workers, batches of 1, a poll interval of 1 s, {@link RetryPolicy#defaults()}
   * ({@value RetryPolicy#DEFAULT_MAX_ATTEMPTS} attempts, backoff from 250 ms to 5 min), no handler
   * timeout, a shutdown grace period of 10 s, notifications on.
   */
  public static PumpOptions defaults() {
    return DEFAULTS;
  }

  /** Worker threads: at most this many deliveries' transactions are open at once. */
  public int workers() {
    return workers;
  }

  /** Deliveries per transaction, 1 to {@value Limits#MAX_BATCH_SIZE}. */
  public int batchSize() {
    return batchSize;
  }

  /** How long the pump starts no new poll after one that found nothing. */
  public Duration pollInterval() {
    return pollInterval;
  }

  /** The pump's retry policy, for every message type without one of its own. */
  public RetryPolicy retryPolicy() {
    return retryPolicy;
  }

  /**
   * The retry policies of single message types, overriding {@link #retryPolicy()} (unmodifiable).
   */
  public Map<String, RetryPolicy> typeRetryPolicies() {
    return typePolicies;
  }

  /** The retry policy of a message type: its own, or else the pump's. */
  public RetryPolicy retryPolicy(String messageType) {
    RetryPolicy p = messageType == null ? null : typePolicies.get(messageType);
    return p != null ? p : retryPolicy;
  }

  /** The longest a handler may run, or empty for no limit. */
  public Optional<Duration> handlerTimeout() {
    return Optional.ofNullable(handlerTimeout);
  }

  /** The handler timeouts of single message types, overriding {@link #handlerTimeout()}. */
  public Map<String, Duration> typeHandlerTimeouts() {
    return typeTimeouts;
  }

  /**
   * How long {@link MessagePump#close()} lets in-flight handlers finish before interrupting them.
   */
  public Duration shutdownGrace() {
    return shutdownGrace;
  }

  /** Whether the pump listens on its driver's wake channel (one pooled connection held). */
  public boolean notifications() {
    return notifications;
  }

  /** These options with {@code workers} worker threads, at least 1. */
  public PumpOptions withWorkers(int workers) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be >= 1: " + workers);
    }
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /**
   * These options with {@code batchSize} deliveries per transaction, 1 to {@value
   * Limits#MAX_BATCH_SIZE}.
   */
  public PumpOptions withBatchSize(int batchSize) {
    if (batchSize < 1 || batchSize > Limits.MAX_BATCH_SIZE) {
      throw new IllegalArgumentException(
          "batchSize must be between 1 and " + Limits.MAX_BATCH_SIZE + ": " + batchSize);
    }
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /** These options with another poll interval; positive. */
  public PumpOptions withPollInterval(Duration pollInterval) {
    return new PumpOptions(
        workers,
        batchSize,
        positive("pollInterval", pollInterval),
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /**
   * These options with the pump's retry policy, for every message type without one of its own. Its
   * backoff also paces the pump's own retries after failed polls.
   */
  public PumpOptions withRetryPolicy(RetryPolicy policy) {
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        notNull("retryPolicy", policy),
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /**
   * These options with the retry policy of one message type (command type, event type or balancer
   * group's messages as the driver names them), overriding the pump's as a whole.
   */
  public PumpOptions withRetryPolicy(String messageType, RetryPolicy policy) {
    String type = messageType("messageType", messageType);
    notNull("retryPolicy of " + type, policy);
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        with(typePolicies, type, policy),
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /**
   * Shorthand for the pump's retry policy {@link RetryPolicy#withMaxAttempts(int)}: the failure
   * after which a delivery is parked. At least 1; {@link MessagePump#UNLIMITED_FAILURES} never
   * parks.
   */
  public PumpOptions withMaxFailures(int maxFailures) {
    if (maxFailures < 1) {
      throw new IllegalArgumentException("maxFailures must be >= 1: " + maxFailures);
    }
    return withRetryPolicy(retryPolicy.withMaxAttempts(maxFailures));
  }

  /**
   * Shorthand for the pump's retry policy {@link RetryPolicy#withExponentialBackoff(Duration,
   * Duration)}: {@code base} is the Busy delay and the first Failed delay, {@code cap} the longest;
   * both positive, the cap at least the base.
   */
  public PumpOptions withBackoff(Duration base, Duration cap) {
    return withRetryPolicy(retryPolicy.withExponentialBackoff(base, cap));
  }

  /**
   * These options with a handler timeout: the longest a handler may run; positive, at most {@link
   * Limits#MAX_DELAY}. See {@link MessagePump.Builder#handlerTimeout(Duration)}.
   */
  public PumpOptions withHandlerTimeout(Duration timeout) {
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        positive("handlerTimeout", timeout),
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /** These options with the handler timeout of one message type, overriding the pump's. */
  public PumpOptions withHandlerTimeout(String messageType, Duration timeout) {
    String type = messageType("messageType", messageType);
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        with(typeTimeouts, type, positive("handlerTimeout of " + type, timeout)),
        shutdownGrace,
        notifications);
  }

  /** These options with another shutdown grace period; not negative. */
  public PumpOptions withShutdownGrace(Duration shutdownGrace) {
    notNull("shutdownGrace", shutdownGrace);
    if (shutdownGrace.isNegative()) {
      throw new IllegalArgumentException("shutdownGrace must not be negative: " + shutdownGrace);
    }
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /** These options listening on the driver's wake channel, or not (the pump then polls). */
  public PumpOptions withNotifications(boolean notifications) {
    return new PumpOptions(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  /** The retry policies as the delivery loop looks them up. */
  RetryPolicies policies() {
    return new RetryPolicies(retryPolicy, typePolicies);
  }

  /** The handler timeouts as the delivery loop watches them. */
  HandlerTimeouts timeouts(String pumpName, java.util.concurrent.ThreadFactory threadFactory) {
    return handlerTimeout == null && typeTimeouts.isEmpty()
        ? HandlerTimeouts.NONE
        : new HandlerTimeouts(pumpName, handlerTimeout, typeTimeouts, threadFactory);
  }

  private static <V> Map<String, V> with(Map<String, V> map, String key, V value) {
    Map<String, V> copy = new LinkedHashMap<>(map);
    copy.put(key, value);
    return Collections.unmodifiableMap(copy);
  }

  private static String messageType(String option, String value) {
    return Inputs.key(option, notNull(option, value));
  }

  static Duration positive(String option, Duration d) {
    notNull(option, d);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(option + " must be positive: " + d);
    }
    if (d.compareTo(Limits.MAX_DELAY) > 0) {
      // A postponement beyond this cannot be stored (timestamptz arithmetic overflows).
      throw new IllegalArgumentException(
          option + " must be at most " + Limits.MAX_DELAY.toDays() + " days: " + d);
    }
    return d;
  }

  private static <T> T notNull(String option, T value) {
    if (value == null) {
      throw new IllegalArgumentException(option + " must not be null");
    }
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PumpOptions p
        && p.workers == workers
        && p.batchSize == batchSize
        && p.pollInterval.equals(pollInterval)
        && p.retryPolicy.equals(retryPolicy)
        && p.typePolicies.equals(typePolicies)
        && Objects.equals(p.handlerTimeout, handlerTimeout)
        && p.typeTimeouts.equals(typeTimeouts)
        && p.shutdownGrace.equals(shutdownGrace)
        && p.notifications == notifications;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        workers,
        batchSize,
        pollInterval,
        retryPolicy,
        typePolicies,
        handlerTimeout,
        typeTimeouts,
        shutdownGrace,
        notifications);
  }

  @Override
  public String toString() {
    return "PumpOptions[workers="
        + workers
        + ", batchSize="
        + batchSize
        + ", pollInterval="
        + pollInterval
        + ", retryPolicy="
        + retryPolicy
        + (typePolicies.isEmpty() ? "" : ", typeRetryPolicies=" + typePolicies)
        + ", handlerTimeout="
        + (handlerTimeout == null ? "none" : handlerTimeout)
        + (typeTimeouts.isEmpty() ? "" : ", typeHandlerTimeouts=" + typeTimeouts)
        + ", shutdownGrace="
        + shutdownGrace
        + ", notifications="
        + notifications
        + "]";
  }
}
