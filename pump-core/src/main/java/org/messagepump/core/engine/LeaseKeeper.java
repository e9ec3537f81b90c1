package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease mode's heartbeat: one thread per pump that, every third of the lease, extends the leases of
 * all the deliveries this pump is running, in one short transaction of its own ({@link
 * Driver#extendLeases}). The cost is one transaction per beat for the whole pump, whatever the
 * number of running deliveries, and none while nothing runs. The handler has no part in it: a
 * handler busy for minutes keeps its lease as long as its process is alive and reaches the
 * database.
 *
 * <p>A delivery whose lease could not be extended because another claim took it is marked lost and
 * logged once; its handler keeps running (it cannot be stopped safely from here), and its
 * completion is refused by the driver's fencing. When a beat fails (the database is unreachable) it
 * is logged once until a beat works again; the leases then run out on their own, and the deliveries
 * return to other processes as expired attempts.
 */
final class LeaseKeeper {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  /** One running delivery's hold on its lease. */
  static final class Held {
    final Delivery delivery;
    private volatile boolean lost;

    private Held(Delivery delivery) {
      this.delivery = delivery;
    }

    /** True once a beat found the lease taken by another claim. */
    boolean lost() {
      return lost;
    }
  }

  private final String pumpName;
  private final DataSource dataSource;
  private final Driver driver;
  private final Duration period;
  private final ThreadFactory threadFactory;
  private final PumpMetrics.LeaseMeters meters;
  private final Set<Held> held = ConcurrentHashMap.newKeySet();
  private ScheduledThreadPoolExecutor timer;
  private java.util.concurrent.ScheduledFuture<?> beats; // scheduled while anything is held
  private boolean closed;
  private boolean failing; // only on the timer thread

  LeaseKeeper(
      String pumpName,
      DataSource dataSource,
      Driver driver,
      Duration lease,
      ThreadFactory threadFactory,
      PumpMetrics metrics) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.driver = driver;
    this.period = lease.dividedBy(3);
    this.threadFactory = threadFactory;
    this.meters = metrics.leases();
  }

  /** Keeps {@code d}'s lease from now until {@link #release}. */
  Held hold(Delivery d) {
    Held h = new Held(d);
    held.add(h);
    start();
    return h;
  }

  /** Stops extending a delivery's lease (its outcome is being recorded, or it was abandoned). */
  void release(Held h) {
    held.remove(h);
  }

  private synchronized void start() {
    if (beats != null || closed) {
      return;
    }
    if (timer == null) {
      timer =
          new ScheduledThreadPoolExecutor(
              1,
              r -> {
                Thread t = threadFactory.newThread(r);
                t.setName("pump-" + pumpName + "-leases");
                t.setDaemon(true);
                return t;
              });
      // The thread ends a minute after the last beat and comes back with the next hold.
      timer.setKeepAliveTime(1, TimeUnit.MINUTES);
      timer.allowCoreThreadTimeOut(true);
    }
    long nanos = period.toNanos();
    beats = timer.scheduleWithFixedDelay(this::beatQuietly, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  /** Stops beating when nothing is held (under the lock {@link #start} takes). */
  private synchronized boolean idle() {
    if (!held.isEmpty()) {
      return false;
    }
    if (beats != null) {
      beats.cancel(false);
      beats = null;
    }
    return true;
  }

  private void beatQuietly() {
    try {
      beat();
    } catch (RuntimeException e) {
      // Never let an exception end the schedule: the next beat tries again.
      log.warn("{}: lease heartbeat failed: {}", pumpName, LogText.describe(e));
    }
  }

  /** One beat: every running delivery's lease extended in one transaction. */
  void beat() {
    if (idle()) {
      return;
    }
    List<Held> snapshot = new ArrayList<>(held);
    if (snapshot.isEmpty()) {
      return;
    }
    Map<Delivery, Held> byDelivery = new IdentityHashMap<>();
    List<Delivery> running = new ArrayList<>(snapshot.size());
    for (Held h : snapshot) {
      byDelivery.put(h.delivery, h);
      running.add(h.delivery);
    }
    List<Delivery> kept;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        kept = driver.extendLeases(Tx.of(c), running);
        c.commit();
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    } catch (SQLException | RuntimeException e) {
      if (!failing) {
        failing = true;
        log.warn(
            "{}: extending the leases of {} running deliveries failed; they expire unless a later"
                + " beat works (logged once until it does): {}",
            pumpName,
            running.size(),
            LogText.describe(e));
      }
      return;
    }
    if (failing) {
      failing = false;
      log.info("{}: lease heartbeats work again", pumpName);
    }
    meters.heartbeats().increment();
    meters.extended().increment(kept.size());
    Set<Delivery> still = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    still.addAll(kept);
    for (Delivery d : running) {
      Held h = byDelivery.get(d);
      // Released meanwhile: its outcome was recorded (and its lease cleared) during this beat.
      if (!still.contains(d) && held.contains(h) && !h.lost) {
        h.lost = true;
        log.warn(
            "{}: the lease of {} {} was taken by another claim while its handler runs; its"
                + " completion will be refused",
            pumpName,
            d.messageType(),
            d.messageId());
      }
    }
  }

  /** Stops the heartbeat (at the pump's close): leases still held then run out on their own. */
  synchronized void shutdown() {
    closed = true;
    if (timer != null) {
      timer.shutdownNow();
    }
  }
}
