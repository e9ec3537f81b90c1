package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.DELIVER_AT;
import static org.messagepump.commands.internal.CommandTables.FAILURES;
import static org.messagepump.commands.internal.CommandTables.LEASED_BY;
import static org.messagepump.commands.internal.CommandTables.LEASE_TOKEN;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.LeaseLostException;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.StatementCache;

/**
 * The SQL of lease mode (docs/leases.md): claim with a lease, extend, and the fenced completion,
 * postponement and parking. A leased command stays in the pending table; while leased its {@code
 * deliver_at} is the lease's expiry, so an expired lease is due again like any other command, found
 * by the same index. Every statement matches the claim's fencing token ({@code lease_token}, from a
 * sequence: never issued twice); a statement that finds no row with it changes nothing and throws
 * {@link LeaseLostException}.
 *
 * <p>The claim, the extension, the postponement and the fenced delete of a completion or parking
 * are built by jOOQ, rendered once per schema and shape through a {@link StatementCache} ({@link
 * Statements}) and run through JDBC with every value bound.
 */
public final class LeaseQueries {

  private LeaseQueries() {}

  private static final Param<String> HOLDER =
      StatementCache.parameter("holder", LEASED_BY.getDataType());
  private static final Param<Double> SECONDS =
      StatementCache.parameter("seconds", SQLDataType.DOUBLE);
  private static final Param<UUID[]> IDS =
      StatementCache.parameter("ids", SQLDataType.UUID.array());
  private static final Param<Long[]> TOKENS =
      StatementCache.parameter("tokens", SQLDataType.BIGINT.array());

  /** The claim shape: one type or several, and the batch size. */
  private record Shape(boolean one, int max) {}

  /**
   * The statements of lease mode on one schema, shared by its drivers ({@link
   * CommandTables#statements}): the claim per shape (one type or several, per batch size), the
   * extension, the postponement and the fenced delete, each rendered once.
   */
  public static final class Statements {
    private final CommandTables tables;
    private final StatementCache<Shape> claims = new StatementCache<>(2 * Limits.MAX_BATCH_SIZE);
    private final StatementCache.Statement extend;
    private final StatementCache.Statement deleteFenced;
    private final StatementCache.Statement postpone;

    /** The statements on the pending table of {@code tables}. */
    public Statements(CommandTables tables) {
      this.tables = tables;
      this.extend =
          StatementCache.render(dsl -> extendQuery(dsl, tables), "seconds", "ids", "tokens");
      this.deleteFenced =
          StatementCache.render(
              dsl ->
                  dsl.deleteFrom(tables.commands)
                      .where(MESSAGE_ID.eq(StatementCache.parameter("id", SQLDataType.UUID)))
                      .and(LEASE_TOKEN.eq(StatementCache.parameter("token", SQLDataType.BIGINT))),
              "id",
              "token");
      this.postpone =
          StatementCache.render(
              dsl ->
                  dsl.update(tables.commands)
                      .set(FAILURES, StatementCache.parameter("failures", FAILURES.getDataType()))
                      .set(
                          DELIVER_AT,
                          CommandTables.after(
                              StatementCache.parameter("delay", SQLDataType.VARCHAR)))
                      .set(LEASED_BY, DSL.inline(null, LEASED_BY))
                      .where(MESSAGE_ID.eq(StatementCache.parameter("id", SQLDataType.UUID)))
                      .and(LEASE_TOKEN.eq(StatementCache.parameter("token", SQLDataType.BIGINT))),
              "failures",
              "delay",
              "id",
              "token");
    }

    private StatementCache.Statement claim(boolean one, int max) {
      return claims.statement(
          new Shape(one, max),
          dsl ->
              claimQuery(
                  dsl,
                  tables,
                  one ? CommandQueries.TYPE : null,
                  one ? null : CommandQueries.TYPES,
                  max),
          one ? CommandQueries.TYPE.getParamName() : CommandQueries.TYPES.getParamName(),
          "holder",
          "seconds");
    }
  }

  /**
   * Claims up to {@code max} due commands of {@code types} (scanned in this order, as the
   * transactional claim does) with a lease of {@code lease} for {@code holder}: a new fencing token
   * each, the expiry as their due time. A command whose previous lease expired has that attempt
   * counted as a failure. Returned in the claim's order (highest priority first, aged by waiting:
   * see {@link CommandQueries#acquire}) by enqueue time, each with its token in its driver state.
   * The claim moves {@code deliver_at} to the lease's expiry and leaves the priority as it is: a
   * lease that runs out makes the command due again with its priority.
   */
  public static List<Claim> claim(
      Connection connection,
      Statements statements,
      List<String> types,
      int max,
      String holder,
      Duration lease)
      throws SQLException {
    boolean one = types.size() == 1;
    Object names = one ? types.get(0) : types.toArray(String[]::new);
    List<Claim> out = new ArrayList<>();
    try (PreparedStatement ps =
            statements
                .claim(one, max)
                .prepare(connection, names, holder, DatabaseClock.seconds(lease));
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(
            new Claim(
                CommandQueries.ClaimStatement.delivery(rs, rs.getLong(11), 13), rs.getString(12)));
      }
    }
    // The due time the claim ordered by is overwritten with the expiry: the enqueue time stands in.
    out.sort(
        java.util.Comparator.comparing(
            cl ->
                CommandQueries.ClaimStatement.rank(
                    cl.delivery().envelope().createdAt(),
                    ((CommandQueries.Claimed) cl.delivery().driverState()).priority())));
    return out;
  }

  /** The claim (see {@link #claim}) of one type ({@code type}) or several ({@code types}). */
  private static Query claimQuery(
      DSLContext render, CommandTables t, Field<String> type, Field<String[]> types, int max) {
    Table<Record> c = t.commands.as("c");
    Table<?> claim =
        CommandQueries.acquire(render, t, type, types, max, List.of(MESSAGE_ID, LEASED_BY))
            .asTable("claim");
    Field<String> expiredHolder = claim.field(LEASED_BY.getName(), String.class);
    List<Field<?>> returning = new ArrayList<>();
    for (Field<?> f : CommandQueries.COLUMNS) {
      returning.add(ofC(f));
    }
    returning.add(ofC(LEASE_TOKEN));
    returning.add(expiredHolder.as("expired_holder"));
    returning.add(ofC(CommandTables.IDEMPOTENCY_KEY));
    returning.add(ofC(CommandTables.RELEASE_KEY));
    return render
        .update(c)
        .set(LEASE_TOKEN, t.leaseTokens.nextval())
        .set(LEASED_BY, HOLDER)
        .set(DELIVER_AT, DatabaseClock.afterSeconds(SECONDS))
        .set(
            FAILURES,
            ofC(FAILURES)
                .plus(DSL.when(expiredHolder.isNull(), DSL.inline(0)).otherwise(DSL.inline(1))))
        .from(claim)
        .where(ofC(MESSAGE_ID).eq(claim.field(MESSAGE_ID.getName(), UUID.class)))
        .returningResult(returning);
  }

  /**
   * One claimed command and, when its previous lease had expired (an attempt that never completed,
   * counted as a failure by this claim), that lease's holder; else null.
   */
  public record Claim(Delivery delivery, String expiredHolder) {}

  /**
   * Extends the leases of {@code running} to {@code lease} from now, in one statement, and returns
   * those whose lease is still theirs (matched by message id and fencing token).
   */
  public static List<Delivery> extend(
      Connection connection, Statements statements, List<Delivery> running, Duration lease)
      throws SQLException {
    Map<Long, Delivery> byToken = new HashMap<>();
    UUID[] ids = new UUID[running.size()];
    Long[] tokens = new Long[running.size()];
    for (int i = 0; i < running.size(); i++) {
      Delivery d = running.get(i);
      CommandQueries.Claimed claimed = (CommandQueries.Claimed) d.driverState();
      ids[i] = claimed.id();
      tokens[i] = claimed.leaseToken();
      byToken.put(claimed.leaseToken(), d);
    }
    List<Delivery> kept = new ArrayList<>(running.size());
    try (PreparedStatement ps =
            statements.extend.prepare(connection, DatabaseClock.seconds(lease), ids, tokens);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        Delivery d = byToken.get(rs.getLong(1));
        if (d != null) {
          kept.add(d);
        }
      }
    }
    return kept;
  }

  /**
   * The extension (see {@link #extend}). Tokens are unique to a claim, so an id and a token from
   * the two lists can only match as the pair they were claimed as; the id finds the row by its
   * primary key.
   */
  private static Query extendQuery(DSLContext render, CommandTables t) {
    return render
        .update(t.commands)
        .set(DELIVER_AT, DatabaseClock.afterSeconds(SECONDS))
        .where(MESSAGE_ID.eq(DSL.any(IDS)))
        .and(LEASE_TOKEN.eq(DSL.any(TOKENS)))
        .and(LEASED_BY.isNotNull())
        .returningResult(LEASE_TOKEN);
  }

  /** Deletes a completed command, if its lease is still this claim's. */
  public static void complete(Connection connection, Statements statements, UUID id, long token)
      throws SQLException {
    deleteFenced(connection, statements, id, token, "completion");
  }

  /** Deletes the command where its id and token still match, else {@link LeaseLostException}. */
  private static void deleteFenced(
      Connection connection, Statements statements, UUID id, long token, String what)
      throws SQLException {
    fenced(statements.deleteFenced.executeUpdate(connection, id, token), id, token, what);
  }

  /**
   * Ends the lease and makes the command due after {@code delay} with {@code failures}, if its
   * lease is still this claim's.
   */
  public static void postpone(
      Connection connection,
      Statements statements,
      UUID id,
      long token,
      int failures,
      Duration delay)
      throws SQLException {
    String interval = CommandTables.interval(delay == null ? Duration.ZERO : delay);
    fenced(
        statements.postpone.executeUpdate(connection, failures, interval, id, token),
        id,
        token,
        "postponement");
  }

  /**
   * Takes the command out of the pending table for parking, if its lease is still this claim's (the
   * caller then writes its dead letter in the same transaction).
   */
  public static void takeForParking(
      Connection connection, Statements statements, UUID id, long token) throws SQLException {
    deleteFenced(connection, statements, id, token, "parking");
  }

  /** A leased command as {@link #list} reads it. */
  public record Leased(
      UUID messageId,
      String type,
      String holder,
      Instant expiresAt,
      int failures,
      long token,
      int priority) {}

  /**
   * Up to {@code limit} leased commands of {@code type} (null: every type), the lease that runs out
   * first first, ties by message id.
   */
  public static List<Leased> list(DSLContext dsl, CommandTables t, String type, int limit) {
    return dsl.select(
            MESSAGE_ID,
            CommandTables.MESSAGE_TYPE,
            LEASED_BY,
            DELIVER_AT,
            FAILURES,
            LEASE_TOKEN,
            CommandTables.PRIORITY)
        .from(t.commands)
        .where(LEASED_BY.isNotNull())
        .and(type == null ? DSL.noCondition() : CommandTables.MESSAGE_TYPE.eq(type))
        .orderBy(DELIVER_AT, MESSAGE_ID)
        .limit(limit)
        .fetch(
            r ->
                new Leased(
                    r.value1(),
                    r.value2(),
                    r.value3(),
                    r.value4(),
                    r.value5(),
                    r.value6(),
                    r.value7()));
  }

  private static void fenced(int rows, UUID id, long token, String what) {
    if (rows == 0) {
      throw new LeaseLostException(
          "the "
              + what
              + " of command "
              + id
              + " was refused: fencing token "
              + token
              + " is no longer its lease's (the lease expired and another claim took it, or an"
              + " operator moved it)");
    }
  }

  /** {@code f} of the claim's target table, aliased {@code c}. */
  private static <T> Field<T> ofC(Field<T> f) {
    return DSL.field(DSL.name("c", f.getName()), f.getDataType());
  }
}
