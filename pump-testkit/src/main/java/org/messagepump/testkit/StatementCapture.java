package org.messagepump.testkit;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * A {@link DataSource} wrapper that records the text of every SQL statement sent through it
 * (prepared, called or executed directly), so a test can check what reaches the server: for example
 * that no data value is written into SQL text. Proxies rather than a hand-written delegate: {@link
 * Connection} and {@link Statement} have some hundred methods and only the few taking SQL text
 * matter here.
 */
public final class StatementCapture {

  private static final Set<String> SQL_METHODS =
      Set.of(
          "prepareStatement",
          "prepareCall",
          "execute",
          "executeQuery",
          "executeUpdate",
          "executeLargeUpdate",
          "addBatch",
          "nativeSQL");

  /**
   * A quoted literal: standard 'x', escape E'x' (backslash escapes) or dollar-quoted $tag$x$tag$.
   */
  private static final Pattern LITERAL =
      Pattern.compile(
          "(?i)(?<![A-Za-z0-9_])E'(?:[^'\\\\]|\\\\.|'')*'|'(?:[^']|'')*'|\\$([A-Za-z_]*)\\$.*?\\$\\1\\$",
          Pattern.DOTALL);

  private final DataSource target;
  private final DataSource proxy;
  private final ConcurrentLinkedQueue<String> statements = new ConcurrentLinkedQueue<>();

  private StatementCapture(DataSource target) {
    this.target = target;
    this.proxy = (DataSource) wrap(target, DataSource.class);
  }

  /** Starts capturing what goes through {@code target}. */
  public static StatementCapture of(DataSource target) {
    return new StatementCapture(target);
  }

  /** The data source to hand to the code under test. */
  public DataSource dataSource() {
    return proxy;
  }

  /** The data source behind the capture. */
  public DataSource target() {
    return target;
  }

  /** Every SQL text sent so far, in order (duplicates kept). */
  public List<String> statements() {
    return new ArrayList<>(statements);
  }

  /** Forgets what was captured. */
  public void clear() {
    statements.clear();
  }

  /** The quoted literals of {@code sql}, each as written (with its quotes). */
  public static List<String> literals(String sql) {
    List<String> out = new ArrayList<>();
    String withoutComments = sql.replaceAll("(?m)--[^\\n]*$", "");
    Matcher m = LITERAL.matcher(withoutComments);
    while (m.find()) {
      out.add(m.group());
    }
    return out;
  }

  /**
   * The captured statements holding a quoted literal that is not in {@code allowed} (literals of
   * the code itself, such as {@code 'pending'}), each with the offending literal: an empty list
   * means no data value reached the SQL text.
   */
  public List<String> statementsWithLiteralsOtherThan(Collection<String> allowed) {
    List<String> bad = new ArrayList<>();
    for (String sql : statements) {
      for (String lit : literals(sql)) {
        if (!allowed.contains(lit)) {
          bad.add(lit + " in: " + sql);
        }
      }
    }
    return bad;
  }

  private Object wrap(Object delegate, Class<?> type) {
    InvocationHandler h =
        (self, method, args) -> {
          String name = method.getName();
          if (method.getDeclaringClass() == Object.class) {
            switch (name) {
              case "equals":
                return self == args[0];
              case "hashCode":
                return System.identityHashCode(self);
              case "toString":
                return "StatementCapture[" + delegate + "]";
              default:
                break;
            }
          }
          if (SQL_METHODS.contains(name)
              && args != null
              && args.length > 0
              && args[0] instanceof String sql) {
            statements.add(sql);
          }
          Object result;
          try {
            result = method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          Class<?> rt = method.getReturnType();
          if (result != null
              && rt.isInterface()
              && (rt == Connection.class || Statement.class.isAssignableFrom(rt))) {
            return wrap(result, rt);
          }
          return result;
        };
    return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, h);
  }
}
