package org.messagepump.spring.boot.internal;

import jakarta.persistence.EntityManager;
import org.springframework.orm.jpa.EntityManagerHolder;

/**
 * The delivery's EntityManager as Spring's transactional resource for its EntityManagerFactory,
 * marked as a transaction in progress: {@code JpaTransactionManager} then sees an existing
 * transaction, so {@code REQUIRED} and {@code MANDATORY} methods (Spring Data JPA repositories
 * among them) participate in it, and the shared EntityManager hands out this one.
 */
final class DeliveryEntityManagerHolder extends EntityManagerHolder {

  DeliveryEntityManagerHolder(EntityManager entityManager) {
    super(entityManager);
    setTransactionActive(true);
    setSynchronizedWithTransaction(true);
  }
}
