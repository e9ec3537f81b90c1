package org.messagepump.balancer;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;

/**
 * Pumps and testers for the tests: every delivery goes through the pump's real runner, either
 * threaded ({@link MessagePump}) or synchronously ({@link PumpTester}).
 */
final class Pumps {

  /** A backoff so short that a postponed key is due again at the next poll. */
  static final Duration TINY = Duration.ofNanos(1_000);

  private Pumps() {}

  /** A pump over {@code driver} with quick polling. */
  static MessagePump pump(DataSource ds, String name, Driver driver, int workers) {
    return pump(ds, name, driver, workers, 1);
  }

  /** A pump over {@code driver} with quick polling and {@code batchSize} deliveries per tx. */
  static MessagePump pump(DataSource ds, String name, Driver driver, int workers, int batchSize) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(workers)
        .batchSize(batchSize)
        .pollInterval(Duration.ofMillis(50))
        .retryPolicy(RetryPolicy.retryForever()) // the tests' models never park a key
        .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(5))
        .build();
  }

  /** A tester of one delivery per poll whose postponed keys are due again at once. */
  static PumpTester tester(DataSource ds, Driver driver) {
    return PumpTester.builder(ds, driver)
        .batchSize(1)
        .retryPolicy(RetryPolicy.retryForever()) // the tests' models never park a key
        .backoff(TINY, TINY)
        .build();
  }

  /**
   * One poll of a tester of batch size 1: the id of the delivery it handled, or -1 when nothing was
   * due. Fails unless the delivery was {@link PumpTester.Kind#HANDLED}.
   */
  static long step(PumpTester tester) {
    List<PumpTester.Result> r = tester.runOnce();
    if (r.isEmpty()) {
      return -1;
    }
    if (r.size() != 1 || r.get(0).kind() != PumpTester.Kind.HANDLED) {
      throw new AssertionError("expected one handled delivery, got " + r);
    }
    return Long.parseLong(r.get(0).messageId());
  }

  /** The partition key of a delivery, from its header. */
  static String key(PumpTester.Result r) {
    return r.delivery().envelope().headers().get(BalancerDriver.PARTITION_KEY_HEADER);
  }

  /**
   * The driver, with {@code afterCompleted} run once its {@link Driver#completed} bookkeeping is
   * done and before the pump commits: a test holds the transaction open there.
   */
  static Driver afterCompleted(Driver driver, Runnable afterCompleted) {
    return new ForwardingDriver(driver) {
      @Override
      public void completed(Tx tx, List<Delivery> handled) throws SQLException {
        super.completed(tx, handled);
        afterCompleted.run();
      }
    };
  }
}
