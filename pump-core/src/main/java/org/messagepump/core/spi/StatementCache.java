package org.messagepump.core.spi;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jooq.DSLContext;
import org.jooq.DataType;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.QueryPart;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.VisitContext;
import org.jooq.VisitListener;
import org.jooq.conf.ParamType;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.DefaultConfiguration;

/**
 * Render-once SQL for a driver's hot paths. A driver builds each statement with jOOQ once per shape
 * (a key of the driver's choosing: the batch size, a variant), its values as named {@link
 * #parameter parameters}; the cache renders it once with jOOQ's renderer ({@code ?} markers) and
 * keeps the text and the order of its markers. Each execution prepares the text through JDBC and
 * binds the values in order: every value is bound, none is ever written into the SQL text, and the
 * text of a shape never changes, so the PostgreSQL driver keeps it prepared on the server.
 *
 * <pre>{@code
 * StatementCache<Integer> claims = new StatementCache<>(16);
 * Param<String> type = StatementCache.parameter("type", SQLDataType.CLOB);
 * StatementCache.Statement s =
 *     claims.statement(max, dsl -> dsl.selectFrom(table).where(TYPE.eq(type)).limit(DSL.inline(max)),
 *         "type");
 * try (PreparedStatement ps = s.prepare(connection, "Shipment")) { ... }
 * }</pre>
 *
 * <p>A value the statement needs is a named parameter, one that the code fixes (a limit, a flag) is
 * written with {@link DSL#inline}; a statement holding an unnamed bind value is refused, since that
 * value would be frozen into every later execution. A parameter may appear several times: each of
 * its markers is bound with its value. Shapes built by one function that leave some parameters out
 * (a bound a variant has no use for) are asked for with {@link #statementOfSome}: each statement
 * reports the parameters it uses, in order.
 *
 * <p>Thread-safe. Bounded: at most {@code capacity} shapes are kept; a shape beyond them is
 * rendered at each call and not kept, so keys that came from data could not grow it. Once a shape
 * is kept, finding it takes no lock.
 *
 * @param <K> the shape key: a value with {@code equals} and {@code hashCode}
 */
public final class StatementCache<K> {

  private final int capacity;
  private final Map<K, Statement> byKey = new ConcurrentHashMap<>();
  private final AtomicInteger kept = new AtomicInteger();

  /**
   * A cache of at most {@code capacity} shapes (at least 1).
   *
   * @throws IllegalArgumentException when {@code capacity} is below 1
   */
  public StatementCache(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be at least 1: " + capacity);
    }
    this.capacity = capacity;
  }

  /**
   * A named parameter of a statement: a bind marker whose value is given at each execution ({@link
   * Statement#prepare}). The same parameter object or name may be used several times in one
   * statement.
   */
  public static <T> Param<T> parameter(String name, DataType<T> type) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(type, "type");
    return DSL.param(name, type);
  }

  /**
   * The statement of shape {@code key}: built by {@code build} and rendered the first time the key
   * is asked for, then kept (up to the capacity). {@code parameters} names the statement's
   * parameters in the order {@link Statement#prepare} takes their values; the statement must use
   * each of them and no other bind value.
   *
   * @throws IllegalStateException when the built statement's parameters are not {@code parameters}
   */
  public Statement statement(
      K key, Function<DSLContext, ? extends Query> build, String... parameters) {
    return statement(key, build, false, parameters);
  }

  /**
   * As {@link #statement}, for shapes that use only some of the parameters {@code offered}: the
   * statement's {@link Statement#parameters()} are the ones it uses, in the order of {@code
   * offered} (none, one or all of them).
   *
   * @throws IllegalStateException when the built statement has a parameter not offered, or an
   *     unnamed bind value
   */
  public Statement statementOfSome(
      K key, Function<DSLContext, ? extends Query> build, String... offered) {
    return statement(key, build, true, offered);
  }

  private Statement statement(
      K key, Function<DSLContext, ? extends Query> build, boolean some, String[] parameters) {
    Statement s = byKey.get(key);
    if (s != null) {
      return s;
    }
    Objects.requireNonNull(key, "key");
    s = render(build, some, parameters);
    if (kept.incrementAndGet() <= capacity) {
      Statement was = byKey.putIfAbsent(key, s);
      if (was != null) {
        kept.decrementAndGet();
        return was;
      }
    } else {
      kept.decrementAndGet();
    }
    return s;
  }

  /**
   * The rows of parallel arrays, {@code unnest(a, b, …) AS alias(c1, c2, …)}: row i holds element i
   * of each array (an array shorter than the others gives nulls). With array parameters this is one
   * statement text for any number of rows, where a multi-row {@code VALUES} is a text per count.
   * With {@code numbered} ({@code WITH ORDINALITY}) the last column is the row's number, from 1:
   * {@code columns} names one column more than there are arrays.
   *
   * <p>A template of jOOQ parts (the arrays and the quoted names), because jOOQ's unnest takes one
   * array and its {@code ROWS FROM} of several would give each an alias, which PostgreSQL refuses.
   *
   * @throws IllegalArgumentException when there is no array, or the columns do not match them
   */
  public static Table<Record> rows(
      boolean numbered, String alias, List<String> columns, Field<?>... arrays) {
    Objects.requireNonNull(alias, "alias");
    if (arrays.length == 0 || columns.size() != arrays.length + (numbered ? 1 : 0)) {
      throw new IllegalArgumentException(
          columns.size()
              + " columns for "
              + arrays.length
              + " arrays"
              + (numbered ? " and their row number" : ""));
    }
    StringBuilder template = new StringBuilder("unnest(");
    List<QueryPart> parts = new ArrayList<>(List.of(arrays));
    for (int i = 0; i < arrays.length; i++) {
      template.append(i == 0 ? "" : ", ").append('{').append(i).append('}');
    }
    template.append(numbered ? ") with ordinality as " : ") as ");
    template.append('{').append(parts.size()).append("}(");
    parts.add(DSL.name(alias));
    for (int i = 0; i < columns.size(); i++) {
      template.append(i == 0 ? "" : ", ").append('{').append(parts.size()).append('}');
      parts.add(DSL.name(columns.get(i)));
    }
    template.append(')');
    return DSL.table(template.toString(), parts.toArray(new QueryPart[0]));
  }

  /** How many shapes are kept. */
  public int size() {
    return byKey.size();
  }

  /**
   * Renders {@code q} once, as {@link #statement} does, without keeping it: for a statement that is
   * not on a hot path but should bind its values the same way.
   */
  public static Statement render(
      Function<DSLContext, ? extends Query> build, String... parameters) {
    return render(build, false, parameters);
  }

  private static Statement render(
      Function<DSLContext, ? extends Query> build, boolean some, String[] parameters) {
    List<Param<?>> markers = new ArrayList<>();
    DSLContext dsl =
        DSL.using(
            new DefaultConfiguration()
                .set(SQLDialect.POSTGRES)
                .set(new Settings().withRenderSchema(true).withParamType(ParamType.INDEXED))
                .set(new MarkerListener(markers)));
    Query q = build.apply(dsl);
    markers.clear();
    String sql = dsl.render(q);
    List<Param<?>> written = List.copyOf(markers);
    int bound = q.getBindValues().size();
    if (written.size() != bound || written.stream().anyMatch(Param::isInline)) {
      throw new IllegalStateException(
          "statement renders " + written.size() + " parameters but binds " + bound + ": " + sql);
    }
    List<String> names = List.of(parameters);
    int[] slots = new int[written.size()];
    DataType<?>[] types = new DataType<?>[names.size()];
    boolean[] used = new boolean[names.size()];
    for (int i = 0; i < slots.length; i++) {
      Param<?> p = written.get(i);
      String name = p.getParamName();
      int slot = name == null ? -1 : names.indexOf(name);
      if (slot < 0) {
        throw new IllegalStateException(
            (name == null
                    ? "statement binds an unnamed value (a parameter, or DSL.inline for a constant"
                        + " of the code)"
                    : "statement has parameter '" + name + "', not one of " + names)
                + ": "
                + sql);
      }
      slots[i] = slot;
      used[slot] = true;
      types[slot] = p.getDataType();
    }
    if (some) {
      // The parameters used, renumbered in the order offered.
      int[] renumbered = new int[used.length];
      List<String> kept = new ArrayList<>();
      List<DataType<?>> keptTypes = new ArrayList<>();
      for (int i = 0; i < used.length; i++) {
        if (used[i]) {
          renumbered[i] = kept.size();
          kept.add(names.get(i));
          keptTypes.add(types[i]);
        }
      }
      for (int i = 0; i < slots.length; i++) {
        slots[i] = renumbered[slots[i]];
      }
      return new Statement(sql, List.copyOf(kept), slots, keptTypes.toArray(new DataType<?>[0]));
    }
    for (int i = 0; i < used.length; i++) {
      if (!used[i]) {
        throw new IllegalStateException(
            "statement does not use parameter '" + names.get(i) + "': " + sql);
      }
    }
    return new Statement(sql, names, slots, types);
  }

  /**
   * A rendered statement: its SQL text with {@code ?} markers and the parameter each marker binds.
   * Immutable and shared by every thread.
   */
  public static final class Statement {
    private final String sql;
    private final List<String> parameters;
    private final int[] slots;
    private final DataType<?>[] types;

    private Statement(String sql, List<String> parameters, int[] slots, DataType<?>[] types) {
      this.sql = sql;
      this.parameters = parameters;
      this.slots = slots;
      this.types = types;
    }

    /** The SQL text, with a {@code ?} marker per bound value. */
    public String sql() {
      return sql;
    }

    /** The parameter names, in the order {@link #prepare} takes their values. */
    public List<String> parameters() {
      return parameters;
    }

    /**
     * For each {@code ?} marker of {@link #sql()} in order, the index in {@link #parameters()} of
     * the parameter it binds.
     */
    public int[] markers() {
      return slots.clone();
    }

    /**
     * Prepares the statement on {@code connection} and binds {@code values} (one per parameter, in
     * the order of {@link #parameters()}); the caller executes and closes it.
     *
     * @throws IllegalArgumentException when the number of values or the type of one is wrong
     */
    public PreparedStatement prepare(Connection connection, Object... values) throws SQLException {
      if (values.length != parameters.size()) {
        throw new IllegalArgumentException(values.length + " values for parameters " + parameters);
      }
      PreparedStatement ps = connection.prepareStatement(sql);
      try {
        bindValues(ps, values);
        return ps;
      } catch (SQLException | RuntimeException e) {
        ps.close();
        throw e;
      }
    }

    /** Prepares, binds (as {@link #prepare}), executes and closes: the rows changed. */
    public int executeUpdate(Connection connection, Object... values) throws SQLException {
      try (PreparedStatement ps = prepare(connection, values)) {
        return ps.executeUpdate();
      }
    }

    /**
     * Binds {@code values} (as {@link #prepare}) to {@code ps}, a statement prepared from a text
     * whose {@code ?} markers are this statement's in the same order (this text, or this text after
     * an {@code EXPLAIN}).
     *
     * @throws IllegalArgumentException when the number of values or the type of one is wrong
     */
    public void bind(PreparedStatement ps, Object... values) throws SQLException {
      if (values.length != parameters.size()) {
        throw new IllegalArgumentException(values.length + " values for parameters " + parameters);
      }
      bindValues(ps, values);
    }

    /**
     * Binds {@code value} to the markers of one parameter, {@code parameter} (its index in {@link
     * #parameters()}), of {@code ps}, a statement prepared from {@link #sql()}: for a caller that
     * binds its values one by one, without an array of them. The caller binds every parameter.
     *
     * @throws IllegalArgumentException when there is no such parameter or the value's type is wrong
     */
    public void bindParameter(PreparedStatement ps, int parameter, Object value)
        throws SQLException {
      checkParameter(parameter);
      for (int i = 0; i < slots.length; i++) {
        if (slots[i] == parameter) {
          bindMarker(ps, i, parameter, value);
        }
      }
    }

    /**
     * As {@link #bindParameter}, for a {@code bigint} parameter and a value that is not boxed.
     *
     * @throws IllegalArgumentException when there is no such parameter or it is not a {@code
     *     bigint}
     */
    public void bindLong(PreparedStatement ps, int parameter, long value) throws SQLException {
      checkParameter(parameter);
      if (types[parameter].getType() != Long.class) {
        throw new IllegalArgumentException(
            "parameter '"
                + parameters.get(parameter)
                + "' is a "
                + types[parameter].getType().getSimpleName()
                + ", not a Long");
      }
      for (int i = 0; i < slots.length; i++) {
        if (slots[i] == parameter) {
          ps.setLong(i + 1, value);
        }
      }
    }

    private void checkParameter(int parameter) {
      if (parameter < 0 || parameter >= parameters.size()) {
        throw new IllegalArgumentException("no parameter " + parameter + " among " + parameters);
      }
    }

    private void bindValues(PreparedStatement ps, Object[] values) throws SQLException {
      for (int i = 0; i < slots.length; i++) {
        bindMarker(ps, i, slots[i], values[slots[i]]);
      }
    }

    private void bindMarker(PreparedStatement ps, int marker, int slot, Object v)
        throws SQLException {
      DataType<?> type = types[slot];
      if (v == null) {
        ps.setNull(marker + 1, type.getSQLType());
        return;
      }
      if (!type.getType().isInstance(v)) {
        throw new IllegalArgumentException(
            "parameter '"
                + parameters.get(slot)
                + "' is a "
                + type.getType().getSimpleName()
                + ", not a "
                + v.getClass().getSimpleName());
      }
      if (v instanceof JSONB json) {
        ps.setString(marker + 1, json.data());
      } else if (v instanceof Instant instant) {
        ps.setObject(marker + 1, OffsetDateTime.ofInstant(instant, ZoneOffset.UTC));
      } else if (v instanceof UUID[] ids) {
        // pgjdbc encodes String[], Long[] and the other boxed arrays itself, not UUID[].
        ps.setArray(marker + 1, ps.getConnection().createArrayOf("uuid", ids));
      } else {
        ps.setObject(marker + 1, v);
      }
    }

    @Override
    public String toString() {
      return sql + " " + parameters + Arrays.toString(slots);
    }
  }

  /**
   * Collects the bind markers in the order the renderer writes them: a parameter whose rendering
   * took the next bind index wrote a marker (jOOQ may visit a part more than once, or without
   * writing it).
   */
  private static final class MarkerListener implements VisitListener {
    private final List<Param<?>> markers;
    private final java.util.ArrayDeque<Integer> starts = new java.util.ArrayDeque<>();

    MarkerListener(List<Param<?>> markers) {
      this.markers = markers;
    }

    @Override
    public void visitStart(VisitContext context) {
      if (context.renderContext() != null && context.queryPart() instanceof Param<?>) {
        starts.push(context.renderContext().peekIndex());
      }
    }

    @Override
    public void visitEnd(VisitContext context) {
      if (context.renderContext() != null && context.queryPart() instanceof Param<?> p) {
        int start = starts.pop();
        int end = context.renderContext().peekIndex();
        // Bind indexes start at 1; a marker not recorded yet by a nested visit of the same part.
        if (end == start + 1 && markers.size() == start - 1) {
          markers.add(p);
        } else if (end > start + 1) {
          throw new IllegalStateException("a parameter rendered as " + (end - start) + " markers");
        }
      }
    }
  }
}
