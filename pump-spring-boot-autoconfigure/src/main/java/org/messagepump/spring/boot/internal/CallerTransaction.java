package org.messagepump.spring.boot.internal;

import java.sql.Connection;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.messagepump.core.Tx;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs a write in the caller's Spring transaction on a DataSource when there is one, through {@link
 * DataSourceUtils} (the connection Spring bound for that DataSource: a {@code @Transactional}
 * method's, or a delivery's inside a handler), and in a transaction of its own otherwise.
 */
public final class CallerTransaction {

  private CallerTransaction() {}

  /**
   * {@code joined} with the caller's transaction when a Spring transaction holds a connection of
   * {@code dataSource}; otherwise {@code alone}, which commits by itself.
   */
  public static <T> T run(DataSource dataSource, Function<Tx, T> joined, Supplier<T> alone) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || TransactionSynchronizationManager.getResource(dataSource) == null) {
      return alone.get();
    }
    Connection c = DataSourceUtils.getConnection(dataSource);
    try {
      return joined.apply(Tx.of(c));
    } finally {
      DataSourceUtils.releaseConnection(c, dataSource);
    }
  }
}
