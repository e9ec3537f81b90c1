package org.messagepump.spring.boot.internal;

import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.PersistenceException;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.hibernate.Transaction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.orm.jpa.EntityManagerFactoryInfo;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * JPA inside a handler: for each Hibernate {@link EntityManagerFactory} on the pump's DataSource, a
 * session opened on the delivery's connection ({@code SessionFactory.withOptions().connection(..)})
 * is bound as a {@link DeliveryEntityManagerHolder} for the handler's duration. Spring Data JPA
 * repositories, {@code @PersistenceContext} EntityManagers and {@code @Transactional} methods under
 * {@code JpaTransactionManager} then use it and participate in the delivery's transaction.
 *
 * <p>The session's own (resource-local) transaction is begun at once, so that Hibernate flushes
 * (explicitly, and automatically before queries), and is ended by the binding only, through a
 * {@link ParticipantConnection} whose commit and rollback are no-ops: after a handler that returned
 * normally its commit flushes the pending changes onto the delivery's connection, before the pump
 * records the outcome; after a failure its rollback discards what was not flushed (what was flushed
 * rolls back with the delivery's savepoint). The session is closed after either.
 */
public final class DeliveryEntityManagers implements DeliveryBinding {

  private static final Logger log = LoggerFactory.getLogger(DeliveryEntityManagers.class);

  private final List<EntityManagerFactory> factories;

  private DeliveryEntityManagers(List<EntityManagerFactory> factories) {
    this.factories = List.copyOf(factories);
  }

  /**
   * The binding for those of {@code candidates} that run on {@code dataSource} and are Hibernate's;
   * the others are logged at startup (their EntityManagers keep their own transactions).
   */
  public static DeliveryEntityManagers of(
      List<EntityManagerFactory> candidates, DataSource dataSource) {
    List<EntityManagerFactory> bound = new ArrayList<>();
    for (EntityManagerFactory emf : candidates) {
      DataSource its = emf instanceof EntityManagerFactoryInfo info ? info.getDataSource() : null;
      if (!Objects.equals(its, dataSource)) {
        log.info(
            "messagepump: EntityManagerFactory {} does not run on the pump's DataSource; its"
                + " EntityManagers do not join deliveries",
            emf);
        continue;
      }
      try {
        emf.unwrap(SessionFactory.class);
      } catch (PersistenceException | IllegalArgumentException notHibernate) {
        log.warn(
            "messagepump: EntityManagerFactory {} is not Hibernate's; its EntityManagers do not"
                + " join deliveries",
            emf);
        continue;
      }
      bound.add(emf);
    }
    return new DeliveryEntityManagers(bound);
  }

  /** The factories whose EntityManagers join deliveries. */
  public List<EntityManagerFactory> factories() {
    return factories;
  }

  @Override
  public Bound bind(Connection deliveryConnection) {
    if (factories.isEmpty()) {
      return Bound.NONE;
    }
    List<Opened> opened = new ArrayList<>(factories.size());
    try {
      for (EntityManagerFactory emf : factories) {
        opened.add(open(emf, deliveryConnection));
      }
    } catch (RuntimeException e) {
      for (Opened o : opened) {
        o.release(false);
      }
      throw e;
    }
    return new Bound() {
      @Override
      public boolean isRollbackOnly() {
        return opened.stream().anyMatch(Opened::isRollbackOnly);
      }

      @Override
      public void flush() {
        for (Opened o : opened) {
          o.commit();
        }
      }

      @Override
      public void release(boolean handled) {
        RuntimeException first = null;
        for (Opened o : opened) {
          try {
            o.release(handled);
          } catch (RuntimeException e) {
            if (first == null) {
              first = e;
            } else {
              first.addSuppressed(e);
            }
          }
        }
        if (first != null) {
          throw first;
        }
      }
    };
  }

  private static Opened open(EntityManagerFactory emf, Connection deliveryConnection) {
    ParticipantConnection connection = new ParticipantConnection(deliveryConnection);
    Session session =
        emf.unwrap(SessionFactory.class)
            .withOptions()
            .connection(connection.connection())
            .openSession();
    try {
      connection.owned(() -> session.getTransaction().begin());
      TransactionSynchronizationManager.bindResource(emf, new DeliveryEntityManagerHolder(session));
    } catch (RuntimeException e) {
      session.close();
      throw e;
    }
    return new Opened(emf, session, connection);
  }

  /** One factory's session for one delivery. */
  private record Opened(
      EntityManagerFactory emf, Session session, ParticipantConnection connection) {

    boolean isRollbackOnly() {
      Transaction tx = session.getTransaction();
      return tx.isActive() && tx.getRollbackOnly();
    }

    /** Hibernate's commit: flushes (as its flush mode says), then a no-op physical commit. */
    void commit() {
      connection.owned(() -> session.getTransaction().commit());
    }

    void release(boolean handled) {
      try {
        TransactionSynchronizationManager.unbindResourceIfPossible(emf);
      } finally {
        try {
          Transaction tx = session.getTransaction();
          if (tx.isActive()) {
            // Not committed: the handler failed (or the flush did); discard what is pending.
            connection.owned(tx::rollback);
          }
          if (!handled) {
            session.clear();
          }
        } finally {
          session.close();
        }
      }
    }
  }
}
