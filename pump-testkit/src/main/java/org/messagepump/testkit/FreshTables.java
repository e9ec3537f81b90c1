package org.messagepump.testkit;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * JUnit 5 extension giving every test of a class empty tables: a driver's schema (and any tables of
 * the test's own) is created once per test class on the database of {@link PostgresExtension}, and
 * every table it holds is emptied before each test. Register it in a static field of a class that
 * also carries {@code @ExtendWith(PostgresExtension.class)}:
 *
 * <pre>{@code
 * @ExtendWith(PostgresExtension.class)
 * class PlaceOrderHandlerIT {
 *   @RegisterExtension
 *   static final FreshTables TABLES =
 *       FreshTables.schema("commandqueue", (ds, s) -> CommandOperations.of(ds, s).migrate())
 *           .table("orders", "CREATE TABLE orders (order_id text PRIMARY KEY)");
 *
 *   @Test
 *   void placesTheOrder() {
 *     CommandQueue queue = CommandQueue.create(TABLES.dataSource(), CODEC);
 *     ...
 *   }
 * }
 * }</pre>
 *
 * <p>The set-up runs once per test class: {@link #schema} calls the driver's migration with the
 * schema's name, {@link #table} runs its {@code CREATE} statement. Before each test every table of
 * each named schema is emptied with one {@code TRUNCATE}, except Flyway's schema history (a table
 * with an {@code installed_rank} column), which the drivers' migrations keep there; the tables
 * named with {@link #table} are emptied too. Sequences keep their values. A test's rows stay until
 * the next test starts, so a failed test's tables can be read afterwards. Table and schema names
 * are sent as bound values and quoted by the server before they reach the {@code TRUNCATE}.
 * Emptying waits at most a minute for locks: a test that left a transaction open or a pump running
 * fails the next test with that message instead of hanging it.
 *
 * <p>{@link #empty()} empties the tables again within a test that runs several rounds. {@link
 * #schema}, {@link #andSchema} and {@link #table} return a new instance and leave this one as it
 * is. The instance registered in a test class knows that class's database once the class has
 * started ({@link #database()}, {@link #dataSource()}); register one instance per class, in a
 * static field.
 */
public final class FreshTables implements BeforeAllCallback, BeforeEachCallback {

  /**
   * Creates a schema's tables: a driver's migration, such as {@code (ds, s) ->
   * CommandOperations.of(ds, s).migrate()}.
   */
  @FunctionalInterface
  public interface SchemaSetup {
    /**
     * Creates the tables of {@code schema} on {@code dataSource} (the class's default pool).
     *
     * @throws Exception when the set-up fails; the test class fails
     */
    void create(DataSource dataSource, String schema) throws Exception;
  }

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(FreshTables.class);

  private static final String TABLES_TO_EMPTY =
      "SELECT string_agg(name, ', ' ORDER BY name) FROM ("
          + " SELECT format('%I.%I', t.schemaname, t.tablename) AS name FROM pg_tables t"
          + " WHERE t.schemaname = ANY (?) AND NOT EXISTS (SELECT 1 FROM pg_attribute a"
          + " WHERE a.attrelid = format('%I.%I', t.schemaname, t.tablename)::regclass"
          + " AND a.attname = 'installed_rank' AND NOT a.attisdropped)"
          + " UNION SELECT x::regclass::text FROM unnest(?::text[]) x) s";

  /** How long emptying the tables waits for locks. */
  private static final int LOCK_TIMEOUT_SECONDS = 60;

  private record Schema(String name, SchemaSetup setup) {}

  private record Table(String name, String createSql) {}

  private final List<Schema> schemas;
  private final List<Table> tables;
  private volatile TestDatabase database;

  private FreshTables(List<Schema> schemas, List<Table> tables) {
    this.schemas = List.copyOf(schemas);
    this.tables = List.copyOf(tables);
  }

  /**
   * Fresh tables of {@code schema}, created once per test class by {@code setup}, which takes the
   * data source and the schema's name (for example {@code (ds, s) -> EventOperations.of(ds,
   * s).migrate()}).
   *
   * @throws IllegalArgumentException when {@code schema} is blank
   */
  public static FreshTables schema(String schema, SchemaSetup setup) {
    return new FreshTables(List.of(), List.of()).andSchema(schema, setup);
  }

  /**
   * This fixture and the tables of another schema, created once per test class by {@code setup}
   * after the ones before it.
   *
   * @throws IllegalArgumentException when {@code schema} is blank
   */
  public FreshTables andSchema(String schema, SchemaSetup setup) {
    requireName(schema, "schema");
    Objects.requireNonNull(setup, "setup");
    List<Schema> more = new ArrayList<>(schemas);
    more.add(new Schema(schema, setup));
    return new FreshTables(more, tables);
  }

  /**
   * This fixture and one table of the test's own (a read model, a log of what handlers did): {@code
   * createSql} runs once per test class after the schemas' set-up, and {@code table} (a name the
   * server resolves as in SQL, optionally schema-qualified) is emptied before each test.
   *
   * @throws IllegalArgumentException when {@code table} or {@code createSql} is blank
   */
  public FreshTables table(String table, String createSql) {
    requireName(table, "table");
    Objects.requireNonNull(createSql, "createSql");
    if (createSql.isBlank()) {
      throw new IllegalArgumentException("createSql must not be blank");
    }
    List<Table> more = new ArrayList<>(tables);
    more.add(new Table(table, createSql));
    return new FreshTables(schemas, more);
  }

  /**
   * The database of the test class this fixture serves (after the class has started).
   *
   * @throws IllegalStateException before the class has started
   */
  public TestDatabase database() {
    TestDatabase db = database;
    if (db == null) {
      throw new IllegalStateException(
          "FreshTables: no database yet; the fixture knows it once its test class has started");
    }
    return db;
  }

  /** The default pool of {@link #database()}. */
  public DataSource dataSource() {
    return database().dataSource();
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    createOnce(context);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    empty(createOnce(context));
  }

  /**
   * Empties the tables now, as before each test: for a test that runs several rounds of a scenario
   * and wants fresh tables for each.
   *
   * @throws IllegalStateException before the class has started, or when emptying fails
   */
  public void empty() {
    empty(database());
  }

  /**
   * Runs the set-up unless it ran for this class; registered in an instance field, at first use.
   */
  private TestDatabase createOnce(ExtensionContext context) {
    ExtensionContext classContext = PostgresExtension.classContext(context);
    TestDatabase db = PostgresExtension.existingDatabase(classContext);
    if (db == null) {
      throw new IllegalStateException(
          "FreshTables needs the class's database: add @ExtendWith(PostgresExtension.class) to "
              + classContext.getRequiredTestClass().getName());
    }
    database = db;
    classContext.getStore(NS).getOrComputeIfAbsent(this, k -> create(db), Boolean.class);
    return db;
  }

  private Boolean create(TestDatabase db) {
    for (Schema s : schemas) {
      try {
        s.setup().create(db.dataSource(), s.name());
      } catch (Exception e) {
        throw new IllegalStateException("FreshTables: creating schema " + s.name() + " failed", e);
      }
    }
    for (Table t : tables) {
      db.execute(t.createSql());
    }
    return Boolean.TRUE;
  }

  private void empty(TestDatabase db) {
    try (Connection c = db.dataSource().getConnection()) {
      String list;
      try (PreparedStatement ps = c.prepareStatement(TABLES_TO_EMPTY)) {
        Array schemaNames = c.createArrayOf("text", schemas.stream().map(Schema::name).toArray());
        Array tableNames = c.createArrayOf("text", tables.stream().map(Table::name).toArray());
        ps.setArray(1, schemaNames);
        ps.setArray(2, tableNames);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          list = rs.getString(1);
        }
      }
      if (list == null) {
        return;
      }
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        // A lock left behind by the previous test (a pump not closed, a transaction left open)
        // fails the next test with this message instead of hanging it.
        s.execute("SET LOCAL lock_timeout = '" + LOCK_TIMEOUT_SECONDS + "s'");
        // Every name in the list was quoted by the server (format %I, regclass output).
        s.execute("TRUNCATE " + list);
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw new IllegalStateException(
            "FreshTables: emptying " + list + " failed; did an earlier test leave a lock?", e);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("FreshTables: emptying the tables failed", e);
    }
  }

  private static void requireName(String name, String what) {
    Objects.requireNonNull(name, what);
    if (name.isBlank()) {
      throw new IllegalArgumentException(what + " must not be blank");
    }
  }
}
