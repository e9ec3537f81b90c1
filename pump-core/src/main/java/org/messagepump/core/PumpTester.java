package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import javax.sql.DataSource;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;

/**
 * Runs a driver through the pump's real poll path — acquire, handle in lazy savepoints, record
 * Busy/Failed/parking, the driver's {@code completed}, commit, and the pump's rules for failed
 * commits — synchronously on the calling thread, and says what became of each delivery. For tests
 * of drivers and handlers: no threads, no timing, the same code the {@link MessagePump}'s workers
 * run.
 *
 * <pre>{@code
 * PumpTester tester = PumpTester.builder(dataSource, queue.driver(handlers)).maxFailures(3).build();
 * List<PumpTester.Result> r = tester.runOnce();        // one poll: one transaction
 * assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.HANDLED);
 * tester.drainUntilIdle();                               // poll until nothing is due
 * }</pre>
 *
 * <p>Postponed deliveries are due again only after their backoff by the database clock; set a small
 * {@code backoff} to see them again in the same test.
 */
public final class PumpTester {

  /** What became of one delivery. */
  public enum Kind {
    /** Handled: its bookkeeping committed with the handler's writes. */
    HANDLED,
    /** Busy: postponed by the backoff base, no failure counted. */
    BUSY,
    /** Failed: failure counted, postponed with backoff. */
    FAILED,
    /**
     * Parked: failed for the last time its {@link RetryPolicy} allows, or with a failure it does
     * not retry.
     */
    PARKED,
    /** Its transaction was rolled back (lost connection, failed commit); it comes back. */
    ABANDONED
  }

  /**
   * One delivery's fate.
   *
   * @param delivery the delivery as acquired
   * @param kind what became of it
   * @param cause the failure, for FAILED, PARKED and (when known) ABANDONED; else null
   */
  public record Result(Delivery delivery, Kind kind, Throwable cause) {

    /** The delivery's message id. */
    public String messageId() {
      return delivery.messageId();
    }
  }

  private final DataSource dataSource;
  private final Poller poller;

  private PumpTester(Builder b) {
    PumpMetrics metrics = new PumpMetrics(null, "tester", b.driver.name());
    RetryPolicies policies = b.retry.policies();
    HandlerTimeouts timeouts =
        b.handlerTimeout == null && b.typeTimeouts.isEmpty()
            ? HandlerTimeouts.NONE
            : new HandlerTimeouts(
                "tester", b.handlerTimeout, b.typeTimeouts, Executors.defaultThreadFactory());
    DeliveryRunner runner =
        new DeliveryRunner("tester", b.dataSource, b.driver, policies, metrics, timeouts);
    this.dataSource = b.dataSource;
    LeaseRunner leases =
        b.driver
            .lease()
            .map(
                lease ->
                    new LeaseRunner(
                        "tester",
                        b.dataSource,
                        b.driver,
                        runner,
                        metrics,
                        timeouts,
                        new LeaseKeeper(
                            "tester",
                            b.dataSource,
                            b.driver,
                            lease,
                            Executors.defaultThreadFactory(),
                            metrics)))
            .orElse(null);
    this.poller = new Poller(b.driver, runner, b.batchSize, metrics, leases);
  }

  /** A builder for a tester of {@code driver} on {@code dataSource}. */
  public static Builder builder(DataSource dataSource, Driver driver) {
    return new Builder(
        Objects.requireNonNull(dataSource, "dataSource"), Objects.requireNonNull(driver, "driver"));
  }

  /**
   * One poll in one transaction: the deliveries acquired and what became of each, in order; empty
   * when nothing was due. A database error while acquiring is thrown as a {@link
   * DatabaseException}.
   */
  public List<Result> runOnce() {
    List<DeliveryRunner.Recorded> seen = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        poller.poll(c, seen);
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    } catch (SQLException e) {
      throw new DatabaseException("polling", e);
    }
    List<Result> out = new ArrayList<>(seen.size());
    for (DeliveryRunner.Recorded r : seen) {
      out.add(new Result(r.delivery(), Kind.valueOf(r.result().name()), r.cause()));
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * Polls until a poll finds nothing due (at most {@code 10,000} polls) and returns every result in
   * order.
   */
  public List<Result> drainUntilIdle() {
    List<Result> all = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      List<Result> r = runOnce();
      if (r.isEmpty()) {
        return all;
      }
      all.addAll(r);
    }
    throw new IllegalStateException("still not idle after 10,000 polls: a delivery loops");
  }

  /** Builds a {@link PumpTester}; options as on {@link MessagePump.Builder}. */
  public static final class Builder {
    private final DataSource dataSource;
    private final Driver driver;
    private int batchSize = MessagePump.DEFAULT_BATCH_SIZE;
    // The retry options as a pump's builder takes them: the same checks, the same policies.
    private final MessagePump.Builder retry;
    private Duration handlerTimeout;
    private final Map<String, Duration> typeTimeouts = new HashMap<>();

    private Builder(DataSource dataSource, Driver driver) {
      this.dataSource = dataSource;
      this.driver = driver;
      this.retry = MessagePump.builder(dataSource);
    }

    /** Deliveries per poll, 1 to {@value MessagePump#MAX_BATCH_SIZE}. */
    public Builder batchSize(int batchSize) {
      MessagePump.builder(dataSource).batchSize(batchSize); // the pump's own check
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Failures after which a delivery is parked; at least 1, as {@link
     * MessagePump.Builder#maxFailures(int)} (default {@value MessagePump#DEFAULT_MAX_FAILURES}).
     */
    public Builder maxFailures(int maxFailures) {
      retry.maxFailures(maxFailures);
      return this;
    }

    /** Backoff base and cap (the Busy delay and the bounds of the Failed delay). */
    public Builder backoff(Duration base, Duration cap) {
      retry.backoff(base, cap);
      return this;
    }

    /** The retry policy of every message type, as {@link MessagePump.Builder#retryPolicy}. */
    public Builder retryPolicy(RetryPolicy policy) {
      retry.retryPolicy(policy);
      return this;
    }

    /**
     * The retry policy of one message type, as {@link MessagePump.Builder#retryPolicy(String,
     * RetryPolicy)}.
     */
    public Builder retryPolicy(String messageType, RetryPolicy policy) {
      retry.retryPolicy(messageType, policy);
      return this;
    }

    /**
     * The handler timeout, as {@link MessagePump.Builder#handlerTimeout(Duration)}: the handler
     * runs on the thread that calls {@link #runOnce()}, which the timeout interrupts, and its
     * statement is cancelled. The delivery's result is then {@link Kind#FAILED} (or {@link
     * Kind#PARKED} at {@code maxFailures}) with a {@link HandlerTimeoutException} as its cause.
     */
    public Builder handlerTimeout(Duration timeout) {
      MessagePump.builder(dataSource).handlerTimeout(timeout);
      this.handlerTimeout = timeout;
      return this;
    }

    /** The handler timeout of one message type, overriding {@link #handlerTimeout(Duration)}. */
    public Builder handlerTimeout(String messageType, Duration timeout) {
      MessagePump.builder(dataSource).handlerTimeout(messageType, timeout);
      typeTimeouts.put(messageType, timeout);
      return this;
    }

    /** The tester; rejects a backoff cap below its base. */
    public PumpTester build() {
      retry.policies();
      return new PumpTester(this);
    }
  }
}
