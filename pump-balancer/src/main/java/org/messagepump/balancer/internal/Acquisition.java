package org.messagepump.balancer.internal;

import static org.messagepump.balancer.internal.BalancerTables.M_ATTEMPTS;
import static org.messagepump.balancer.internal.BalancerTables.M_CONTENT;
import static org.messagepump.balancer.internal.BalancerTables.M_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.M_ID;
import static org.messagepump.balancer.internal.BalancerTables.M_KEY;
import static org.messagepump.balancer.internal.BalancerTables.M_PROPERTIES;
import static org.messagepump.balancer.internal.BalancerTables.M_RECEIVED_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_FAILURES;
import static org.messagepump.balancer.internal.BalancerTables.P_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.P_JOINED;
import static org.messagepump.balancer.internal.BalancerTables.P_KEY;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_MESSAGE_ID;
import static org.messagepump.balancer.internal.BalancerTables.P_PARKED_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_RESUME_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_ROTATION;
import static org.messagepump.balancer.internal.BalancerTables.clock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.ResultQuery;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.StatementCache;

/**
 * The balancer's acquisition of one partition group, with its SQL: which keys a poll takes and in
 * what order, and how it claims them.
 *
 * <p>With lockPartition, the ready keys are walked in rotation order from this driver's {@link
 * Cursor}, in laps (keys are served in the order they became ready), by one statement that locks
 * the keys ({@code FOR NO KEY UPDATE SKIP LOCKED}) and deletes their heads (or runs of {@code
 * messagesPerTurn}): the success bookkeeping done up front. Every outcome that keeps a message
 * writes it back ({@link #restore}), and the places a lap draws for its keys are written once the
 * turn's outcome is known ({@link #moveBack}, {@link #rejoin}). Without lockPartition, keys are
 * rotated to the back on a short transaction of their own and each key's first free message is
 * locked in the pump's transaction.
 *
 * <p>One instance per driver (it holds the driver's cursor). The statements are rendered once per
 * schema by jOOQ with bind markers and run through plain JDBC: rendering per poll was a large part
 * of the pump's CPU per delivery on a two-core machine shared with PostgreSQL.
 */
public final class Acquisition {

  private static final int MAX_ROUNDS = 8;
  private static final org.jooq.DataType<String[]> TEXT_ARRAY = SQLDataType.CLOB.array();

  // The columns of the candidates CTE "c".
  private static final Field<String> C_GROUP = DSL.field(DSL.name("c", "c_group"), String.class);
  private static final Field<String> C_KEY = DSL.field(DSL.name("c", "c_key"), String.class);
  private static final Field<Long> C_ROTATION = DSL.field(DSL.name("c", "c_rotation"), Long.class);
  private static final Field<Integer> C_FAILURES =
      DSL.field(DSL.name("c", "c_failures"), Integer.class);
  private static final Field<Integer> C_PART = DSL.field(DSL.name("c", "c_part"), Integer.class);

  /**
   * A walk from a cursor in one statement: {@code (a1, a2]} (a2 the lap's highest rotation), then
   * round from the lowest, {@code (MIN, b2]} and {@code (a2, MAX]} (the next lap). Returns the
   * highest rotation now (for the next lap) and looks for keys that joined above {@code a2}.
   */
  public static final int WALK_OPEN = 0;

  /** The rest of a walk that wrapped round: {@code (a1, a2]}, then {@code (b1, b2]}. */
  public static final int WALK_BOUNDED = 1;

  /**
   * One range, {@code (a1, a2]}: a batch of one in the middle of a lap (the next lap is a statement
   * of its own, {@link #WALK_LAP}). Looks for keys that joined above {@code a2}.
   */
  public static final int WALK_AFTER = 2;

  /**
   * One range from the start of a lap, {@code (a1, MAX]} with {@code a1} the lowest rotation: a
   * batch of one that wrapped round. Returns the highest rotation now (the new lap's).
   */
  public static final int WALK_LAP = 3;

  /**
   * With {@link #WALK_AFTER} or {@link #WALK_OPEN}: the lap already met a key that joined after it
   * began, so every key the first range takes is given a new place (a rotation drawn from the
   * sequence, returned with its row) without looking again.
   */
  public static final int MOVE_BACK = 4;

  /**
   * With {@link #WALK_AFTER} or {@link #WALK_OPEN}, without {@link #MOVE_BACK}: the lap has seen
   * the rotation sequence drawn above its highest rotation, so the statement looks for a key that
   * joined above the lap with a step of the ready index. Without it the statement reads only the
   * sequence's last value, which no key can join above the lap without raising ({@link #lockKeys}).
   */
  public static final int EXACT = 8;

  /** The names of the acquisition statement's parameters: the group, then the bounds 1-4. */
  private static final String[] PARAMETERS = {"group", "a1", "a2", "b1", "b2"};

  private static final org.jooq.Param<String> GROUP_PARAMETER = DeliveryQueries.GROUP;

  private static final List<org.jooq.Param<Long>> BOUND_PARAMETERS =
      List.of(
          StatementCache.parameter(PARAMETERS[1], SQLDataType.BIGINT),
          StatementCache.parameter(PARAMETERS[2], SQLDataType.BIGINT),
          StatementCache.parameter(PARAMETERS[3], SQLDataType.BIGINT),
          StatementCache.parameter(PARAMETERS[4], SQLDataType.BIGINT));

  /**
   * An acquisition statement, rendered once by the kit's {@link StatementCache}, with what each of
   * its {@code ?} markers binds ({@link #roles()}): for a test that runs the text itself.
   */
  public record Text(StatementCache.Statement statement) {

    /** The SQL text. */
    public String sql() {
      return statement.sql();
    }

    /**
     * What each {@code ?} marker of {@link #sql()} binds, in order: 0 for the group, else the
     * number of a bound, 1-4 for {@code a1}, {@code a2}, {@code b1}, {@code b2}.
     */
    public int[] roles() {
      int[] markers = statement.markers();
      int[] roles = new int[markers.length];
      for (int i = 0; i < markers.length; i++) {
        roles[i] = List.of(PARAMETERS).indexOf(statement.parameters().get(markers[i]));
      }
      return roles;
    }
  }

  /**
   * The acquisition statement (see {@link #lockKeys}) of shape {@code shape}, up to {@code perKey}
   * consecutive messages of each key, {@code max} rows in all: the group and the bounds of the
   * ranges are named parameters ({@link #PARAMETERS}: the group, then the bounds 1-4), {@code max}
   * and {@code perKey} are written as integers. One row per message (a key's rows in no particular
   * order, sharing its columns): key, rotation, failures, range (0 or 1), message id (null: the key
   * has no message), deleted id (null: it was not there to delete), content, properties,
   * received_at, attempts, received_at and the clock as microseconds, whether a later message of
   * the key was seen; then, for the shapes that use them ({@link Columns}), the rotation of a key
   * that joined above the first range (null: none seen; without {@link #EXACT} the rotation
   * sequence's last value instead), the highest rotation of the group's ready keys (null: not
   * asked) and the place drawn for the key (null: none).
   */
  private static ResultQuery<?> acquireQuery(
      BalancerTables tables, DSLContext dsl, Field<String> group, int max, int shape, int perKey) {
    int walk = shape & 3;
    // The optional columns of the shape, as lockKeys reads them (Columns).
    Columns optional = Columns.of(shape);
    boolean looksAbove = optional.joined() != 0;
    boolean readsTop = optional.top() != 0;
    boolean draws = optional.place() != 0;
    // Each range is its own locking subquery (a locking clause is not allowed on a UNION's
    // branches); the outer LIMIT stops the Append before the second range is read, and so before
    // any of its rows is locked, when the first range already gave max keys.
    // A walk of one range (a batch of one) carries no range number: every row is of range 0, and a
    // constant column carried through h cost about 6,000 server instructions (callgrind).
    boolean oneRange = walk == WALK_AFTER || walk == WALK_LAP;
    Table<?> c =
        oneRange
            ? DSL.select(DSL.asterisk())
                .from(range(tables, group, max, "a", ONLY, 1, walk == WALK_AFTER ? 2 : 0))
                .limit(DSL.inline(max))
                .asTable("c")
            : walk == WALK_BOUNDED
                ? DSL.select(DSL.asterisk())
                    .from(range(tables, group, max, "a", 0, 1, 2))
                    .unionAll(
                        DSL.select(DSL.asterisk())
                            .from(range(tables, groupParam(), max, "b", 1, 3, 4)))
                    .limit(DSL.inline(max))
                    .asTable("c")
                // The next lap: from the lowest rotation up to the cursor, then the keys above
                // the lap (that joined during it, or were moved back); not the keys of the first
                // range, which this statement may hold (its own locks are not skipped) and which
                // were just found taken or not due.
                // Every rotation up to the cursor is below every rotation above the lap, so the two
                // are one range in rotation order, (MIN, b2] or (a2, MAX]: one subquery fewer to
                // set up at every execution, although it is read only when the walk wraps round.
                : DSL.select(DSL.asterisk())
                    .from(range(tables, group, max, "a", 0, 1, 2))
                    .unionAll(DSL.select(DSL.asterisk()).from(nextLap(tables, max)))
                    .limit(DSL.inline(max))
                    .asTable("c");
    // h: the locked keys, and the first perKey messages of each (its head, or a run), read without
    // a lock: the key row's lock is the claim, and every writer of a key's messages holds it. A
    // lateral scan of the key's index range, at most max rows in all. The join pulls the keys one
    // at a time, so they are locked as they are reached: once max rows are there, no further key
    // is read or locked (a key locked and left unused would be skipped by every other worker until
    // this commits). A key without messages is one row with no id (an empty key). h is read twice
    // below, so PostgreSQL computes it once: each key is locked once.
    //
    // The scan reads one message more than it takes (perKey + 1): whether a message has a later
    // one of its key (h_more) comes from the same scan. Each message is then deleted by its row
    // address (ctid, a TID scan): no primary-key descent for the delete and no probe for a later
    // message (docs/performance-notes.md, "One index scan per key"). The ctid and the
    // ids are read with the statement's snapshot, which keeps those rows from being pruned until
    // it ends; a row another transaction deleted (or wrote back, as a new row) meanwhile is not
    // deleted here, and its key is raced.
    // How many messages of a key: perKey (an integer of the code, not data), and one for a key
    // with failures counted, so that a failure is always counted on the key's own count (a success
    // earlier in the run would have reset it).
    Field<Integer> take =
        perKey == 1
            ? DSL.inline(1)
            : DSL.when(C_FAILURES.gt(DSL.inline(0)), DSL.inline(1)).otherwise(DSL.inline(perKey));
    Field<Long> iId = DSL.field(DSL.name("i", "i_id"), Long.class);
    Field<Object> iCtid = DSL.field(DSL.name("i", "i_ctid"));
    Table<?> scan =
        DSL.select(M_ID.as("i_id"), DSL.field("{0}.ctid", tables.messages).as("i_ctid"))
            .from(tables.messages)
            .where(M_GROUP.eq(C_GROUP))
            .and(M_KEY.eq(C_KEY))
            .orderBy(M_ID)
            .limit(take.add(DSL.inline(1)))
            .asTable("i");
    Field<Integer> rn = DSL.field(DSL.name("w", "w_n"), Integer.class);
    Field<Long> next = DSL.field(DSL.name("w", "w_next"), Long.class);
    Table<?> numbered =
        DSL.select(
                iId.as("w_id"),
                iCtid.as("w_ctid"),
                DSL.rowNumber().over(DSL.orderBy(iId)).as("w_n"),
                DSL.lead(iId).over(DSL.orderBy(iId)).as("w_next"))
            .from(scan)
            .asTable("w");
    Table<?> run =
        DSL.lateral(
            DSL.select(
                    DSL.field(DSL.name("w", "w_id")).as("h_id"),
                    DSL.field(DSL.name("w", "w_ctid")).as("h_ctid"),
                    DSL.field(next.isNotNull()).as("h_more"))
                .from(numbered)
                .where(rn.le(take))
                .asTable("hd"));
    List<Field<?>> hColumns = new ArrayList<>();
    hColumns.add(C_KEY);
    hColumns.add(C_ROTATION);
    hColumns.add(C_FAILURES);
    if (!oneRange) {
      hColumns.add(C_PART);
    }
    hColumns.add(DSL.field(DSL.name("hd", "h_id")).as("h_id"));
    hColumns.add(DSL.field(DSL.name("hd", "h_ctid")).as("h_ctid"));
    hColumns.add(DSL.field(DSL.name("hd", "h_more")).as("h_more"));
    // A shape carries only the columns it uses (Columns): a constant null column in h cost about
    // 7,000 server instructions per execution, the place expression 9,000 (callgrind).
    if (looksAbove) {
      hColumns.add(
          (optional.exact() ? joinedAbove(tables) : rotationDrawn(tables, dsl, oneRange))
              .as("h_joined"));
    }
    if (readsTop) {
      hColumns.add(
          (walk == WALK_LAP
                  ? top(tables, group)
                  // Only when the walk wrapped round into the next lap: an InitPlan runs when a
                  // row first asks for its value.
                  : DSL.when(C_PART.eq(DSL.inline(1)), top(tables, group)))
              .as("h_top"));
    }
    CommonTableExpression<?> h =
        DSL.name("h")
            .as(
                DSL.select(hColumns)
                    .from(c.leftJoin(run).on(DSL.trueCondition()))
                    .limit(DSL.inline(max)));
    Field<Long> hId = DSL.field(DSL.name("h", "h_id"), Long.class);
    // The messages of h, deleted. The delete decides on each row's newest version: a message that
    // the previous holder of the key deleted, wrote back or updated, committed after this
    // statement's snapshot, is not deleted and not returned (its ctid no longer names a live
    // version; the key is "raced": deleteRacedHeads takes it). Deleting here, not at completion,
    // saves a statement per delivery.
    List<Field<?>> deleted = new ArrayList<>();
    deleted.add(M_ID.as("d_id"));
    deleted.addAll(deletedColumns(tables, false)); // no d_others: the key's scan says it (h_more)
    CommonTableExpression<?> d =
        DSL.name("d")
            .as(
                dsl.deleteFrom(tables.messages)
                    .using(DSL.table(DSL.name("h")))
                    .where(DSL.condition("{0}.ctid = {1}", tables.messages, hField("h_ctid")))
                    .returningResult(deleted));
    List<Field<?>> columns = new ArrayList<>();
    for (String name : new String[] {"c_key", "c_rotation", "c_failures"}) {
      columns.add(hField(name));
    }
    columns.add(oneRange ? DSL.inline(0) : hField("c_part"));
    columns.add(hId);
    for (String name :
        new String[] {
          "d_id",
          "d_content",
          "d_properties",
          "d_received",
          "d_attempts",
          "d_received_us",
          "d_now_us"
        }) {
      columns.add(dField(name));
    }
    columns.add(hField("h_more"));
    if (looksAbove) {
      columns.add(hField("h_joined"));
    }
    if (readsTop) {
      columns.add(hField("h_top"));
    }
    if (draws) {
      columns.add(place(tables, oneRange));
    }
    return dsl.with(h)
        .with(d)
        .select(columns)
        // No ORDER BY (a sort node per delivery): lockKeys puts the claims in walk order.
        .from(DSL.table(DSL.name("h")))
        .leftJoin(DSL.table(DSL.name("d")))
        .on(dField("d_id").eq(hId));
  }

  private static Field<Object> hField(String name) {
    return DSL.field(DSL.name("h", name));
  }

  private static Field<Object> dField(String name) {
    return DSL.field(DSL.name("d", name));
  }

  /**
   * A new place for a key of the first range ({@code c_part} 0) with a head, in a lap where turns
   * move their keys back: a rotation drawn from the sequence while the key is served, so a key that
   * joins during the delivery is placed behind it.
   */
  private static Field<Long> place(BalancerTables tables, boolean oneRange) {
    Condition turn = hField("h_id").isNotNull();
    if (!oneRange) {
      turn = DSL.field(DSL.name("h", "c_part"), Integer.class).eq(DSL.inline(0)).and(turn);
    }
    return DSL.when(turn, tables.rotation.nextval());
  }

  /**
   * The last rotation the sequence handed out, to any session, committed or not ({@code
   * pg_sequence_last_value}: it reads the sequence itself, not a snapshot). Every place a key takes
   * when it joins is drawn from the sequence before the join commits, so while this is at most the
   * lap's highest rotation no key can have joined above the lap, and the statement needs no step of
   * the ready index to know it: a batch of one's statement took 533,000 server instructions per
   * execution with it against 577,000 with the step (callgrind). The function is volatile, so it
   * runs once per row: a statement of one range (one row) calls it, a walk of several keys reads it
   * from a one-row subquery, run once (a batch of 10: 2,112,000 against 2,127,000 with a call per
   * row). The name is the schema's sequence, written as {@code nextval} writes it.
   */
  private static Field<Long> rotationDrawn(BalancerTables tables, DSLContext dsl, boolean oneRow) {
    Field<Long> last =
        DSL.field(
            "pg_sequence_last_value({0})",
            SQLDataType.BIGINT, DSL.inline(dsl.render(tables.rotation)));
    return oneRow ? last : DSL.field(DSL.select(last));
  }

  /**
   * The lowest rotation above the first range's upper bound (bound 2) of a ready key of the group
   * that joined (not a key a turn moved back): one step of the ready index, once per execution (an
   * InitPlan). Such a key joined after the lap began.
   */
  private static Field<Long> joinedAbove(BalancerTables tables) {
    // The group is a plain parameter, not a one-row subquery (fewer server instructions,
    // callgrind): the step reads the ready index whatever the group's estimated size. The bound
    // stays a subquery: planned for a value above every key, a group of one page was read by a
    // sequential scan and a sort instead of one step of the ready index (BalancerBasicsIT).
    return DSL.field(
        DSL.select(P_ROTATION)
            .from(tables.partitions)
            .where(P_GROUP.eq(GROUP_PARAMETER))
            .and(P_ROTATION.gt(bound(2)))
            .and(P_LEASE_MESSAGE_ID.isNull())
            .and(P_PARKED_AT.isNull())
            .and(P_JOINED)
            .orderBy(P_ROTATION)
            .limit(DSL.inline(1)));
  }

  /**
   * The highest rotation of the group's ready keys (locked, postponed or not): a backward step of
   * the ready index, once per execution. The next lap's walk ends there.
   */
  private static Field<Long> top(BalancerTables tables, Field<String> group) {
    return DSL.field(
        DSL.select(DSL.max(P_ROTATION))
            .from(tables.partitions)
            .where(P_GROUP.eq(group))
            .and(P_LEASE_MESSAGE_ID.isNull())
            .and(P_PARKED_AT.isNull()));
  }

  /**
   * The next lap of a walk that may wrap round ({@link #WALK_OPEN}): ready keys up to the cursor
   * (bound 4) or above the lap's highest rotation (bound 2), in rotation order, locked, marked as
   * range 1.
   */
  private static Table<?> nextLap(BalancerTables tables, int max) {
    return rangeWhere(
        tables, groupParam(), max, "b", 1, P_ROTATION.le(bound(4)).or(P_ROTATION.gt(bound(2))));
  }

  /** The group as a one-row subquery, for a range of its own. */
  private static Field<String> groupParam() {
    return DSL.field(DSL.select(GROUP_PARAMETER));
  }

  /** Bound {@code n} (1-4) as a one-row subquery, a named parameter of the statement. */
  private static Field<Long> bound(int n) {
    return DSL.field(DSL.select(BOUND_PARAMETERS.get(n - 1)));
  }

  /**
   * One range of the walk: ready keys with {@code lower < rotation}, and {@code rotation <= upper}
   * unless {@code upper} is 0 (bounds by number), locked, each row marked with the range's number
   * {@code part} ({@link #ONLY}: not marked, the walk's only range).
   */
  private static Table<?> range(
      BalancerTables tables,
      Field<String> group,
      int max,
      String alias,
      int part,
      int lower,
      int upper) {
    Condition bounds = P_ROTATION.gt(bound(lower));
    if (upper != 0) {
      // The upper bound is tested on an expression of the column, not the column: a filter on the
      // rows the index scan returns in rotation order, not a second index bound. Two parameter
      // bounds on one column are estimated as a range of 0.5% of the rows, and with 100 keys
      // PostgreSQL then planned a bitmap scan of the whole range and a sort of it under the locks
      // at every execution (a lap of 60 keys read and sorted to lock 2); with one bound the plan
      // reads the ready index from the lower bound and stops at the limit. Past the upper bound it
      // reads only keys that joined during the lap, when the range has too few.
      // A plain parameter, not a one-row subquery: the planner estimates a comparison of an
      // expression without statistics the same for every value, so the generic plan stays, and
      // the subquery's InitPlan cost about 5,000 server instructions per execution (callgrind).
      bounds = bounds.and(P_ROTATION.plus(DSL.inline(0L)).le(BOUND_PARAMETERS.get(upper - 1)));
    }
    return rangeWhere(tables, group, max, alias, part, bounds);
  }

  /** Ready keys of the group whose rotation meets {@code bounds}, locked (see {@link #range}). */
  private static Table<?> rangeWhere(
      BalancerTables tables,
      Field<String> group,
      int max,
      String alias,
      int part,
      Condition bounds) {
    List<Field<?>> columns = new ArrayList<>();
    columns.add(P_GROUP.as("c_group"));
    columns.add(P_KEY.as("c_key"));
    columns.add(P_ROTATION.as("c_rotation"));
    columns.add(P_FAILURES.as("c_failures"));
    if (part != ONLY) {
      columns.add(DSL.inline(part).as("c_part"));
    }
    return DSL.select(columns)
        .from(tables.partitions)
        .where(ready(tables, group, null))
        .and(bounds)
        .orderBy(P_ROTATION)
        .limit(DSL.inline(max))
        .forNoKeyUpdate()
        .skipLocked()
        .asTable(alias);
  }

  /** The range number of a walk's only range: its rows carry none (they are of range 0). */
  private static final int ONLY = -1;

  /** A rotation that is not one (no key with it, no place drawn). */
  public static final long NONE = Long.MIN_VALUE;

  /** A key acquisition found without a message (to be deleted if it is really empty). */
  record EmptyKey(String key, long oldRotation) {}

  /**
   * A key's head message (or one of a run), deleted by the acquisition statement (the success
   * bookkeeping done up front, as the command queue does): {@code othersSeen} when the statement
   * saw later messages of the key, {@code age} the message's age by the database clock when it was
   * deleted, {@code place} the rotation drawn to move its key back ({@link #NONE}: none, the key
   * keeps its own).
   */
  record Claim(AcquiredMessage message, boolean othersSeen, Duration age, long place) {

    /** The claim with the place {@code place}. */
    Claim withPlace(long place) {
      return new Claim(message, othersSeen, age, place);
    }
  }

  /**
   * A locked key whose head the acquisition statement found gone or replaced by a commit its
   * snapshot did not see (the key's previous holder committed between the snapshot and the lock):
   * its head is deleted by {@link #deleteRacedHeads}, with a snapshot of its own.
   */
  record RacedKey(String key, long rotation, int failures, long place) {}

  /**
   * The result of one acquisition statement: claims (head messages, deleted), empty keys, raced
   * keys, how many keys it returned, the rotation of the last of them in walk order and the range
   * it came from (0 or 1; meaningless when none), whether a key that joined above the first range's
   * upper bound was seen ({@code joinedAbove}), whether the rotation sequence had been drawn above
   * that bound ({@code drawnAbove}: from then on the lap's statements look {@link #EXACT}), the
   * highest rotation of the group's ready keys ({@code top}, {@link #NONE} when not asked or no
   * row) and the highest place drawn ({@code drawn}, {@link #NONE} when none).
   */
  record Acquired(
      List<Claim> claims,
      List<EmptyKey> empty,
      List<RacedKey> raced,
      int rows,
      long lastRotation,
      int lastPart,
      boolean joinedAbove,
      boolean drawnAbove,
      long top,
      long drawn) {}

  /**
   * A message this acquisition claimed, for the driver to deliver: {@code deleted} when the
   * acquisition statement deleted it (with lockPartition: every outcome that keeps it writes it
   * back, {@link #restore}), with whether the statement saw later messages of its key ({@code
   * othersSeen}) and its age then ({@code age}, {@link Duration#ZERO} when not deleted); the run of
   * its key it belongs to ({@code run}, null when not deleted); and {@code acquiredAt}, the {@link
   * System#nanoTime()} it was claimed at.
   */
  public record Taken(
      AcquiredMessage message,
      boolean deleted,
      boolean othersSeen,
      Duration age,
      Run run,
      long acquiredAt) {

    /** A claim whose message is still stored (without lockPartition, or reacquired). */
    public static Taken stored(AcquiredMessage message) {
      return new Taken(message, false, true, Duration.ZERO, null, System.nanoTime());
    }

    static Taken deleted(Claim c, Run run) {
      return new Taken(c.message(), true, c.othersSeen(), c.age(), run, System.nanoTime());
    }
  }

  /**
   * The consecutive messages of one key that one acquisition took (a run of {@code
   * messagesPerTurn}; a run of one otherwise), handled in order. Once one of them is not handled
   * with success (requeued, handed off, Busy, failed, or a success the pump undid), the rest are
   * not handled: they are written back as they were, and the key's state is what that one outcome
   * made it.
   */
  public static final class Run {
    private final String key;
    private final long place;
    private boolean placed;
    private boolean stopped;
    private boolean keyWritten;

    Run(String key, long place) {
      this.key = key;
      this.place = place;
    }

    /** The key. */
    public String key() {
      return key;
    }

    /**
     * The rotation the acquisition drew for the key ({@link #NONE}: none, the key keeps its own):
     * written once the run's outcome is known, unless the key keeps its place.
     */
    public long place() {
      return place;
    }

    /** The key's place was written (or the key deleted as empty, or its row written otherwise). */
    public boolean placed() {
      return placed;
    }

    /** Notes that the key's place was written, or that it needs none. */
    public void markPlaced() {
      placed = true;
    }

    /** The rest of the run is not handled. */
    public boolean stopped() {
      return stopped;
    }

    /** Stops the run: its later messages are not handled. */
    public void stop() {
      stopped = true;
    }

    /**
     * An outcome of the run wrote the key's row (postponed, parked, leased): the successes of the
     * run leave the key alone at completion (no failure reset, no empty-key delete).
     */
    public boolean keyWritten() {
      return keyWritten;
    }

    /** Notes that an outcome of the run wrote the key's row. */
    public void markKeyWritten() {
      keyWritten = true;
    }
  }

  private final BalancerTables tables;
  private final Statements statements;
  private final String group;
  private final DataSource dataSource;
  private final boolean lockPartition;
  private final int messagesPerTurn;

  /** This driver's place in the rotation (with lockPartition): see {@link Cursor}. */
  private final AtomicReference<Cursor> cursor = new AtomicReference<>(Cursor.START);

  /**
   * The acquisition of {@code group} in the schema of {@code tables}: with {@code lockPartition}
   * (at most one message per key in flight) up to {@code messagesPerTurn} consecutive messages of a
   * key; without, the keys are rotated on short transactions of {@code dataSource}.
   */
  public Acquisition(
      BalancerTables tables,
      String group,
      DataSource dataSource,
      boolean lockPartition,
      int messagesPerTurn) {
    this.tables = tables;
    this.statements = statements(tables);
    this.group = group;
    this.dataSource = dataSource;
    this.lockPartition = lockPartition;
    this.messagesPerTurn = messagesPerTurn;
  }

  /** Claims up to {@code max} messages of the group in {@code tx}, in the order they are served. */
  public List<Taken> acquire(Tx tx, int max) throws SQLException {
    List<Taken> out = new ArrayList<>(max);
    if (lockPartition) {
      acquireLocked(tx, max, out);
    } else {
      Set<String> taken = new HashSet<>();
      for (int round = 0; round < MAX_ROUNDS && out.size() < max; round++) {
        if (!acquireFree(tx, max, out, taken)) {
          break;
        }
      }
    }
    return out;
  }

  /**
   * With lockPartition: walks the ready keys in rotation order from this driver's cursor — the keys
   * after it up to the lap's highest rotation, then round from the lowest rotation (the next lap) —
   * and moves the cursor to the last key taken. Further rounds, only past keys found empty (deleted
   * here if really empty), continue the walk where it stopped; at most {@value #MAX_ROUNDS}.
   *
   * <p>Keys are served in the order they became ready ({@link Cursor}): a lap walks the keys that
   * were ready when it began, a key that joins during the lap (a new key, a lease that ended, an
   * unparked key) has a higher rotation and waits for the next lap, and once one has joined, every
   * later turn of the lap moves its key behind it (a rotation drawn by the acquisition statement,
   * or by {@link #drawPlaces} right after the statement that first saw the joined key, written when
   * the delivery's outcome is known: {@link Run#place}).
   */
  private void acquireLocked(Tx tx, int max, List<Taken> out) throws SQLException {
    Cursor start = cursor.get();
    long s = start.rotation();
    // A batch of one walks one range per statement, (cursor, lap's highest], and starts the next
    // lap with a statement of its own from the lowest rotation, (MIN, MAX], only when nothing
    // after the cursor was free: about once per lap. The second range of the one-statement walk
    // was set up and shut down at every execution although it was read about once per lap (the
    // event claim measured the same, see docs/benchmarks.md). Larger batches keep both ranges in
    // one statement, (cursor, lap's highest] then (MIN, cursor]: there a batch often finds fewer
    // keys after the cursor than it wants, and a second round trip cost more.
    boolean single = max == 1;
    Cursor.Walk walk = new Cursor.Walk(start);
    int shape;
    long a1 = s;
    long b1 = Long.MIN_VALUE;
    if (single) {
      // A cursor at the lap's highest rotation has nothing after it in the lap: the next lap at
      // once, without a statement that could only come back empty (about one per lap and worker
      // that reaches its end).
      boolean lapDone = start.atLapEnd() || start.rotation() >= start.ceiling();
      shape = lapDone ? WALK_LAP : WALK_AFTER;
      if (lapDone) {
        a1 = Long.MIN_VALUE;
      }
    } else {
      shape = WALK_OPEN;
    }
    long b2 = s;
    for (int round = 0; round < MAX_ROUNDS && out.size() < max; round++) {
      int want = max - out.size();
      boolean mid = shape == WALK_AFTER || shape == WALK_OPEN;
      int sent =
          !mid ? shape : walk.moveBack() ? shape | MOVE_BACK : walk.exact() ? shape | EXACT : shape;
      long a2 = shape == WALK_BOUNDED ? Long.MIN_VALUE : walk.ceiling();
      Acquired a = lockKeys(tx, want, sent, a1, a2, b1, b2);
      // The claims of one key come one after the other, in id order: one run.
      Run run = null;
      for (Claim c : a.claims()) {
        if (run == null || !run.key.equals(c.message().key())) {
          run = new Run(c.message().key(), c.place());
        }
        out.add(Taken.deleted(c, run));
      }
      if (!a.raced().isEmpty()) {
        for (Claim c : deleteRacedHeads(tx.connection(), a.raced())) {
          out.add(Taken.deleted(c, new Run(c.message().key(), c.place())));
        }
      }
      for (EmptyKey e : a.empty()) {
        DeliveryQueries.deleteIfEmpty(tx.connection(), tables, group, e.key());
      }
      if (a.rows() == 0) {
        if (single && shape == WALK_AFTER) {
          // Nothing after the cursor: the next lap, from the lowest rotation.
          shape = WALK_LAP;
          a1 = Long.MIN_VALUE;
          continue;
        }
        break;
      }
      walk.took(shape, a);
      if (a.rows() < want || out.size() >= max || a.empty().isEmpty()) {
        break; // both ranges exhausted, or nothing skipped
      }
      long last = a.lastRotation();
      if (single) {
        shape = WALK_AFTER; // past the empty key, one range again
        a1 = last;
      } else if (walk.lap() > start.lap()) {
        // The walk wrapped round: what is left of the new lap in this acquisition is (last, s];
        // the keys above s are for the next acquisition (this one holds some of them).
        shape = WALK_BOUNDED;
        a1 = Long.MIN_VALUE;
        b1 = last;
      } else {
        a1 = last;
      }
    }
    if (walk.reached() != null) {
      // Workers of this driver walk concurrently: the cursor only moves forward, by lap first.
      cursor.accumulateAndGet(walk.reached(), Cursor::later);
    }
  }

  /**
   * One round without lockPartition: rotate keys on a short transaction of its own (committed at
   * once, so other processes see the new order), then lock each key's first free message here.
   */
  private boolean acquireFree(Tx tx, int max, List<Taken> out, Set<String> taken)
      throws SQLException {
    List<Rotated> keys;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      keys = rotateKeys(c, max - out.size(), taken);
    }
    boolean skipped = false;
    for (Rotated k : keys) {
      taken.add(k.key());
      AcquiredMessage claim = lockFirstFreeMessage(tx.connection(), k.key(), k.rotation());
      if (claim != null) {
        out.add(Taken.stored(claim));
      } else {
        skipped = true;
        if (isEmpty(tx.connection(), k.key())) {
          DeliveryQueries.deleteIfEmpty(tx.connection(), tables, group, k.key());
        }
      }
    }
    return skipped && !keys.isEmpty();
  }

  /**
   * After a Busy turn of the key at {@code rotation} (no failure counted): with lockPartition the
   * cursor goes back to just before the key when it has passed it, so the key keeps its place and
   * is the first served once it is due again.
   */
  public void keepPlaceOf(long rotation) {
    if (lockPartition) {
      cursor.updateAndGet(c -> c.keepingPlaceOf(rotation));
    }
  }

  /**
   * The statements of one schema, each built by jOOQ with named parameters and rendered once by the
   * kit's {@link StatementCache}: every value is bound by it.
   */
  private static final class Statements {
    final BalancerTables tables;
    final StatementCache.Statement restore;
    final StatementCache.Statement racedHeads;
    final StatementCache.Statement moveBack;
    final StatementCache.Statement rejoin;
    final StatementCache.Statement places;
    final StatementCache.Statement failures;
    final StatementCache.Statement firstFree;
    final StatementCache.Statement isEmpty;
    final StatementCache.Statement joinedAbove;
    // Without lockPartition: per batch size, excluding taken keys or not.
    final StatementCache<Integer> rotate =
        new StatementCache<>(2 * org.messagepump.core.Limits.MAX_BATCH_SIZE);
    // Every shape a pump may use: four walks, two of them with a move back or an exact look above
    // the lap or neither, batches of 1 to MAX_BATCH_SIZE, runs up to the batch.
    final StatementCache<Long> acquire =
        new StatementCache<>(8 * org.messagepump.core.Limits.MAX_BATCH_SIZE);

    Statements(BalancerTables tables) {
      this.tables = tables;
      this.restore =
          StatementCache.render(
              dsl -> restoreQuery(tables, dsl),
              "id",
              "group",
              "key",
              "content",
              "properties",
              "received",
              "attempts");
      this.racedHeads = StatementCache.render(dsl -> racedHeadsQuery(tables, dsl), "group", "keys");
      this.moveBack =
          StatementCache.render(
              dsl ->
                  placeQuery(
                      tables, dsl, StatementCache.parameter("place", SQLDataType.BIGINT), false),
              "place",
              "group",
              "key");
      this.places =
          StatementCache.render(
              dsl ->
                  dsl.select(tables.rotation.nextval())
                      .from(
                          DSL.generateSeries(
                              DSL.inline(1),
                              StatementCache.parameter("count", SQLDataType.INTEGER))),
              "count");
      this.rejoin =
          StatementCache.render(
              dsl -> placeQuery(tables, dsl, tables.rotation.nextval(), true), "group", "key");
      this.failures =
          StatementCache.render(
              dsl ->
                  dsl.select(P_FAILURES)
                      .from(tables.partitions)
                      .where(DeliveryQueries.keyParameters()),
              "group",
              "key");
      this.firstFree =
          StatementCache.render(
              dsl ->
                  dsl.select(M_ID, M_CONTENT, M_PROPERTIES, M_RECEIVED_AT, M_ATTEMPTS)
                      .from(tables.messages)
                      .where(M_GROUP.eq(GROUP_PARAMETER))
                      .and(M_KEY.eq(DeliveryQueries.KEY))
                      .orderBy(M_ID)
                      .limit(DSL.inline(1))
                      .forUpdate()
                      .skipLocked(),
              "group",
              "key");
      this.isEmpty =
          StatementCache.render(
              dsl ->
                  dsl.select(
                      DSL.field(
                          DSL.exists(
                              DSL.selectOne()
                                  .from(tables.messages)
                                  .where(M_GROUP.eq(GROUP_PARAMETER))
                                  .and(M_KEY.eq(DeliveryQueries.KEY))))),
              "group",
              "key");
      this.joinedAbove =
          StatementCache.render(dsl -> dsl.select(joinedAbove(tables)), "group", "a2");
    }

    /**
     * The acquisition statement of one shape (see {@link #acquireQuery} and {@link #text}), with
     * the parameters of {@link #PARAMETERS} it uses (a shape uses only some of the bounds). The
     * group as a one-row subquery "(select ?)": the planner cannot look at its value, so every plan
     * it makes has the same cost, and after five executions the connection keeps the generic plan.
     * With a plain "= ?" the custom plan of a group with few keys looked cheaper (it expects fewer
     * rows than the LIMIT) and was made again at every execution. The ranges' lower bounds
     * likewise, for the same reason; a range's upper bound (a filter on {@code rotation + 0}) and
     * the joined-key step's group are plain parameters, whose values do not move the estimated
     * cost.
     */
    StatementCache.Statement acquire(int max, int shape, int perKey) {
      return acquire.statementOfSome(
          ((long) shape << 48) | ((long) max << 24) | perKey,
          dsl -> acquireQuery(tables, dsl, groupParam(), max, shape, perKey),
          PARAMETERS);
    }
  }

  private static Statements statements(BalancerTables tables) {
    return tables.statements(Statements.class, Statements::new);
  }

  /**
   * The acquisition statement of the schema of {@code tables} for {@code max} keys, of shape {@code
   * shape} ({@link #WALK_OPEN}, {@link #WALK_AFTER}, {@link #WALK_LAP}, {@link #WALK_BOUNDED}, with
   * {@link #MOVE_BACK} or not), taking up to {@code perKey} consecutive messages of each key.
   * {@code max} is written into the text (an integer of the code, never data): with the limit as a
   * parameter PostgreSQL built a custom plan at every execution (0.38 ms per delivery in the server
   * log; a bound LIMIT measured 1.67-2.40x slower), while with only the group bound it settles on
   * one generic plan per connection. A pump uses one {@code max} (its batch size) nearly always, so
   * there are few texts. What each marker binds is in {@link Text#roles()}.
   *
   * <p>PostgreSQL estimates a range with two bounds on parameters as half a percent of the keys, a
   * single bound as a third. In a group of 100 keys (the bench's drain) a statement for 10 keys
   * reads every key row and sorts them (once per 10 deliveries) whatever its bounds; a statement
   * for one key reads the ready index from the cursor with two bounds as with one. The second range
   * has one bound ({@code (MIN, cursor]}): with two bounds on both ranges, the generic plan of a
   * batch of one read every key row and sorted them at each delivery (a sequential scan under the
   * row locks, which keep the sort from stopping early).
   *
   * <p>The texts are kept with the schema's tables ({@link BalancerTables#statements}), not per
   * driver: they do not depend on the group, which is bound, and a batch of 10 asks for every
   * {@code max} from 1 to 10 over time.
   */
  public static Text text(BalancerTables tables, int max, int shape, int perKey) {
    return new Text(statements(tables).acquire(max, shape, Math.min(perKey, max)));
  }

  /**
   * The one acquisition statement (with lockPartition): up to {@code max} ready keys of the group,
   * first those whose rotation lies in {@code (a1, a2]}, then — only if these are fewer than {@code
   * max} — those in {@code (b1, b2]}, each range lowest rotation first, locked {@code FOR NO KEY
   * UPDATE SKIP LOCKED}; the first {@code perKey} messages of each (its head, or a run) are deleted
   * and returned, up to {@code max} messages in all. {@code shape} is a walk ({@link #WALK_OPEN},
   * {@link #WALK_AFTER}, {@link #WALK_LAP}, {@link #WALK_BOUNDED}), with {@link #MOVE_BACK} or not.
   * A walk from a cursor passes {@code (cursor, highest of the lap]} and {@code (min, cursor]}: the
   * keys after the cursor, then round from the lowest (the next lap), in one statement; a batch of
   * one gets the first range alone and the next lap from a statement of its own. The key row is not
   * written: its lock is the claim, and the rotation column stays as it is (the caller's cursor
   * moves instead), so a delivery adds no row version and no index entry to {@code partitions} —
   * unless a key joined above the lap's highest rotation: then each key of its first range gets a
   * new place ({@link Claim#place()}), drawn by the statement itself in a lap that already saw such
   * a key ({@link #MOVE_BACK}), else by {@link #drawPlaces} right after it, which the driver writes
   * once the delivery's outcome is known.
   *
   * <p>The claims of one key come in id order, one after the other. A run is all or nothing: when
   * the statement could not delete every message it chose for a key (a raced key, see {@link
   * RacedKey}), the ones it did delete are written back at once, so that a later message is never
   * delivered while an earlier one is still stored, and the key is raced.
   *
   * <p>The delete is the success bookkeeping done up front, in the pump's transaction: it commits
   * with the handler's writes, a rollback (or a dead connection) brings the message back, and every
   * outcome that keeps the message (requeue, hand-off, postponement, parking) writes it back with
   * its id ({@link #restore}), so its place at the head of its key is kept.
   *
   * <p>The statement is rendered once per {@code max}, shape and {@code perKey} with bind markers
   * (see {@link #text}) and run through JDBC: the group and the bounds are bound. A message whose
   * columns cannot be read and cannot be kept as they are stored (no raw value could be read
   * either: not seen with the PostgreSQL driver, which hands out any column as text) fails the
   * acquisition, which rolls back and deletes nothing.
   */
  private Acquired lockKeys(Tx tx, int max, int shape, long a1, long a2, long b1, long b2)
      throws SQLException {
    int perKey = messagesPerTurn;
    Connection connection = tx.connection();
    List<Claim> claims = new ArrayList<>();
    List<Integer> parts = new ArrayList<>();
    List<EmptyKey> empty = new ArrayList<>();
    List<RacedKey> raced = new ArrayList<>();
    // Keys of a run whose message was chosen but not deleted (raced), and the claims of those keys
    // that were deleted, to be written back.
    java.util.Set<String> racedKeys = new java.util.HashSet<>();
    // The places drawn, per key (the highest of its rows).
    java.util.Map<String, long[]> places = new java.util.LinkedHashMap<>();
    int lastPart = -1;
    long last = Long.MIN_VALUE;
    int rows = 0;
    boolean joinedAbove = false;
    boolean drawnAbove = false;
    long top = NONE;
    StatementCache.Statement statement = statements.acquire(max, shape, Math.min(perKey, max));
    Columns columns = Columns.of(shape);
    try (PreparedStatement ps = connection.prepareStatement(statement.sql())) {
      // The parameters this shape uses, bound one by one: no array, no boxed bound per poll.
      List<String> names = statement.parameters();
      for (int p = 0; p < names.size(); p++) {
        switch (names.get(p)) {
          case "group" -> statement.bindParameter(ps, p, group);
          case "a1" -> statement.bindLong(ps, p, a1);
          case "a2" -> statement.bindLong(ps, p, a2);
          case "b1" -> statement.bindLong(ps, p, b1);
          default -> statement.bindLong(ps, p, b2);
        }
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows++;
          String key = rs.getString(1);
          long rotation = rs.getLong(2);
          int part = rs.getInt(4);
          // The walk's last key: the highest rotation of the last range that gave any.
          if (part > lastPart || (part == lastPart && rotation > last)) {
            lastPart = part;
            last = rotation;
          }
          rs.getLong(5);
          boolean headless = rs.wasNull();
          if (columns.joined != 0) {
            long joined = rs.getLong(columns.joined);
            if (columns.exact) {
              joinedAbove |= !rs.wasNull();
            } else {
              drawnAbove |= !rs.wasNull() && joined > a2;
            }
            if (part == 0 && !headless) {
              // A key of the first range with a head: it takes a place if a key joined above.
              places.computeIfAbsent(key, k -> new long[] {part, rotation, NONE});
            }
          }
          if (columns.top != 0) {
            long t = rs.getLong(columns.top);
            if (!rs.wasNull()) {
              top = Math.max(top, t);
            }
          }
          if (columns.place != 0) {
            long place = rs.getLong(columns.place);
            if (!rs.wasNull()) {
              long[] p = places.computeIfAbsent(key, k -> new long[] {part, rotation, NONE});
              p[2] = Math.max(p[2], place);
            }
          }
          if (headless) {
            empty.add(new EmptyKey(key, rotation));
            continue;
          }
          long id = rs.getLong(6);
          if (rs.wasNull()) {
            if (racedKeys.add(key)) {
              raced.add(new RacedKey(key, rotation, rs.getInt(3), NONE));
            }
            continue;
          }
          claims.add(claim(rs, group, key, rotation, id, rs.getInt(3), 7, NONE));
          parts.add(part);
        }
      }
    }
    if (!racedKeys.isEmpty() && perKey > 1) {
      // Only a run can have part of its messages deleted: write those back (a rare path).
      for (int k = claims.size() - 1; k >= 0; k--) {
        Claim c = claims.get(k);
        if (racedKeys.contains(c.message().key())) {
          restore(connection, c.message(), null);
          claims.remove(k);
          parts.remove(k);
        }
      }
    }
    if (drawnAbove) {
      // The sequence was drawn above the lap: maybe by a key that joined, maybe by another
      // group's keys or another process's turns. A statement of its own looks, with a snapshot
      // taken after this statement's, so it sees every join this statement could have seen (and
      // perhaps one more, whose key then goes before this statement's keys: it became ready before
      // they are handled). The rest of the lap looks in every statement (EXACT).
      joinedAbove = joinedAboveNow(connection, a2);
    }
    if (columns.joined != 0) {
      if (joinedAbove) {
        drawPlaces(connection, places);
      } else {
        places.clear();
      }
    }
    long drawn = NONE;
    if (!places.isEmpty()) {
      java.util.Map<String, Long> byKey = inWalkOrder(places);
      for (long p : byKey.values()) {
        drawn = Math.max(drawn, p);
      }
      claims.replaceAll(c -> c.withPlace(byKey.getOrDefault(c.message().key(), NONE)));
      raced.replaceAll(
          r ->
              new RacedKey(r.key(), r.rotation(), r.failures(), byKey.getOrDefault(r.key(), NONE)));
    }
    return new Acquired(
        walkOrder(claims, parts),
        empty,
        raced,
        rows,
        last,
        lastPart,
        joinedAbove,
        drawnAbove,
        top,
        drawn);
  }

  /**
   * Whether a ready key of the group joined above {@code ceiling} (the lap's highest rotation), by
   * the step of the ready index the {@link #EXACT} shapes carry, in a statement of its own.
   */
  private boolean joinedAboveNow(Connection connection, long ceiling) throws SQLException {
    try (PreparedStatement ps = statements.joinedAbove.prepare(connection, group, ceiling);
        ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        return false;
      }
      rs.getLong(1);
      return !rs.wasNull();
    }
  }

  /**
   * Where the optional columns of an acquisition statement of one shape are (0: the shape has no
   * such column): after the thirteen every shape returns, the rotation of a key that joined above
   * the first range ({@code joined}), the highest ready rotation ({@code top}) and the place drawn
   * for a key ({@code place}).
   */
  private record Columns(int joined, int top, int place, boolean exact) {

    private static final Columns[] BY_SHAPE = new Columns[16];

    static {
      for (int shape = 0; shape < BY_SHAPE.length; shape++) {
        int walk = shape & 3;
        boolean moveBack = (shape & MOVE_BACK) != 0;
        boolean mid = walk == WALK_OPEN || walk == WALK_AFTER;
        int next = 14;
        // Keys joined above the lap are looked for by a walk in the middle of a lap (until one
        // is seen: then every turn of the lap moves its key back, and nothing is looked for): the
        // rotation sequence's last value, or with EXACT a key's rotation, in the same column; the
        // highest rotation is read by a walk that may start the next lap. With a move back the
        // statement draws the places of its first range's keys; without, a key that joined above
        // the lap is rare, and the places are drawn once it is seen (drawPlaces).
        int joined = !moveBack && mid ? next++ : 0;
        int top = walk == WALK_OPEN || walk == WALK_LAP ? next++ : 0;
        int place = moveBack && mid ? next : 0;
        BY_SHAPE[shape] = new Columns(joined, top, place, (shape & EXACT) != 0);
      }
    }

    static Columns of(int shape) {
      return BY_SHAPE[shape];
    }
  }

  /**
   * Draws a place from the sequence for each key of {@code places} (key to its range, rotation and
   * place), in one statement: the keys a statement served in a lap where it saw, for the first
   * time, a key that joined above the lap. Drawn right after the statement, before the keys are
   * handled, so a key that joins during their deliveries is placed behind them.
   */
  private void drawPlaces(Connection connection, java.util.Map<String, long[]> places)
      throws SQLException {
    if (places.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = statements.places.prepare(connection, places.size());
        ResultSet rs = ps.executeQuery()) {
      java.util.Iterator<long[]> keys = places.values().iterator();
      while (rs.next() && keys.hasNext()) {
        keys.next()[2] = rs.getLong(1);
      }
    }
  }

  /**
   * The places drawn for the keys of one statement, given to the keys in walk order (range, then
   * rotation): the statement draws them row by row in the order its plan produces the rows, and
   * keys served by one statement take their new places in the order they were walked.
   */
  private static java.util.Map<String, Long> inWalkOrder(java.util.Map<String, long[]> places) {
    List<String> keys = new ArrayList<>(places.keySet());
    keys.sort(
        java.util.Comparator.comparingLong((String k) -> places.get(k)[0])
            .thenComparingLong(k -> places.get(k)[1]));
    long[] drawn = places.values().stream().mapToLong(p -> p[2]).sorted().toArray();
    java.util.Map<String, Long> byKey = new java.util.HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      byKey.put(keys.get(i), drawn[i]);
    }
    return byKey;
  }

  /**
   * The claim of a deleted head from the current row of {@code rs}, whose columns from {@code
   * first} on are content, properties, received_at, attempts, received_at and the clock as
   * microseconds, and whether later messages of the key were seen. A message whose columns cannot
   * be read and cannot be kept as they are stored (no raw value could be read either: not seen with
   * the PostgreSQL driver, which hands out any column as text) fails the acquisition, which rolls
   * back and deletes nothing.
   */
  private static Claim claim(
      ResultSet rs,
      String group,
      String key,
      long rotation,
      long id,
      int failures,
      int first,
      long place)
      throws SQLException {
    AcquiredMessage m = Rows.claim(rs, group, key, rotation, id, failures, first, first + 4);
    if (m.problem() != null && m.stored() == null) {
      throw new SQLException(
          "balancer "
              + group
              + ": message "
              + id
              + " cannot be read and could not be kept as stored ("
              + m.problem()
              + "); the acquisition is rolled back");
    }
    return new Claim(m, rs.getBoolean(first + 6), Rows.ageMicros(rs, first + 4, first + 5), place);
  }

  /**
   * Deletes and returns the heads of keys the acquisition statement locked but found raced, in one
   * statement: a new statement has a new snapshot, taken after this transaction locked the keys, so
   * it sees whatever their previous holders committed, and nobody can change their heads any more.
   * Without it a raced key lost its turn for a whole lap: in a batch-10 drain a commit of ten keys
   * just after another worker's snapshot made that worker skip all ten (Jain's index 0.84 over the
   * first 10% of one run). Keys found empty now are left to the next acquisition.
   */
  private List<Claim> deleteRacedHeads(Connection connection, List<RacedKey> raced)
      throws SQLException {
    java.util.Map<String, RacedKey> byKey = new java.util.HashMap<>();
    for (RacedKey r : raced) {
      byKey.put(r.key(), r);
    }
    List<Claim> claims = new ArrayList<>();
    try (PreparedStatement ps =
        statements.racedHeads.prepare(connection, group, byKey.keySet().toArray(new String[0]))) {
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          RacedKey r = byKey.get(rs.getString(1));
          if (r != null) {
            claims.add(
                claim(rs, group, r.key(), r.rotation(), rs.getLong(2), r.failures(), 3, r.place()));
          }
        }
      }
    }
    claims.sort(java.util.Comparator.comparingLong(c -> c.message().oldRotation()));
    return claims;
  }

  /**
   * The statement of {@link #deleteRacedHeads}, rendered once per schema: the group and the keys (a
   * {@code text[]}, unnested once) are its parameters.
   */
  private static org.jooq.Query racedHeadsQuery(BalancerTables tables, DSLContext dsl) {
    Field<String> k = DSL.field(DSL.name("k", "k"), String.class);
    Field<Long> head = DSL.field(headId(tables, "x", GROUP_PARAMETER, k));
    List<Field<?>> returning = new ArrayList<>();
    returning.add(M_KEY);
    returning.add(M_ID);
    returning.addAll(deletedColumns(tables, true));
    // The keys as a one-row subquery: bound directly, the planner sized the unnest by the array
    // it was given, found a custom plan cheaper than the generic one and planned the statement at
    // every execution (0.44 ms of planning against 0.17 of execution, pg_stat_statements).
    Field<String[]> keys = DSL.field(DSL.select(StatementCache.parameter("keys", TEXT_ARRAY)));
    return dsl.deleteFrom(tables.messages)
        .where(M_ID.in(DSL.select(head).from(DSL.unnest(keys).as("k", "k"))))
        .returningResult(returning);
  }

  /**
   * What a delete of heads returns after the id: content, properties, received_at, attempts,
   * received_at and the clock as microseconds, and, with {@code probe}, whether a later message of
   * the key exists (a probe per deleted message; the acquisition statement reads it from its scan
   * of the key instead).
   */
  private static List<Field<?>> deletedColumns(BalancerTables tables, boolean probe) {
    List<Field<?>> columns = new ArrayList<>();
    columns.add(M_CONTENT.as("d_content"));
    columns.add(M_PROPERTIES.as("d_properties"));
    columns.add(M_RECEIVED_AT.as("d_received"));
    columns.add(M_ATTEMPTS.as("d_attempts"));
    columns.add(Rows.micros(M_RECEIVED_AT).as("d_received_us"));
    columns.add(Rows.clockMicros().as("d_now_us"));
    if (probe) {
      columns.add(DeliveryQueries.laterMessageOfKey(tables, DSL.noCondition()).as("d_others"));
    }
    return columns;
  }

  /**
   * The claims in walk order: range by range ({@code parts}, parallel to {@code claims}), lowest
   * rotation first. The statement has no ORDER BY (a sort node at every execution): its rows come
   * in this order as the plan runs them today, and this keeps it so whatever plan PostgreSQL picks.
   */
  private static List<Claim> walkOrder(List<Claim> claims, List<Integer> parts) {
    if (claims.size() < 2) {
      return claims;
    }
    Integer[] order = new Integer[claims.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(
        order,
        java.util.Comparator.comparingInt((Integer i) -> parts.get(i))
            .thenComparingLong(i -> claims.get(i).message().oldRotation())
            .thenComparingLong(i -> claims.get(i).message().messageId()));
    List<Claim> sorted = new ArrayList<>(order.length);
    for (Integer i : order) {
      sorted.add(claims.get(i));
    }
    return sorted;
  }

  /**
   * The id of a key's head, its first message: {@code ORDER BY id LIMIT 1} over the key's messages
   * (ids grow in the order of storing, and a kept message is written back with its own id). Read
   * from {@code messages} itself when {@code alias} is null (so {@code group} and {@code key} may
   * be columns of an outer query), else from a scan of it under that alias. Not locked: the key
   * row's lock is what a claim holds, and every writer of a key's messages holds it too.
   */
  static org.jooq.Select<org.jooq.Record1<Long>> headId(
      BalancerTables tables, String alias, Field<String> group, Field<String> key) {
    Table<?> m = alias == null ? tables.messages : tables.messages.as(alias);
    Field<Long> id = alias == null ? M_ID : DSL.field(DSL.name(alias, "id"), Long.class);
    Field<String> g =
        alias == null ? M_GROUP : DSL.field(DSL.name(alias, "partition_group"), String.class);
    Field<String> k =
        alias == null ? M_KEY : DSL.field(DSL.name(alias, "partition_key"), String.class);
    return DSL.select(id)
        .from(m)
        .where(g.eq(group))
        .and(k.eq(key))
        .orderBy(id)
        .limit(DSL.inline(1));
  }

  /**
   * Ready keys of a group: the group is not paused ({@link BalancerTables#pauses}), and the key has
   * no lease, is not parked, is due, and is not among {@code excluded} (when not null) — the keys
   * this acquisition already holds (SKIP LOCKED does not skip rows the transaction itself locks, so
   * a second round would otherwise return them again). Both are bind values: the excluded keys as
   * one {@code text[]} parameter, whatever their number.
   */
  static Condition ready(BalancerTables tables, Field<String> group, Field<String[]> excluded) {
    Condition ready =
        P_GROUP
            .eq(group)
            .and(P_LEASE_MESSAGE_ID.isNull())
            .and(P_PARKED_AT.isNull())
            .and(P_RESUME_AT.le(clock()));
    if (excluded != null) {
      ready = ready.and(P_KEY.notIn(BalancerTables.keySet(excluded, "x")));
    }
    // The pause check's group is a plain parameter whatever the range's is: an uncorrelated probe
    // of a primary key, planned the same for every value (a one-row subquery cost about 4,000
    // server instructions more per execution, callgrind).
    return ready.and(tables.pauses.notPaused(GROUP_PARAMETER));
  }

  /** A key rotated to the back without lockPartition, with its rotation before. */
  private record Rotated(String key, long rotation) {}

  /**
   * Without {@code lockPartition}, step one (on its own short transaction {@code c}): the {@code
   * max} ready keys with the lowest rotation, moved to the back and committed at once, so other
   * processes see the new order while the messages are handled. The keys {@code taken} by earlier
   * rounds are excluded, as one {@code text[]} parameter.
   */
  private List<Rotated> rotateKeys(Connection c, int max, Collection<String> taken)
      throws SQLException {
    boolean excluding = !taken.isEmpty();
    StatementCache.Statement s =
        statements.rotate.statement(
            excluding ? -max : max,
            dsl -> rotateQuery(tables, dsl, max, excluding),
            excluding ? new String[] {"group", "taken"} : new String[] {"group"});
    List<Rotated> keys = new ArrayList<>(max);
    try (PreparedStatement ps =
            excluding ? s.prepare(c, group, taken.toArray(new String[0])) : s.prepare(c, group);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        keys.add(new Rotated(rs.getString(1), rs.getLong(2)));
      }
    }
    return keys;
  }

  /** The statement of {@link #rotateKeys} for {@code max} keys, excluding the taken ones or not. */
  private static org.jooq.Query rotateQuery(
      BalancerTables tables, DSLContext dsl, int max, boolean excluding) {
    Table<?> c =
        DSL.select(P_GROUP.as("c_group"), P_KEY.as("c_key"), P_ROTATION.as("c_rotation"))
            .from(tables.partitions)
            .where(
                ready(
                    tables,
                    GROUP_PARAMETER,
                    excluding ? StatementCache.parameter("taken", TEXT_ARRAY) : null))
            .orderBy(P_ROTATION)
            // An integer of the code, written into the text: a bound LIMIT makes PostgreSQL plan
            // again at every execution.
            .limit(DSL.inline(max))
            .forNoKeyUpdate()
            .skipLocked()
            .asTable("c");
    return dsl.update(tables.partitions)
        .set(P_ROTATION, tables.rotation.nextval())
        .set(P_JOINED, DSL.inline(false))
        .from(c)
        .where(P_GROUP.eq(C_GROUP))
        .and(P_KEY.eq(C_KEY))
        .returningResult(C_KEY, C_ROTATION);
  }

  /**
   * Without {@code lockPartition}, step two (in the pump's transaction): the first message of a key
   * that no other transaction holds, locked {@code FOR UPDATE SKIP LOCKED}; {@code null} when every
   * message of the key is in flight or the key is empty. A row whose columns cannot be read is a
   * claim with a {@link AcquiredMessage#problem()}.
   */
  private AcquiredMessage lockFirstFreeMessage(Connection c, String key, long oldRotation)
      throws SQLException {
    int failures = 0;
    try (PreparedStatement ps = statements.failures.prepare(c, group, key);
        ResultSet rs = ps.executeQuery()) {
      if (rs.next()) {
        failures = rs.getInt(1);
      }
    }
    try (PreparedStatement ps = statements.firstFree.prepare(c, group, key);
        ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        return null;
      }
      return Rows.claim(rs, group, key, oldRotation, rs.getLong(1), failures, 2);
    }
  }

  /** True when the key has no message at all (committed or ours). */
  private boolean isEmpty(Connection c, String key) throws SQLException {
    try (PreparedStatement ps = statements.isEmpty.prepare(c, group, key);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() && !rs.getBoolean(1);
    }
  }

  /**
   * The statement that writes a message deleted by acquisition back (see {@link #restore}): id,
   * group, key, content, properties, received_at, attempts. A jOOQ plain-SQL template: jOOQ 3.19
   * renders no {@code OVERRIDING SYSTEM VALUE}, which an identity column {@code GENERATED ALWAYS}
   * needs to take an id given. Its parts are the table (rendered into the schema) and named
   * parameters, so every value is bound by the {@link StatementCache} as in any other statement.
   * received_at is bound as it comes: the text stored (a row that could not be decoded) or the
   * decoded time, cast to {@code timestamptz} by the statement either way.
   */
  private static org.jooq.Query restoreQuery(BalancerTables tables, DSLContext dsl) {
    return dsl.query(
        "insert into {0}"
            + " (id, partition_group, partition_key, content, properties, received_at, attempts)"
            + " overriding system value values ({1}, {2}, {3}, {4}, cast({5} as jsonb),"
            + " cast({6} as timestamptz), {7}) on conflict (id) do nothing",
        tables.messages,
        StatementCache.parameter("id", SQLDataType.BIGINT),
        GROUP_PARAMETER,
        DeliveryQueries.KEY,
        StatementCache.parameter("content", SQLDataType.BLOB),
        StatementCache.parameter("properties", SQLDataType.CLOB),
        StatementCache.parameter("received", SQLDataType.OTHER),
        StatementCache.parameter("attempts", SQLDataType.INTEGER));
  }

  /**
   * Writes a message that acquisition deleted back, in the pump's transaction, with its id (so it
   * keeps its place at the head of its key), group, key, content, received_at and attempts, and
   * with {@code properties} (its own unless a requeue replaced them). A row that could not be
   * decoded is written back as it was stored. Nothing happens when the message is there already (an
   * earlier write-back of this delivery that was not rolled back). Returns true when it wrote.
   */
  public boolean restore(Connection connection, AcquiredMessage m, String properties)
      throws SQLException {
    AcquiredMessage.Stored raw = m.stored();
    return statements.restore.executeUpdate(
            connection,
            m.messageId(),
            m.group(),
            m.key(),
            raw != null ? raw.content() : m.content(),
            properties != null ? properties : raw != null ? raw.properties() : m.propertiesJson(),
            raw != null ? raw.receivedAt() : m.receivedAt(),
            m.attempts())
        == 1;
  }

  /**
   * Moves keys back to the places their turns drew ({@link Claim#place()}), in one round trip:
   * {@code keys} and {@code places} are parallel. A key deleted since (found empty) is not there to
   * update.
   */
  public void moveBack(Connection connection, List<String> keys, List<Long> places)
      throws SQLException {
    StatementCache.Statement s = statements.moveBack;
    try (PreparedStatement ps = s.prepare(connection, places.get(0), group, keys.get(0))) {
      if (keys.size() == 1) {
        ps.executeUpdate();
        return;
      }
      ps.addBatch();
      for (int i = 1; i < keys.size(); i++) {
        s.bind(ps, places.get(i), group, keys.get(i));
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /**
   * Gives a key that joined the rotation again a new place at the back, as a key that joined (a
   * message was stored into it while its last one was being handled: it is not deleted as empty).
   */
  public void rejoin(Connection connection, String key) throws SQLException {
    statements.rejoin.executeUpdate(connection, group, key);
  }

  /**
   * The statement of {@link #moveBack} (place, group, key) with {@code place} a parameter, or of
   * {@link #rejoin} (group, key) with {@code place} a rotation drawn from the sequence.
   */
  private static org.jooq.Query placeQuery(
      BalancerTables tables, DSLContext dsl, Field<Long> place, boolean joined) {
    return dsl.update(tables.partitions)
        .set(P_ROTATION, place)
        .set(P_JOINED, DSL.inline(joined))
        .where(DeliveryQueries.keyParameters());
  }

  /**
   * A balancer driver's place in the rotation (with lockPartition): the rotation of the last key it
   * took, in the {@code lap}-th walk over the keys, which ends at {@code ceiling}, the highest
   * rotation of the keys that were ready when the lap began (keys that join later have higher
   * rotations and wait for the next lap). {@code moveBack}: a key joined during the lap, so each
   * turn moves its key back, to a rotation drawn then ({@code drawn}: the highest this driver drew
   * in the lap). {@code exact}: the lap saw the rotation sequence drawn above its ceiling, so its
   * statements look for a joined key with a step of the ready index ({@link #EXACT}) instead of
   * reading the sequence's last value.
   *
   * <p>Keys served early in a lap keep their rotations, below the cursor, so they come round again
   * in the next lap in the order they were served, before every key that joined after them; keys
   * served after a key joined are moved behind it. So keys are served in the order they became
   * ready, and a delivery writes nothing to its key row unless a key joined during the lap.
   *
   * <p>Process-local and lost with the process, which is harmless: a new driver starts a lap at the
   * lowest rotation. Every process walks all ready keys at its own pace, so every key is served
   * once per lap of every process.
   */
  public record Cursor(
      long lap, long rotation, long ceiling, boolean moveBack, long drawn, boolean exact) {

    /** Before the first lap: the first walk starts one from the lowest rotation. */
    public static final Cursor START = new Cursor(-1, Long.MAX_VALUE, Long.MAX_VALUE, false, NONE);

    /** A cursor in a lap that has not seen the sequence drawn above its ceiling. */
    public Cursor(long lap, long rotation, long ceiling, boolean moveBack, long drawn) {
      this(lap, rotation, ceiling, moveBack, drawn, false);
    }

    /** True before the first lap: nothing is known of it yet, the next walk starts one. */
    public boolean atLapEnd() {
      return rotation == Long.MAX_VALUE;
    }

    /**
     * The cursor after a Busy turn of the key at {@code rotation}: just before the key when the
     * cursor has passed it, so the key keeps its place and is the next served once due.
     */
    public Cursor keepingPlaceOf(long rotation) {
      long before = rotation - 1;
      return before < this.rotation
          ? new Cursor(lap, before, ceiling, moveBack, drawn, exact)
          : this;
    }

    /**
     * The later of two places: the later lap, then the higher rotation. A walk of an earlier lap
     * that ends after a later lap began may have drawn places above that lap's highest rotation:
     * the lap is raised to include them (their keys were served in the earlier lap).
     */
    public static Cursor later(Cursor a, Cursor b) {
      if (a.lap != b.lap) {
        Cursor newer = a.lap > b.lap ? a : b;
        Cursor older = newer == a ? b : a;
        return new Cursor(
            newer.lap,
            newer.rotation,
            Math.max(newer.ceiling, older.drawn),
            newer.moveBack,
            newer.drawn,
            newer.exact);
      }
      return new Cursor(
          a.lap,
          Math.max(a.rotation, b.rotation),
          Math.max(a.ceiling, b.ceiling),
          a.moveBack || b.moveBack,
          Math.max(a.drawn, b.drawn),
          a.exact || b.exact);
    }

    /** One acquisition's walk from a cursor, statement by statement. */
    public static final class Walk {
      private long lap;
      private long ceiling;
      private boolean moveBack;
      private long drawn;
      private boolean exact;
      private Cursor reached;

      /** A walk from {@code start}. */
      public Walk(Cursor start) {
        this.lap = start.lap;
        this.ceiling = start.ceiling;
        this.moveBack = start.moveBack;
        this.drawn = start.drawn;
        this.exact = start.exact;
      }

      /** The lap the walk is in. */
      public long lap() {
        return lap;
      }

      /** The highest rotation of the lap the walk is in. */
      public long ceiling() {
        return ceiling;
      }

      /** True when the walk's turns move their keys back (a key joined during the lap). */
      public boolean moveBack() {
        return moveBack;
      }

      /**
       * True when the walk's statements look for a joined key with a step of the ready index (the
       * lap saw the sequence drawn above its ceiling).
       */
      public boolean exact() {
        return exact;
      }

      /** Where the walk got to; null when no statement returned a key. */
      public Cursor reached() {
        return reached;
      }

      /**
       * After a statement of shape {@code shape} ({@link Acquisition#WALK_OPEN} and so on) that
       * returned keys: the places it drew, a key that joined above the lap (every later turn of the
       * lap moves its key back), and the next lap when the statement walked round into it — whose
       * highest rotation is the highest of the ready keys then, or of the places this driver drew
       * in the lap that ends (their keys may not have committed them yet), so that every key served
       * in a lap is walked in the next.
       */
      public void took(int shape, Acquired a) {
        drawn = Math.max(drawn, a.drawn());
        boolean wrapped = shape == WALK_LAP || (shape == WALK_OPEN && a.lastPart() == 1);
        if (wrapped) {
          lap++;
          ceiling = Math.max(a.top(), drawn);
          moveBack = false;
          drawn = NONE;
          exact = false;
        } else if (shape != WALK_BOUNDED) {
          moveBack |= a.joinedAbove();
          exact |= a.drawnAbove();
        }
        reached = new Cursor(lap, a.lastRotation(), ceiling, moveBack, drawn, exact);
      }
    }
  }
}
