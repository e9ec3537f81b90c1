package org.messagepump.core.spi;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A driver's rendered statements kept with the tables of one schema, one set per kind, made on
 * first use: every driver and operation built on the same tables shares them. A driver that renders
 * its statements through jOOQ when it is built pays that rendering (and the JIT compiling jOOQ's
 * rendering code) once per driver: an application building a driver per handler, or a test building
 * one per case, renders the same texts again and again.
 *
 * <p>A set is an object holding {@link StatementCache.Statement}s (or {@link StatementCache}s) of a
 * schema, made by a function of the tables alone: no value of a particular handler, group or
 * message goes into its texts (they are bound).
 *
 * @param <T> the tables type of a driver (its jOOQ names of one schema)
 */
public final class StatementSets<T> {

  private final T tables;
  private final Map<Class<?>, Object> sets = new ConcurrentHashMap<>();

  /** The sets of {@code tables}. */
  public StatementSets(T tables) {
    this.tables = Objects.requireNonNull(tables, "tables");
  }

  /**
   * The set of kind {@code kind} (the class of the object {@code render} makes), made by {@code
   * render} from the tables on first use and kept.
   */
  public <S> S get(Class<S> kind, Function<? super T, ? extends S> render) {
    Object kept = sets.get(kind);
    if (kept == null) {
      // Not computeIfAbsent: two threads may both render on first use (the one kept wins), which a
      // lock held while jOOQ renders would not make cheaper.
      S made = kind.cast(render.apply(tables));
      kept = sets.putIfAbsent(kind, made);
      if (kept == null) {
        return made;
      }
    }
    return kind.cast(kept);
  }
}
