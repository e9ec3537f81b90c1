package org.messagepump.commands;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.Inputs;

/**
 * How one command is enqueued: when it becomes due, its priority, its idempotency key, correlation
 * and causation ids and headers. Immutable; each {@code with…} method returns a copy and rejects
 * bad values with an {@link IllegalArgumentException} naming the option.
 *
 * <pre>{@code
 * EnqueueOptions.defaults()
 *     .withDelay(Duration.ofMinutes(5))
 *     .withIdempotencyKey("order-42/charge") // or …WhilePending(key), …For(key, period)
 *     .withHeader("tenant", "acme")
 *     .withPriority(5);
 * }</pre>
 *
 * @param delay wait after enqueueing, measured with the database clock ({@code null}: none)
 * @param deliverAt absolute due time ({@code null}: none); exclusive with {@code delay}
 * @param idempotencyKey a key deduplicating the command ({@code null}: none), for as long as {@code
 *     keyMode} says
 * @param correlationId the conversation id ({@code null}: none, or inherited by follow-ups)
 * @param causationId the id of the message that caused this one ({@code null}: none)
 * @param headers free-form string headers, never {@code null}
 * @param priority {@value #MIN_PRIORITY} (the default) to {@value #MAX_PRIORITY}: within a type, a
 *     command is claimed before the lower-priority ones that became due less than one minute per
 *     level of difference before it (docs/commands.md, "Priorities")
 * @param keyMode how long {@code idempotencyKey} deduplicates ({@code null}: {@link
 *     KeyMode#FOREVER})
 * @param keyPeriod how long the key deduplicates in {@link KeyMode#PERIOD}, else {@code null}
 */
public record EnqueueOptions(
    Duration delay,
    Instant deliverAt,
    String idempotencyKey,
    String correlationId,
    String causationId,
    Map<String, String> headers,
    int priority,
    KeyMode keyMode,
    Duration keyPeriod) {

  /** How long an idempotency key deduplicates (docs/commands.md, "Idempotency key modes"). */
  public enum KeyMode {
    /** The key is kept forever: the command is enqueued once, ever. The default. */
    FOREVER,
    /**
     * The key is kept while the command is pending: handling or parking it releases the key in the
     * same transaction, so the same key can be enqueued again afterwards.
     */
    WHILE_PENDING,
    /**
     * The key deduplicates for {@link EnqueueOptions#keyPeriod()} after it was taken; then a new
     * enqueue with it goes through, and the retention job deletes it.
     */
    PERIOD
  }

  /** The lowest priority, and the default: {@value}. */
  public static final int MIN_PRIORITY = 0;

  /** The highest priority: {@value}. */
  public static final int MAX_PRIORITY = 9;

  /** The default priority, {@value}. */
  public static final int DEFAULT_PRIORITY = MIN_PRIORITY;

  /**
   * Longest idempotency key, correlation id or causation id, in characters; they are also limited
   * to {@link Limits#MAX_KEY_BYTES} UTF-8 bytes (they sit in indexes). Headers are checked against
   * the queue's {@link Limits} when enqueued.
   */
  public static final int MAX_TEXT_LENGTH = 1000;

  private static final EnqueueOptions DEFAULTS =
      new EnqueueOptions(
          null, null, null, null, null, Map.of(), DEFAULT_PRIORITY, KeyMode.FOREVER, null);

  /** Options of the {@linkplain #DEFAULT_PRIORITY default priority}; validates every option. */
  public EnqueueOptions(
      Duration delay,
      Instant deliverAt,
      String idempotencyKey,
      String correlationId,
      String causationId,
      Map<String, String> headers) {
    this(delay, deliverAt, idempotencyKey, correlationId, causationId, headers, DEFAULT_PRIORITY);
  }

  /** Options of a priority, without a key mode: the key, if any, deduplicates forever. */
  public EnqueueOptions(
      Duration delay,
      Instant deliverAt,
      String idempotencyKey,
      String correlationId,
      String causationId,
      Map<String, String> headers,
      int priority) {
    this(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        KeyMode.FOREVER,
        null);
  }

  /** Validates every option. */
  public EnqueueOptions {
    if (delay != null) {
      Inputs.delay("delay", delay);
    }
    if (deliverAt != null) {
      Inputs.instant("deliverAt", deliverAt);
    }
    if (delay != null && deliverAt != null) {
      throw new IllegalArgumentException("delay and deliverAt are exclusive; set one of them");
    }
    text("idempotencyKey", idempotencyKey);
    text("correlationId", correlationId);
    text("causationId", causationId);
    if (keyMode == null) {
      keyMode = KeyMode.FOREVER;
    }
    if (keyMode == KeyMode.PERIOD) {
      if (keyPeriod == null) {
        throw new IllegalArgumentException("keyPeriod must be set for KeyMode.PERIOD");
      }
      if (keyPeriod.isZero() || keyPeriod.isNegative()) {
        throw new IllegalArgumentException("keyPeriod must be positive: " + keyPeriod);
      }
      if (keyPeriod.compareTo(Limits.MAX_DELAY) > 0) {
        throw new IllegalArgumentException(
            "keyPeriod must be at most " + Limits.MAX_DELAY.toDays() + " days: " + keyPeriod);
      }
    } else if (keyPeriod != null) {
      throw new IllegalArgumentException(
          "keyPeriod is only for KeyMode.PERIOD, not " + keyMode + ": " + keyPeriod);
    }
    if (keyMode != KeyMode.FOREVER && idempotencyKey == null) {
      throw new IllegalArgumentException("keyMode " + keyMode + " needs an idempotencyKey");
    }
    if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
      throw new IllegalArgumentException(
          "priority must be between " + MIN_PRIORITY + " and " + MAX_PRIORITY + ": " + priority);
    }
    if (headers == null) {
      headers = Map.of();
    } else {
      for (Map.Entry<String, String> e : headers.entrySet()) {
        if (e.getKey() == null || e.getKey().isBlank()) {
          throw new IllegalArgumentException("header name must not be blank");
        }
        if (e.getValue() == null) {
          throw new IllegalArgumentException("header '" + e.getKey() + "' must not be null");
        }
        if (e.getKey().indexOf('\0') >= 0 || e.getValue().indexOf('\0') >= 0) {
          throw new IllegalArgumentException(
              "headers must not contain a NUL character (PostgreSQL jsonb cannot hold it)");
        }
      }
      headers = Map.copyOf(headers);
    }
  }

  /** No delay, no key, no ids, no headers, priority {@value #DEFAULT_PRIORITY}: due now. */
  public static EnqueueOptions defaults() {
    return DEFAULTS;
  }

  /**
   * Due after {@code delay} (database clock); not negative, at most {@link Limits#MAX_DELAY};
   * clears {@code deliverAt}.
   */
  public EnqueueOptions withDelay(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    return new EnqueueOptions(
        delay,
        null,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  /**
   * Due at {@code deliverAt} (a time in the past means now), between {@link Limits#MIN_INSTANT} and
   * {@link Limits#MAX_INSTANT}; clears {@code delay}.
   */
  public EnqueueOptions withDeliverAt(Instant deliverAt) {
    Objects.requireNonNull(deliverAt, "deliverAt");
    return new EnqueueOptions(
        null,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  /**
   * Deduplicates by {@code key} forever ({@link KeyMode#FOREVER}): a second enqueue with it inserts
   * nothing. Not blank.
   */
  public EnqueueOptions withIdempotencyKey(String key) {
    return withKey(key, KeyMode.FOREVER, null);
  }

  /**
   * Deduplicates by {@code key} while the command is pending ({@link KeyMode#WHILE_PENDING}): the
   * transaction that handles or parks the command releases the key, so a later enqueue with it goes
   * through. Not blank.
   */
  public EnqueueOptions withIdempotencyKeyWhilePending(String key) {
    return withKey(key, KeyMode.WHILE_PENDING, null);
  }

  /**
   * Deduplicates by {@code key} for {@code period} after the key was taken ({@link KeyMode#PERIOD},
   * database clock): a later enqueue with the expired key goes through and takes the key for its
   * own period. {@code key} not blank; {@code period} positive, at most {@link Limits#MAX_DELAY}.
   */
  public EnqueueOptions withIdempotencyKeyFor(String key, Duration period) {
    if (period == null) {
      throw new IllegalArgumentException("keyPeriod must not be null");
    }
    return withKey(key, KeyMode.PERIOD, period);
  }

  private EnqueueOptions withKey(String key, KeyMode mode, Duration period) {
    if (key == null) {
      throw new IllegalArgumentException("idempotencyKey must not be null");
    }
    return new EnqueueOptions(
        delay, deliverAt, key, correlationId, causationId, headers, priority, mode, period);
  }

  /** The conversation id; not blank. */
  public EnqueueOptions withCorrelationId(String correlationId) {
    if (correlationId == null) {
      throw new IllegalArgumentException("correlationId must not be null");
    }
    return new EnqueueOptions(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  /** The id of the message that caused this one; not blank. */
  public EnqueueOptions withCausationId(String causationId) {
    if (causationId == null) {
      throw new IllegalArgumentException("causationId must not be null");
    }
    return new EnqueueOptions(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  /** Adds (or replaces) one header. */
  public EnqueueOptions withHeader(String name, String value) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("header name must not be blank");
    }
    if (value == null) {
      throw new IllegalArgumentException("header '" + name + "' must not be null");
    }
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put(name, value);
    return new EnqueueOptions(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        h,
        priority,
        keyMode,
        keyPeriod);
  }

  /** Replaces all headers. */
  public EnqueueOptions withHeaders(Map<String, String> headers) {
    if (headers == null) {
      throw new IllegalArgumentException("headers must not be null");
    }
    return new EnqueueOptions(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  /**
   * The priority, {@value #MIN_PRIORITY} to {@value #MAX_PRIORITY} (default {@value
   * #DEFAULT_PRIORITY}). Within a type, commands are claimed highest priority first, each level
   * worth one minute of waiting: a command is claimed before every command of lower priority that
   * became due less than one minute per level of difference before it, and a command that has
   * waited long enough goes before later commands of higher priority, so none waits forever. Kept
   * when the command is postponed, leased, parked and retried.
   */
  public EnqueueOptions withPriority(int priority) {
    return new EnqueueOptions(
        delay,
        deliverAt,
        idempotencyKey,
        correlationId,
        causationId,
        headers,
        priority,
        keyMode,
        keyPeriod);
  }

  private static void text(String option, String value) {
    if (value == null) {
      return;
    }
    if (value.isBlank()) {
      throw new IllegalArgumentException(option + " must not be blank");
    }
    if (value.length() > MAX_TEXT_LENGTH) {
      throw new IllegalArgumentException(
          option + " must be at most " + MAX_TEXT_LENGTH + " characters: " + value.length());
    }
    Inputs.key(option, value);
  }
}
