package org.messagepump.chaos;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.time.Duration;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.LedgerDrivers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventStore;

/**
 * A pump node in its own JVM: {@code NodeMain <commands|events|balancer|balancer-runs> <jdbcUrl>
 * <user> <password> <node> <workers>}. It runs one pump whose handler records every delivery in the
 * {@link Ledger} inside the delivery's transaction, writes the mark {@code ready:<node>} once
 * started, and exits when its standard input closes.
 */
public final class NodeMain {

  /** The event handler key of the event-stream nodes. */
  public static final String HANDLER_KEY = "chaos-events";

  /** The balancer's partition group. */
  public static final String GROUP = "chaos";

  /** Every how many balancer messages (by sequence number) is handed off rather than done. */
  public static final int HANDOFF_EVERY = 5;

  private NodeMain() {}

  /** Runs the node until standard input closes. */
  public static void main(String[] args) throws IOException {
    String kind = args[0];
    String node = args[4];
    int workers = Integer.parseInt(args[5]);
    HikariDataSource ds = pool(args[1], args[2], args[3], node, workers + 3);
    Driver driver = driver(kind, ds, node);
    warmUp(kind, ds);
    MessagePump pump =
        MessagePump.builder(ds)
            .name(node)
            .driver(driver)
            .workers(workers)
            // balancer-runs: several consecutive messages of a key per batch (messagesPerTurn 5).
            .batchSize(kind.equals("balancer-runs") ? 10 : 1)
            .pollInterval(Duration.ofMillis(100))
            .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
            .shutdownGrace(Duration.ofSeconds(5))
            .build();
    pump.start();
    Ledger.install(ds).mark("ready:" + node);
    while (System.in.read() >= 0) {
      // wait for the end of input
    }
    pump.close();
    ds.close();
  }

  /**
   * Runs one read through jOOQ and the driver's tables before the pump starts, as an application's
   * start-up would (class loading of a cold JVM is not the pump's recovery).
   */
  private static void warmUp(String kind, HikariDataSource ds) {
    switch (kind) {
      case "commands":
        CommandQueue.create(ds, Work.CODEC).operations().depth();
        break;
      case "events":
        EventStore.create(ds, Work.CODEC).operations().streams();
        break;
      default:
        MessageBalancer.create(ds, GROUP).operations().stats(GROUP);
    }
  }

  /** A pool whose connections carry the application name {@code node}. */
  static HikariDataSource pool(String url, String user, String password, String node, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(user);
    config.setPassword(password);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setPoolName(node);
    config.setConnectionTimeout(5_000);
    config.setInitializationFailTimeout(-1);
    config.addDataSourceProperty("ApplicationName", node);
    return new HikariDataSource(config);
  }

  private static Driver driver(String kind, HikariDataSource ds, String node) {
    return LedgerDrivers.create(kind, ds, node, HANDLER_KEY, GROUP, HANDOFF_EVERY);
  }
}
