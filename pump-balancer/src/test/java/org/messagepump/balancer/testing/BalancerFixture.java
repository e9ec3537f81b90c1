package org.messagepump.balancer.testing;

import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.testkit.FreshTables;
import org.messagepump.testkit.TablesFixture;

/**
 * The fixture of the balancer's tests and of the chaos suite: the {@code balancer} tables migrated
 * once per test class and emptied before each test (the test kit's {@link FreshTables}), and
 * partition groups on them. Register it in a static field of a class that carries
 * {@code @ExtendWith(PostgresExtension.class)}:
 *
 * <pre>{@code
 * @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();
 *
 * MessageBalancer orders = BALANCER.group("orders");
 * }</pre>
 *
 * <p>It reaches the chaos suite through this module's test-jar, which holds this package only. It
 * is internal to the project's tests, not API: an application's tests use {@link FreshTables} with
 * {@link BalancerOperations#migrate()}, or a {@link TablesFixture} of their own (docs/testing.md).
 */
public final class BalancerFixture extends TablesFixture<BalancerFixture> {

  private BalancerFixture(FreshTables tables) {
    super(tables);
  }

  /** Fresh {@code balancer} tables. */
  public static BalancerFixture create() {
    return new BalancerFixture(
        FreshTables.schema(
            "balancer", (ds, schema) -> BalancerOperations.of(ds, schema).migrate()));
  }

  /** The partition group {@code group} on the class's database. */
  public MessageBalancer group(String group) {
    return MessageBalancer.create(dataSource(), group);
  }

  @Override
  protected BalancerFixture with(FreshTables tables) {
    return new BalancerFixture(tables);
  }
}
