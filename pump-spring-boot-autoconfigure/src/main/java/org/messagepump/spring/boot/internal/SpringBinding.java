package org.messagepump.spring.boot.internal;

import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;

/**
 * The pump interceptor that runs each delivery's handler with the delivery's transaction bound to
 * Spring, for the duration of the handler only:
 *
 * <ul>
 *   <li>The connection the pump gives the handler (which sets the delivery's savepoint at its first
 *       statement and refuses commit, rollback and close) is bound with {@link
 *       TransactionSynchronizationManager#bindResource} as the transactional resource of the pump's
 *       DataSource, marked active. JdbcTemplate gets it from {@code DataSourceUtils}; a
 *       {@code @Transactional} method (REQUIRED, MANDATORY, SUPPORTS) participates in it and so
 *       never commits or closes it; NESTED sets a savepoint inside the delivery's.
 *   <li>Transaction synchronization is active while the handler runs. When it returns normally,
 *       registered synchronizations get {@code beforeCommit} and {@code beforeCompletion}; then
 *       {@code afterCompletion} with {@code STATUS_UNKNOWN} (the pump commits the batch later, so
 *       {@code afterCommit} never runs here), or with {@code STATUS_ROLLED_BACK} after a failure (a
 *       handler timeout included), whose writes the pump rolls back to the delivery's savepoint.
 *   <li>A participating method that failed marks the transaction rollback-only; if the handler
 *       caught that and returned normally, the delivery fails (as {@link
 *       UnexpectedRollbackException}) instead of committing half of what it meant to do.
 *   <li>With JPA, each Hibernate EntityManagerFactory on that DataSource gets an EntityManager on
 *       the delivery's connection, bound as a transaction in progress ({@link
 *       DeliveryEntityManagers}): flushed when the handler returns normally, before the pump
 *       records the outcome; discarded after a failure.
 * </ul>
 *
 * <p>In lease mode ({@link org.messagepump.core.spi.Driver#lease()}) the pump gives the handler no
 * transaction, and nothing is bound: the handler's {@code @Transactional} methods and JdbcTemplate
 * calls run in Spring's ordinary transactions, each committed on its own.
 *
 * <p>Spring's own mechanisms, not a copy: JdbcTemplate, {@code DataSourceTransactionManager} and
 * {@code TransactionAwareDataSourceProxy} all find the delivery's connection through the bound
 * holder.
 */
public final class SpringBinding implements HandlerInterceptor {

  private final DataSource dataSource;
  private final String transactionName;
  private final DeliveryBinding also;

  /** Binds the deliveries of the pump {@code pumpName} as {@code dataSource}'s transaction. */
  public SpringBinding(DataSource dataSource, String pumpName) {
    this(dataSource, pumpName, null);
  }

  /**
   * As above, and binds {@code also} (the JPA EntityManagers on that DataSource; null for none) for
   * each handler's duration.
   */
  public SpringBinding(DataSource dataSource, String pumpName, DeliveryBinding also) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.transactionName = "messagepump:" + pumpName;
    this.also = also != null ? also : DeliveryBinding.NONE;
  }

  @Override
  public Outcome intercept(Handling handling) {
    if (TransactionSynchronizationManager.hasResource(dataSource)
        || TransactionSynchronizationManager.isSynchronizationActive()) {
      // A pump's worker thread never carries a transaction of its own; a leftover means a bug.
      throw new IllegalStateException(
          transactionName + ": a Spring transaction is already bound to this worker thread");
    }
    Tx tx = handling.tx();
    if (tx == null) {
      // Lease mode: no delivery transaction to bind. The handler's @Transactional methods and
      // JdbcTemplate open Spring's ordinary transactions on connections of the pool.
      return handling.proceed();
    }
    DeliveryConnectionHolder holder = new DeliveryConnectionHolder(tx.connection());
    TransactionSynchronizationManager.bindResource(dataSource, holder);
    TransactionSynchronizationManager.initSynchronization();
    TransactionSynchronizationManager.setActualTransactionActive(true);
    TransactionSynchronizationManager.setCurrentTransactionName(transactionName);
    boolean handled = false;
    DeliveryBinding.Bound bound = null;
    try {
      bound = also.bind(tx.connection());
      Outcome outcome = handling.proceed();
      if (outcome instanceof Outcome.Handled
          && (holder.isRollbackOnly() || bound.isRollbackOnly())) {
        outcome =
            Outcome.failed(
                new UnexpectedRollbackException(
                    "the handler returned normally, but a @Transactional method it called failed"
                        + " and marked the delivery's transaction rollback-only"));
      }
      if (outcome instanceof Outcome.Handled) {
        TransactionSynchronizationUtils.triggerBeforeCommit(false);
        // The EntityManager's pending changes reach the delivery's connection now, before the
        // pump records the outcome; a flush that fails fails the delivery.
        bound.flush();
        handled = true;
      }
      return outcome;
    } finally {
      complete(handled, bound);
    }
  }

  private void complete(boolean handled, DeliveryBinding.Bound bound) {
    List<TransactionSynchronization> synchronizations =
        TransactionSynchronizationManager.getSynchronizations();
    try {
      TransactionSynchronizationUtils.triggerBeforeCompletion();
    } finally {
      TransactionSynchronizationManager.clear();
      TransactionSynchronizationManager.unbindResource(dataSource);
      try {
        if (bound != null) {
          bound.release(handled);
        }
      } finally {
        TransactionSynchronizationUtils.invokeAfterCompletion(
            synchronizations,
            handled
                ? TransactionSynchronization.STATUS_UNKNOWN
                : TransactionSynchronization.STATUS_ROLLED_BACK);
      }
    }
  }
}
