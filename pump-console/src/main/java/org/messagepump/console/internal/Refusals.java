package org.messagepump.console.internal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.messagepump.core.spi.Meters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Requests the guard refused before anyone was identified: counted, and logged to the audit logger
 * as actor {@code anonymous} at most once a {@link #LOG_INTERVAL_MS} (a flood of them costs one
 * line a minute and never reaches the audit trail, which holds operators' actions only).
 */
public final class Refusals {

  static final long LOG_INTERVAL_MS = 60_000;
  private static final Logger LOG = LoggerFactory.getLogger(Audit.LOGGER);

  private final AtomicLong total = new AtomicLong();
  private final LongSupplier clock;
  private final Meters.Counter counter;
  private long lastLogAt = Long.MIN_VALUE;
  private long unlogged;

  /** Refusals counted in {@code meters} ({@link Meters#none()}: not counted there). */
  public Refusals(Meters meters) {
    this(meters, System::currentTimeMillis);
  }

  Refusals(Meters meters, LongSupplier clock) {
    this.clock = clock;
    this.counter =
        meters.counter(
            "messagepump.console.refused",
            "Requests the console refused before identifying anyone");
  }

  /**
   * Counts a refusal and logs it, or the number since the last line, at most once a minute; returns
   * true when it wrote a line.
   */
  public boolean refused(String from, String method, String path, HttpError e) {
    total.incrementAndGet();
    counter.increment();
    long now = clock.getAsLong();
    long skipped;
    synchronized (this) {
      if (lastLogAt != Long.MIN_VALUE && now - lastLogAt < LOG_INTERVAL_MS) {
        unlogged++;
        return false;
      }
      skipped = unlogged;
      unlogged = 0;
      lastLogAt = now;
    }
    LOG.warn(
        "console refused: actor=\"anonymous\" from={} request={} result={}{}",
        AuditLine.quote(from),
        AuditLine.quote(method + " " + path),
        AuditLine.quote(e.status() + " " + e.getMessage()),
        skipped == 0 ? "" : " (and " + skipped + " more refused since the last line)");
    return true;
  }

  /** Refusals since the console started. */
  public long total() {
    return total.get();
  }
}
