package org.messagepump.testkit;

import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension giving each test class a fresh database on a real PostgreSQL server (see {@link
 * PostgresServer} for where the server comes from). Test methods, constructors and lifecycle
 * methods may take a {@link DataSource} (the class's default HikariCP pool) or a {@link
 * TestDatabase}.
 *
 * <pre>{@code
 * @ExtendWith(PostgresExtension.class)
 * class MyIT {
 *   @Test
 *   void works(DataSource db) { ... }
 * }
 * }</pre>
 */
public final class PostgresExtension
    implements BeforeAllCallback, AfterAllCallback, ParameterResolver {

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(PostgresExtension.class);

  @Override
  public void beforeAll(ExtensionContext context) {
    database(context);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    TestDatabase db =
        context.getStore(NS).remove(context.getRequiredTestClass(), TestDatabase.class);
    if (db != null) {
      db.close();
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context)
      throws ParameterResolutionException {
    Class<?> type = parameter.getParameter().getType();
    return type == DataSource.class || type == TestDatabase.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context)
      throws ParameterResolutionException {
    TestDatabase db = database(context);
    return parameter.getParameter().getType() == TestDatabase.class ? db : db.dataSource();
  }

  /** The context of the test class {@code context} belongs to. */
  static ExtensionContext classContext(ExtensionContext context) {
    ExtensionContext classContext = context;
    while (classContext.getTestMethod().isPresent() && classContext.getParent().isPresent()) {
      classContext = classContext.getParent().get();
    }
    return classContext;
  }

  /** The database this extension made for the class of {@code classContext}, or null. */
  static TestDatabase existingDatabase(ExtensionContext classContext) {
    return classContext.getStore(NS).get(classContext.getRequiredTestClass(), TestDatabase.class);
  }

  private static TestDatabase database(ExtensionContext context) {
    ExtensionContext classContext = classContext(context);
    Class<?> testClass = classContext.getRequiredTestClass();
    return classContext
        .getStore(NS)
        .getOrComputeIfAbsent(
            testClass,
            k -> {
              PostgresServer server = PostgresServer.get();
              return new TestDatabase(server, server.createDatabase());
            },
            TestDatabase.class);
  }
}
