package org.messagepump.spring.boot.internal;

import java.sql.Connection;
import org.springframework.jdbc.datasource.ConnectionHolder;

/**
 * The delivery's connection as Spring's transactional resource for the pump's DataSource, marked as
 * an active transaction: Spring's transaction managers then see an existing transaction, so {@code
 * REQUIRED} and {@code MANDATORY} participate in it (they never commit or close it) and {@code
 * DataSourceUtils} (JdbcTemplate, Spring Data JDBC) hands out this very connection.
 */
final class DeliveryConnectionHolder extends ConnectionHolder {

  DeliveryConnectionHolder(Connection connection) {
    super(connection, true);
    setTransactionActive(true);
    setSynchronizedWithTransaction(true);
  }
}
