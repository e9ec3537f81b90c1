package org.messagepump.testkit;

import java.util.Objects;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Base of a fixture of one's own built on {@link FreshTables}: the fresh tables, plus whatever the
 * tests want on them (a queue with the application's codec, a repository). The subclass adds the
 * factories; this class runs the tables' set-up and emptying and knows the class's database.
 *
 * <pre>{@code
 * final class OrdersFixture extends TablesFixture<OrdersFixture> {
 *   OrdersFixture() {
 *     this(FreshTables.schema("commandqueue", (ds, s) -> CommandOperations.of(ds, s).migrate()));
 *   }
 *
 *   private OrdersFixture(FreshTables tables) {
 *     super(tables);
 *   }
 *
 *   CommandQueue queue() {
 *     return CommandQueue.create(dataSource(), OrderCodec.CODEC);
 *   }
 *
 *   @Override
 *   protected OrdersFixture with(FreshTables tables) {
 *     return new OrdersFixture(tables);
 *   }
 * }
 *
 * @ExtendWith(PostgresExtension.class)
 * class PlaceOrderIT {
 *   @RegisterExtension static final OrdersFixture ORDERS = new OrdersFixture();
 *
 *   private final CommandQueue queue = ORDERS.queue();
 * }
 * }</pre>
 *
 * <p>As with {@link FreshTables}, register the fixture in a static field of a class that carries
 * {@code @ExtendWith(PostgresExtension.class)}; a test instance's fields may use it, since the
 * class's set-up has run before each test instance is made.
 *
 * @param <F> the subclass, returned by {@link #table}
 */
public abstract class TablesFixture<F extends TablesFixture<F>>
    implements BeforeAllCallback, BeforeEachCallback {

  private final FreshTables tables;

  /** A fixture on {@code tables}. */
  protected TablesFixture(FreshTables tables) {
    this.tables = Objects.requireNonNull(tables, "tables");
  }

  /**
   * The same fixture on other tables: {@link #table} calls it with this fixture's tables and one
   * more.
   */
  protected abstract F with(FreshTables tables);

  /** This fixture and a table of the test's own: see {@link FreshTables#table}. */
  public final F table(String table, String createSql) {
    return with(tables.table(table, createSql));
  }

  /** The tables this fixture keeps fresh. */
  public final FreshTables tables() {
    return tables;
  }

  /** The class's database (see {@link FreshTables#database()}). */
  public final TestDatabase database() {
    return tables.database();
  }

  /** The default pool of the class's database. */
  public final DataSource dataSource() {
    return tables.dataSource();
  }

  /** Runs the tables' set-up for the class. */
  @Override
  public final void beforeAll(ExtensionContext context) {
    tables.beforeAll(context);
  }

  /** Empties the tables before a test. */
  @Override
  public final void beforeEach(ExtensionContext context) {
    tables.beforeEach(context);
  }
}
