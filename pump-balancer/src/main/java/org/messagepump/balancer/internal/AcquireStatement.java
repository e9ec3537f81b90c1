package org.messagepump.balancer.internal;

import java.util.ArrayList;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.ResultQuery;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.internal.Schema.M;
import org.messagepump.balancer.internal.Schema.P;

/**
 * The text of the acquisition statement (with lockPartition), in its shapes: rendered once per
 * schema by jOOQ with bind markers, and run by {@link DeliveryQueries#acquireLocked}.
 */
public final class AcquireStatement {

  // The columns of the candidates CTE "c"; DeliveryQueries's statements name them too.
  static final Field<String> C_GROUP = DSL.field(DSL.name("c", "c_group"), String.class);
  static final Field<String> C_KEY = DSL.field(DSL.name("c", "c_key"), String.class);
  static final Field<Long> C_ROTATION = DSL.field(DSL.name("c", "c_rotation"), Long.class);
  private static final Field<Integer> C_FAILURES =
      DSL.field(DSL.name("c", "c_failures"), Integer.class);
  private static final Field<Integer> C_PART = DSL.field(DSL.name("c", "c_part"), Integer.class);

  private AcquireStatement() {}

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
   * The acquisition statements of one group in one schema, rendered once by jOOQ with bind markers
   * and run through plain JDBC (rendering per poll was a large part of the pump's CPU per delivery
   * on a two-core machine shared with PostgreSQL).
   */
  public static final class Prepared {
    private final String group;
    private final Schema.Ctx ctx;

    /** The statements of {@code group} in the schema of {@code ctx}. */
    public Prepared(Schema.Ctx ctx, String group) {
      this.ctx = ctx;
      this.group = group;
    }

    /** The group. */
    public String group() {
      return group;
    }

    /** The schema's context. */
    public Schema.Ctx ctx() {
      return ctx;
    }

    /**
     * The acquisition statement for {@code max} keys of a walk from a cursor ({@link #WALK_OPEN}):
     * the keys after it up to the lap's highest rotation, then those up to it. {@code max} is
     * written into the text (an integer of the code, never data): with the limit as a parameter
     * PostgreSQL built a custom plan at every execution (0.38 ms per delivery in the server log; a
     * bound LIMIT measured 1.67-2.40x slower), while with only the group bound it settles on one
     * generic plan per connection. A pump uses one {@code max} (its batch size) nearly always, so
     * there are few texts. The parameters are in {@link Text#roles()}.
     *
     * <p>PostgreSQL estimates a range with two bounds on parameters as half a percent of the keys,
     * a single bound as a third. In a group of 100 keys (the bench's drain) a statement for 10 keys
     * reads every key row and sorts them (once per 10 deliveries) whatever its bounds; a statement
     * for one key reads the ready index from the cursor with two bounds as with one. The second
     * range has one bound ({@code (MIN, cursor]}): with two bounds on both ranges, the generic plan
     * of a batch of one read every key row and sorted them at each delivery (a sequential scan
     * under the row locks, which keep the sort from stopping early).
     *
     * <p>The texts are kept per schema ({@link Schema.Ctx#acquireText}), not per driver: they do
     * not depend on the group, which is bound. A batch of 10 asks for every {@code max} from 1 to
     * 10 over time, and each new driver rendering its own through jOOQ was a burst of rendering
     * (and of JIT compilation) at its start (docs/benchmarks.md).
     */
    public Text acquire(int max, int perKey) {
      return text(max, WALK_OPEN, perKey);
    }

    /** The text of a statement of shape {@code shape} (see {@link #acquire}), once per schema. */
    Text text(int max, int shape, int perKey) {
      return ctx.acquireText(max, shape, Math.min(perKey, max), AcquireStatement::renderAcquire);
    }

    /** As {@link #acquire(int, int)}, with the first range only ({@link #WALK_AFTER}). */
    public Text acquireAfter(int max, int perKey) {
      return text(max, WALK_AFTER, perKey);
    }

    /** The walk from the start of a lap ({@link #WALK_LAP}). */
    public Text acquireLap(int max, int perKey) {
      return text(max, WALK_LAP, perKey);
    }

    /** As {@link #acquire(int, int)}, with both bounds on each range ({@link #WALK_BOUNDED}). */
    public Text acquireBounded(int max, int perKey) {
      return text(max, WALK_BOUNDED, perKey);
    }

    /** {@code shape} with keys moved back by every turn ({@link #MOVE_BACK}). */
    public Text movingBack(int max, int shape, int perKey) {
      return text(max, shape | MOVE_BACK, perKey);
    }
  }

  /**
   * An acquisition statement's text and what each of its parameters is: {@link #GROUP} (the group)
   * or the number of a bound, 1-4 for {@code a1}, {@code a2}, {@code b1}, {@code b2}.
   */
  public record Text(String sql, int[] roles) {
    /** The group. */
    public static final int GROUP = 0;
  }

  /** The text of the acquisition statement (see {@link #acquireQuery} and {@link Prepared}). */
  static Text renderAcquire(Schema.Ctx ctx, int max, int shape, int perKey) {
    DSLContext render = ctx.render();
    // The group as a one-row subquery "(select ?)": the planner cannot look at its value, so
    // every plan it makes has the same cost, and after five executions the connection keeps
    // the generic plan. With a plain "= ?" the custom plan of a group with few keys looked
    // cheaper (it expects fewer rows than the LIMIT) and was made again at every execution.
    // The rotation bounds likewise, for the same reason.
    Field<String> groupParam = DSL.field(DSL.select(DSL.val("")));
    ResultQuery<?> q = acquireQuery(render, groupParam, max, shape, perKey);
    // The parameters' order, as acquireLocked binds them: each bound is rendered with its own
    // number as its value.
    List<Object> values = q.getBindValues();
    int[] roles = new int[values.size()];
    for (int i = 0; i < roles.length; i++) {
      Object v = values.get(i);
      if (v instanceof String) {
        roles[i] = Text.GROUP;
      } else if (v instanceof Long bound && bound >= 1 && bound <= 4) {
        roles[i] = bound.intValue();
      } else {
        throw new IllegalStateException("the acquisition statement has a parameter " + v);
      }
    }
    return new Text(render.render(q), roles);
  }

  /**
   * The acquisition statement (see {@link DeliveryQueries#acquireLocked}) of shape {@code shape},
   * up to {@code perKey} consecutive messages of each key, {@code max} rows in all: the group and
   * the bounds of the ranges are bind values (each bound rendered with its number, 1-4, as its
   * value; see {@link Text}), {@code max} and {@code perKey} are written as integers. One row per
   * message (a key's rows in no particular order, sharing its columns): key, rotation, failures,
   * range (0 or 1), message id (null: the key has no message), deleted id (null: it was not there
   * to delete), content, properties, received_at, attempts, received_at and the clock as
   * microseconds, whether a later message of the key was seen, the rotation of a key that joined
   * above the first range (null: none seen, or not looked for), the highest rotation of the group's
   * ready keys (null: not asked) and the place drawn for the key (null: none).
   */
  public static ResultQuery<?> acquireQuery(
      DSLContext dsl, Field<String> group, int max, int shape, int perKey) {
    int walk = shape & 3;
    boolean moveBack = (shape & MOVE_BACK) != 0;
    // Keys joined above the lap are looked for by a walk in the middle of a lap (until one is
    // seen: then every turn of the lap moves its key back, and nothing is looked for); the highest
    // rotation is read by a walk that may start the next lap.
    boolean looksAbove = !moveBack && (walk == WALK_OPEN || walk == WALK_AFTER);
    boolean readsTop = walk == WALK_OPEN || walk == WALK_LAP;
    boolean draws = walk == WALK_OPEN || walk == WALK_AFTER;
    // Each range is its own locking subquery (a locking clause is not allowed on a UNION's
    // branches); the outer LIMIT stops the Append before the second range is read, and so before
    // any of its rows is locked, when the first range already gave max keys.
    Table<?> c =
        walk == WALK_AFTER || walk == WALK_LAP
            ? DSL.select(DSL.asterisk())
                .from(range(group, max, "a", 0, 1, walk == WALK_AFTER ? 2 : 0))
                .limit(DSL.inline(max))
                .asTable("c")
            : walk == WALK_BOUNDED
                ? DSL.select(DSL.asterisk())
                    .from(range(group, max, "a", 0, 1, 2))
                    .unionAll(
                        DSL.select(DSL.asterisk()).from(range(groupParam(), max, "b", 1, 3, 4)))
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
                    .from(range(group, max, "a", 0, 1, 2))
                    .unionAll(DSL.select(DSL.asterisk()).from(nextLap(max)))
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
        DSL.select(M.ID.as("i_id"), DSL.field("{0}.ctid", M.T).as("i_ctid"))
            .from(M.T)
            .where(M.GROUP.eq(C_GROUP))
            .and(M.KEY.eq(C_KEY))
            .orderBy(M.ID)
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
    CommonTableExpression<?> h =
        DSL.name("h")
            .as(
                DSL.select(
                        C_KEY,
                        C_ROTATION,
                        C_FAILURES,
                        C_PART,
                        DSL.field(DSL.name("hd", "h_id")).as("h_id"),
                        DSL.field(DSL.name("hd", "h_ctid")).as("h_ctid"),
                        DSL.field(DSL.name("hd", "h_more")).as("h_more"),
                        (looksAbove ? joinedAbove(group) : DSL.castNull(SQLDataType.BIGINT))
                            .as("h_joined"),
                        (walk == WALK_LAP
                                ? top(group)
                                : readsTop
                                    // Only when the walk wrapped round into the next lap: an
                                    // InitPlan runs when a row first asks for its value.
                                    ? DSL.when(C_PART.eq(DSL.inline(1)), top(group))
                                    : DSL.castNull(SQLDataType.BIGINT))
                            .as("h_top"))
                    .from(c.leftJoin(run).on(DSL.trueCondition()))
                    .limit(DSL.inline(max)));
    Field<Long> hId = DSL.field(DSL.name("h", "h_id"), Long.class);
    // The messages of h, deleted. The delete decides on each row's newest version: a message that
    // the previous holder of the key deleted, wrote back or updated, committed after this
    // statement's snapshot, is not deleted and not returned (its ctid no longer names a live
    // version; the key is "raced": deleteRacedHeads takes it). Deleting here, not at completion,
    // saves a statement per delivery.
    List<Field<?>> deleted = new ArrayList<>();
    deleted.add(M.ID.as("d_id"));
    deleted.addAll(
        DeliveryQueries.deletedColumns(false)); // no d_others: the key's scan says it (h_more)
    CommonTableExpression<?> d =
        DSL.name("d")
            .as(
                dsl.deleteFrom(M.T)
                    .using(DSL.table(DSL.name("h")))
                    .where(DSL.condition("{0}.ctid = {1}", M.T, hField("h_ctid")))
                    .returningResult(deleted));
    return dsl.with(h)
        .with(d)
        .select(
            hField("c_key"),
            hField("c_rotation"),
            hField("c_failures"),
            hField("c_part"),
            hId,
            dField("d_id"),
            dField("d_content"),
            dField("d_properties"),
            dField("d_received"),
            dField("d_attempts"),
            dField("d_received_us"),
            dField("d_now_us"),
            hField("h_more"),
            hField("h_joined"),
            hField("h_top"),
            draws ? place(moveBack) : DSL.castNull(SQLDataType.BIGINT))
        // No ORDER BY (a sort node per delivery): acquireLocked puts the claims in walk order.
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
   * A new place for a key of the first range ({@code c_part} 0) with a head: a rotation drawn from
   * the sequence — always with {@code moveBack}, else only when a key that joined above the lap was
   * seen. The statement draws it while the key is served, so a key that joins during the delivery
   * is placed behind it.
   */
  private static Field<Long> place(boolean moveBack) {
    Condition turn =
        DSL.field(DSL.name("h", "c_part"), Integer.class)
            .eq(DSL.inline(0))
            .and(hField("h_id").isNotNull());
    if (!moveBack) {
      turn = turn.and(hField("h_joined").isNotNull());
    }
    return DSL.when(turn, Schema.ROTATION.nextval());
  }

  /**
   * The lowest rotation above the first range's upper bound (bound 2) of a ready key of the group
   * that joined (not a key a turn moved back): one step of the ready index, once per execution (an
   * InitPlan). Such a key joined after the lap began.
   */
  private static Field<Long> joinedAbove(Field<String> group) {
    return DSL.field(
        DSL.select(P.ROTATION)
            .from(P.T)
            .where(P.GROUP.eq(group))
            .and(P.ROTATION.gt(bound(2)))
            .and(P.LEASE_MESSAGE_ID.isNull())
            .and(P.PARKED_AT.isNull())
            .and(P.JOINED)
            .orderBy(P.ROTATION)
            .limit(DSL.inline(1)));
  }

  /**
   * The highest rotation of the group's ready keys (locked, postponed or not): a backward step of
   * the ready index, once per execution. The next lap's walk ends there.
   */
  private static Field<Long> top(Field<String> group) {
    return DSL.field(
        DSL.select(DSL.max(P.ROTATION))
            .from(P.T)
            .where(P.GROUP.eq(group))
            .and(P.LEASE_MESSAGE_ID.isNull())
            .and(P.PARKED_AT.isNull()));
  }

  /**
   * The next lap of a walk that may wrap round ({@link #WALK_OPEN}): ready keys up to the cursor
   * (bound 4) or above the lap's highest rotation (bound 2), in rotation order, locked, marked as
   * range 1.
   */
  private static Table<?> nextLap(int max) {
    return rangeWhere(
        groupParam(), max, "b", 1, P.ROTATION.le(bound(4)).or(P.ROTATION.gt(bound(2))));
  }

  /** The group as a one-row subquery, for a range of its own. */
  private static Field<String> groupParam() {
    return DSL.field(DSL.select(DSL.val("")));
  }

  /** Bound {@code n} (1-4) as a one-row subquery: its number is the value it is rendered with. */
  private static Field<Long> bound(int n) {
    return DSL.field(DSL.select(DSL.val((long) n, SQLDataType.BIGINT)));
  }

  /**
   * One range of the walk: ready keys with {@code lower < rotation <= upper} (bounds {@code lower}
   * and {@code upper} by number, 0 for none), locked, each row marked with the range's number
   * {@code part}.
   */
  private static Table<?> range(
      Field<String> group, int max, String alias, int part, int lower, int upper) {
    Condition bounds = DSL.noCondition();
    if (lower != 0) {
      bounds = bounds.and(P.ROTATION.gt(bound(lower)));
    }
    if (upper != 0) {
      bounds = bounds.and(P.ROTATION.le(bound(upper)));
    }
    return rangeWhere(group, max, alias, part, bounds);
  }

  /** Ready keys of the group whose rotation meets {@code bounds}, locked (see {@link #range}). */
  private static Table<?> rangeWhere(
      Field<String> group, int max, String alias, int part, Condition bounds) {
    return DSL.select(
            P.GROUP.as("c_group"),
            P.KEY.as("c_key"),
            P.ROTATION.as("c_rotation"),
            P.FAILURES.as("c_failures"),
            DSL.inline(part).as("c_part"))
        .from(P.T)
        .where(DeliveryQueries.ready(group, null))
        .and(bounds)
        .orderBy(P.ROTATION)
        .limit(DSL.inline(max))
        .forNoKeyUpdate()
        .skipLocked()
        .asTable(alias);
  }
}
