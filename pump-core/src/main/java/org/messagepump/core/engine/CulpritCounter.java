package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts the failure of the delivery at fault of an abandoned batch in a new transaction, so that a
 * delivery whose outcome cannot be recorded, or whose commit fails, still parks at its policy's
 * attempts instead of coming back for ever. Its row lock was released with the rollback: the driver
 * locks it again ({@link Driver#reacquire}) and returns its current state, or nothing when another
 * worker has taken it meanwhile (then that worker's attempt decides).
 */
final class CulpritCounter {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  private final String pumpName;
  private final DataSource dataSource;
  private final Driver driver;
  private final OutcomeRecorder recorder;

  CulpritCounter(String pumpName, DataSource dataSource, Driver driver, OutcomeRecorder recorder) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.driver = driver;
    this.recorder = recorder;
  }

  /** Counts one failure of {@code stale} (as acquired by the abandoned batch); never throws. */
  void count(Delivery stale, Throwable cause) {
    LogText.putMdc(pumpName, stale);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      try {
        Optional<Delivery> again = driver.reacquire(tx, stale);
        if (again.isEmpty()) {
          c.commit();
          log.warn(
              "{}: delivery failed and its batch was abandoned; {} cannot count the failure"
                  + " after a rollback (or another worker has it), so it returns uncounted: {}",
              pumpName,
              driver.name(),
              LogText.describe(cause));
          return;
        }
        Delivery d = again.get();
        int failures = d.failures() + 1;
        RetryPolicy policy = recorder.policy(d);
        if (policy.parks(failures, cause)) {
          try {
            recorder.park(tx, d, failures, cause);
          } catch (SQLException | RuntimeException e) {
            Transactions.rollbackQuietly(c);
            recorder.parkPlainly(tx, d, failures, e);
          }
        } else {
          log.warn(
              "{}: delivery failed (attempt {}) and its batch was abandoned: {}",
              pumpName,
              failures,
              LogText.describe(cause));
          driver.postpone(tx, d, failures, policy.delay(failures, ThreadLocalRandom.current()));
        }
        c.commit();
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    } catch (SQLException | RuntimeException e) {
      recorder.noteRecordingFailure(e);
    } finally {
      LogText.clearMdc(stale);
    }
  }
}
