package org.messagepump.balancer;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.LeaseQueries;
import org.messagepump.balancer.internal.Schema;
import org.messagepump.balancer.internal.StoreQueries;
import org.messagepump.core.PumpException;
import org.messagepump.core.Transactions;

/**
 * Entry points that are not tied to one partition group: the schema migration, figures across every
 * group, and lease operations by message id (ids are unique across groups), as an operator's CLI
 * needs them.
 */
public final class Balancer {

  /** The Flyway history table of the {@code balancer} schema. */
  public static final String HISTORY_TABLE = "balancer_flyway_history";

  private Balancer() {}

  /** Creates or upgrades the {@code balancer} schema (Flyway, own history table). */
  public static void migrate(DataSource dataSource) {
    Objects.requireNonNull(dataSource, "dataSource");
    try {
      Flyway.configure()
          .dataSource(dataSource)
          .schemas(Schema.SCHEMA)
          .table(HISTORY_TABLE)
          .locations("classpath:db/balancer")
          .load()
          .migrate();
    } catch (FlywayException e) {
      throw new PumpException("migrating the balancer schema failed: " + e.getMessage(), e);
    }
  }

  /** Figures of every partition group that has keys or messages, sorted by group name. */
  public static List<GroupStats> groups(DataSource dataSource) {
    return Transactions.inNew(
        dataSource, "reading group stats", tx -> StoreQueries.groups(tx.dsl(), null));
  }

  /** Confirms a handed-off message by id and token, whatever its group. */
  public static LeaseResult confirm(DataSource dataSource, long messageId, UUID token) {
    Objects.requireNonNull(token, "token");
    return Transactions.inNew(
            dataSource, "confirming a message", tx -> LeaseQueries.confirm(tx, messageId, token))
        .result();
  }

  /** Extends a hand-off lease by id and token, whatever its group. */
  public static LeaseResult extendLease(
      DataSource dataSource, long messageId, UUID token, Duration duration) {
    Objects.requireNonNull(token, "token");
    checkPositive("duration", duration);
    return Transactions.inNew(
            dataSource,
            "extending a lease",
            tx -> LeaseQueries.extend(tx.dsl(), messageId, token, duration))
        .result();
  }

  /** Requeues a handed-off message by id and token (properties replaced unless null). */
  public static LeaseResult requeue(
      DataSource dataSource, long messageId, UUID token, String propertiesJson) {
    Objects.requireNonNull(token, "token");
    String props = propertiesJson == null ? null : Json.object(propertiesJson, "properties");
    return Transactions.inNew(
            dataSource,
            "requeueing a message",
            tx -> LeaseQueries.requeue(tx.dsl(), messageId, token, props))
        .result();
  }

  static String checkName(String what, String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(what + " must not be null or blank");
    }
    if (value.length() > MessageBalancer.MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          what + " is longer than " + MessageBalancer.MAX_NAME_LENGTH + " characters");
    }
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(what + " must not contain NUL characters");
    }
    return value;
  }

  static Duration checkPositive(String what, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive: " + d);
    }
    return d;
  }
}
