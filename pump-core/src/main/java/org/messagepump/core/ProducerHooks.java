package org.messagepump.core;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a producer calls its {@link ProducerHook}, for the modules' producers and custom ones: every
 * method accepts a null hook or send (no hook registered) and then does nothing and allocates
 * nothing. A hook's exception is logged (the first at WARN, later ones at DEBUG) and never fails
 * the write.
 */
public final class ProducerHooks {

  private static final Logger log = LoggerFactory.getLogger(ProducerHooks.class);
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  private ProducerHooks() {}

  /**
   * Starts a write: {@code hook.beforeSend(outgoing)}, or {@code null} when {@code hook} is null or
   * it failed.
   */
  public static ProducerHook.Send start(
      ProducerHook hook, String driver, String destination, int messageCount, String messageId) {
    if (hook == null) {
      return null;
    }
    try {
      ProducerHook.Send send =
          hook.beforeSend(new ProducerHook.Outgoing(driver, destination, messageCount, messageId));
      if (send == null) {
        throw new IllegalStateException("the producer hook returned no Send");
      }
      return send;
    } catch (RuntimeException e) {
      failedHook("beforeSend", e);
      return null;
    }
  }

  /** The headers {@code send} adds, empty when it is null or failed. */
  public static Map<String, String> headers(ProducerHook.Send send) {
    if (send == null) {
      return Map.of();
    }
    try {
      Map<String, String> headers = send.headers();
      return headers == null ? Map.of() : headers;
    } catch (RuntimeException e) {
      failedHook("headers", e);
      return Map.of();
    }
  }

  /** Tells {@code send} (when not null) that the write succeeded. */
  public static void sent(ProducerHook.Send send, String messageId) {
    if (send == null) {
      return;
    }
    try {
      send.sent(messageId);
    } catch (RuntimeException e) {
      failedHook("sent", e);
    }
  }

  /** Tells {@code send} (when not null) that the write failed. */
  public static void failed(ProducerHook.Send send, Throwable failure) {
    if (send == null) {
      return;
    }
    try {
      send.failed(failure);
    } catch (RuntimeException e) {
      failedHook("failed", e);
    }
  }

  /**
   * {@code explicit} with the entries of {@code injected} whose names it does not hold: the
   * caller's headers win. Returns {@code explicit} itself when {@code injected} is empty.
   *
   * @throws IllegalArgumentException when either map is null
   */
  public static Map<String, String> merge(
      Map<String, String> explicit, Map<String, String> injected) {
    if (explicit == null) {
      throw new IllegalArgumentException("explicit must not be null");
    }
    if (injected == null) {
      throw new IllegalArgumentException("injected must not be null");
    }
    if (injected.isEmpty()) {
      return explicit;
    }
    Map<String, String> out = new LinkedHashMap<>(explicit);
    injected.forEach(out::putIfAbsent);
    return out;
  }

  /** The common type of {@code types}, or null when they differ. */
  public static String commonDestination(Iterable<String> types) {
    String common = null;
    for (String t : types) {
      if (common == null) {
        common = t;
      } else if (!common.equals(t)) {
        return null;
      }
    }
    return common;
  }

  private static void failedHook(String step, RuntimeException e) {
    if (WARNED.compareAndSet(false, true)) {
      log.warn(
          "producer hook failed in {}; the write goes on without its headers: {}",
          step,
          e.toString(),
          e);
    } else {
      log.debug("producer hook failed in {}: {}", step, e.toString(), e);
    }
  }
}
