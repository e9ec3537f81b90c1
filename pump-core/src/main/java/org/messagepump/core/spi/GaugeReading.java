package org.messagepump.core.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One reading shared by a set of gauges: taken when a gauge is read and the last reading is older
 * than the refresh interval, at most one at a time, so the database sees at most one query per
 * interval however many gauges and scrapes there are. A failed reading keeps the previous figures
 * (the initial ones before any success) and is logged once per streak of failures; the next read
 * after the interval tries again. For drivers' gauges (see {@link Meters}).
 *
 * @param <T> what one reading returns
 */
public final class GaugeReading<T> {

  private static final Logger log = LoggerFactory.getLogger(GaugeReading.class);

  private final String what;
  private final long refreshNanos;
  private final Supplier<T> read;
  private final Object lock = new Object();
  private T last;
  private long readAt;
  private boolean done;
  private boolean failing;

  private GaugeReading(String what, Duration refresh, T initial, Supplier<T> read) {
    this.what = what;
    this.refreshNanos = refresh.toNanos();
    this.last = initial;
    this.read = read;
  }

  /**
   * A reading named {@code what} in log lines (for example "command queue orders: the queue
   * gauges"), re-read by {@code read} at most once per {@code refresh} (positive), {@code initial}
   * until the first success.
   */
  public static <T> GaugeReading<T> of(String what, Duration refresh, T initial, Supplier<T> read) {
    Objects.requireNonNull(what, "what");
    Objects.requireNonNull(read, "read");
    if (refresh == null || refresh.isNegative() || refresh.isZero()) {
      throw new IllegalArgumentException("refresh must be positive: " + refresh);
    }
    return new GaugeReading<>(what, refresh, initial, read);
  }

  /** The last reading, taken again first when it is older than the refresh interval. */
  public T get() {
    synchronized (lock) {
      long now = System.nanoTime();
      if (done && now - readAt < refreshNanos) {
        return last;
      }
      readAt = now;
      done = true;
      try {
        last = read.get();
        if (failing) {
          failing = false;
          log.info("{}: reading works again", what);
        }
      } catch (RuntimeException e) {
        if (!failing) {
          failing = true;
          log.warn(
              "{}: reading failed; the gauges keep their last figures: {}", what, e.toString());
        }
      }
      return last;
    }
  }
}
