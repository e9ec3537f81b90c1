package org.messagepump.spring.boot.internal;

import java.sql.Connection;

/**
 * A resource bound to Spring for the duration of one delivery's handler, beside the delivery's
 * connection: the JPA {@code EntityManager} that runs on that connection ({@link
 * DeliveryEntityManagers}). This interface names no JPA type, so that {@link SpringBinding} and the
 * auto-configuration load without JPA on the class path.
 */
public interface DeliveryBinding {

  /** Binds nothing. */
  DeliveryBinding NONE = connection -> Bound.NONE;

  /** Binds for the handler about to run on {@code deliveryConnection} (the pump's guarded one). */
  Bound bind(Connection deliveryConnection);

  /** One delivery's binding. */
  interface Bound {

    /** Nothing bound: never rollback-only, nothing to flush or release. */
    Bound NONE =
        new Bound() {
          @Override
          public boolean isRollbackOnly() {
            return false;
          }

          @Override
          public void flush() {}

          @Override
          public void release(boolean handled) {}
        };

    /** True when a participating {@code @Transactional} method failed and marked it. */
    boolean isRollbackOnly();

    /**
     * The handler returned normally: writes its pending changes to the delivery's connection. A
     * failure here fails the delivery (its writes roll back to the delivery's savepoint).
     */
    void flush();

    /**
     * Unbinds and releases it; when the delivery failed ({@code handled} false), pending changes
     * are discarded.
     */
    void release(boolean handled);
  }
}
