package org.messagepump.balancer;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.messagepump.balancer.internal.GroupPauses;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.LeaseQueries;
import org.messagepump.balancer.internal.Schema;
import org.messagepump.balancer.internal.StoreQueries;
import org.messagepump.core.Inputs;
import org.messagepump.core.Limits;
import org.messagepump.core.Migrations;
import org.messagepump.core.Transactions;

/**
 * Entry points that are not tied to one partition group: the schema migration, the grants of a
 * DML-only role, figures across every group, and lease operations by message id (ids are unique
 * across the groups of a schema), as an operator's CLI needs them. Each has an overload taking the
 * schema; without it the default schema {@value #DEFAULT_SCHEMA} is used.
 */
public final class Balancer {

  /** The Flyway history table, in the balancer's schema. */
  public static final String HISTORY_TABLE = "balancer_flyway_history";

  /** The default schema. */
  public static final String DEFAULT_SCHEMA = Schema.SCHEMA;

  /** Longest role name of {@link #grantStatements}: PostgreSQL identifiers have 63 bytes. */
  private static final int MAX_ROLE_BYTES = 63;

  private Balancer() {}

  /** Creates or upgrades the default {@code balancer} schema (Flyway, own history table). */
  public static int migrate(DataSource dataSource) {
    return migrate(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * Creates or upgrades the balancer's tables in {@code schema} (created if missing), with the
   * Flyway history table {@value #HISTORY_TABLE} in that schema, so each schema migrates on its
   * own.
   *
   * @param schema lower-case letters, digits and {@code _}, not starting with a digit, at most
   *     {@value Inputs#MAX_SCHEMA_LENGTH} characters
   * @throws IllegalArgumentException for a schema name outside that rule
   */
  public static int migrate(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    Schema.checkSchema("schema", schema);
    // The one migration path of every driver: Flyway into the schema with its own history
    // table, serialized across processes by an advisory lock (core's Migrations).
    return Migrations.migrate(
        dataSource, schema, HISTORY_TABLE, "classpath:db/balancer", java.util.Map.of());
  }

  /**
   * The statements that give {@code role} what the balancer needs at run time, and nothing more:
   * USAGE on {@code schema}; SELECT, INSERT, UPDATE and DELETE on its tables; USAGE and SELECT on
   * its {@code rotation} sequence (the messages' identity column needs no grant). Identifiers are
   * quoted. Run them as the schema's owner after {@link #migrate(DataSource, String)}; the role
   * then runs producers, pumps and every operation of this module, but cannot change the schema.
   *
   * @throws IllegalArgumentException for a bad schema name, or a role that is empty, holds NUL or
   *     is longer than 63 bytes
   */
  public static List<String> grantStatements(String schema, String role) {
    Schema.checkSchema("schema", schema);
    Inputs.text("role", Inputs.key("role", role), MAX_ROLE_BYTES);
    DSLContext render = DSL.using(SQLDialect.POSTGRES);
    String r = render.render(DSL.name(role));
    return List.of(
        "GRANT USAGE ON SCHEMA " + render.render(DSL.name(schema)) + " TO " + r,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "
            + render.render(DSL.name(schema, "messages"))
            + ", "
            + render.render(DSL.name(schema, "partitions"))
            + ", "
            + render.render(DSL.name(schema, "paused_groups"))
            + " TO "
            + r,
        "GRANT USAGE, SELECT ON SEQUENCE "
            + render.render(DSL.name(schema, "rotation"))
            + " TO "
            + r);
  }

  /** Figures of every partition group that has keys or messages, sorted by group name. */
  public static List<GroupStats> groups(DataSource dataSource) {
    return groups(dataSource, DEFAULT_SCHEMA);
  }

  /** As {@link #groups(DataSource)}, in {@code schema}. */
  public static List<GroupStats> groups(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    Schema.Ctx ctx = Schema.Ctx.of(schema);
    return FromInternal.groupStatsList(
        Transactions.inNew(
            dataSource, "reading group stats", tx -> StoreQueries.groups(ctx.dsl(tx), null)));
  }

  /** The groups paused cluster-wide in the default schema ({@link MessageBalancer#pauseGroup}). */
  public static List<PausedGroup> pausedGroups(DataSource dataSource) {
    return pausedGroups(dataSource, DEFAULT_SCHEMA);
  }

  /** As {@link #pausedGroups(DataSource)}, in {@code schema}; by group name. */
  public static List<PausedGroup> pausedGroups(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    Schema.Ctx ctx = Schema.Ctx.of(schema);
    return Transactions.inNew(
            dataSource, "listing paused groups", tx -> GroupPauses.list(ctx.dsl(tx)))
        .stream()
        .map(r -> new PausedGroup(r.group(), r.pausedAt(), r.reason()))
        .toList();
  }

  /** Confirms a handed-off message by id and token, whatever its group. */
  public static LeaseResult confirm(DataSource dataSource, long messageId, UUID token) {
    return confirm(dataSource, DEFAULT_SCHEMA, messageId, token);
  }

  /** As {@link #confirm(DataSource, long, UUID)}, in {@code schema}. */
  public static LeaseResult confirm(
      DataSource dataSource, String schema, long messageId, UUID token) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(token, "token");
    Schema.Ctx ctx = Schema.Ctx.of(schema);
    return FromInternal.leaseResult(
        Transactions.inNew(
                dataSource,
                "confirming a message",
                tx -> LeaseQueries.confirm(tx, ctx, messageId, token))
            .result());
  }

  /** Extends a hand-off lease by id and token, whatever its group. */
  public static LeaseResult extendLease(
      DataSource dataSource, long messageId, UUID token, Duration duration) {
    return extendLease(dataSource, DEFAULT_SCHEMA, messageId, token, duration);
  }

  /** As {@link #extendLease(DataSource, long, UUID, Duration)}, in {@code schema}. */
  public static LeaseResult extendLease(
      DataSource dataSource, String schema, long messageId, UUID token, Duration duration) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(token, "token");
    checkPositive("duration", duration);
    Schema.Ctx ctx = Schema.Ctx.of(schema);
    return FromInternal.leaseResult(
        Transactions.inNew(
                dataSource,
                "extending a lease",
                tx -> LeaseQueries.extend(ctx.dsl(tx), messageId, token, duration))
            .result());
  }

  /**
   * Requeues a handed-off message by id and token (properties replaced unless null, checked against
   * {@link Limits#defaults()}).
   */
  public static LeaseResult requeue(
      DataSource dataSource, long messageId, UUID token, String propertiesJson) {
    return requeue(dataSource, DEFAULT_SCHEMA, messageId, token, propertiesJson);
  }

  /** As {@link #requeue(DataSource, long, UUID, String)}, in {@code schema}. */
  public static LeaseResult requeue(
      DataSource dataSource, String schema, long messageId, UUID token, String propertiesJson) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(token, "token");
    String props =
        propertiesJson == null
            ? null
            : Json.object(propertiesJson, "properties", Limits.defaults());
    Schema.Ctx ctx = Schema.Ctx.of(schema);
    return FromInternal.leaseResult(
        Transactions.inNew(
                dataSource,
                "requeueing a message",
                tx -> LeaseQueries.requeue(ctx.dsl(tx), messageId, token, props))
            .result());
  }

  /**
   * An identifier (group, partition key, lease owner): as {@link Inputs#key} (not null, no NUL, at
   * most {@link Limits#MAX_KEY_BYTES} UTF-8 bytes), and not blank.
   */
  static String checkName(String what, String value) {
    Inputs.key(what, value);
    if (value.isBlank()) {
      throw new IllegalArgumentException(what + " must not be blank");
    }
    return value;
  }

  /** A positive duration of at most {@link Limits#MAX_DELAY}. */
  static Duration checkPositive(String what, Duration d) {
    Inputs.delay(what, d);
    if (d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive: " + d);
    }
    return d;
  }
}
