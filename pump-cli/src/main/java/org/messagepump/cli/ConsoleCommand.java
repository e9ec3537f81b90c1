package org.messagepump.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.messagepump.balancer.Balancer;
import org.messagepump.commands.CommandQueue;
import org.messagepump.console.ConsoleConfig;
import org.messagepump.console.ConsoleServer;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump console}: the web operations console on {@code --jdbc-url}, or with {@code --demo} on
 * an embedded PostgreSQL with the demo's workload (and failures for an operator to handle) running
 * in the background.
 */
@Command(
    name = "console",
    mixinStandardHelpOptions = true,
    description = {
      "Serve the web operations console (loopback only unless --token is given).",
      "--demo: embedded PostgreSQL with the demo's orders flowing and failing in the background."
    })
final class ConsoleCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Option(
      names = "--demo",
      description = "Run the demo workload (on an embedded PostgreSQL unless --jdbc-url is given).")
  boolean demo;

  @Option(
      names = "--bind",
      paramLabel = "HOST[:PORT]",
      defaultValue = ConsoleServer.DEFAULT_HOST + ":" + ConsoleServer.DEFAULT_PORT,
      description =
          "Where to listen (default ${DEFAULT-VALUE}); any non-loopback host needs --token.")
  String bind;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      defaultValue = "${env:PUMP_CONSOLE_TOKEN}",
      description =
          "Access token (>= 16 characters; env PUMP_CONSOLE_TOKEN); open the console once"
              + " with ?token=TOKEN.")
  String token;

  @Option(names = "--read-only", description = "Show only: refuse every action.")
  boolean readOnly;

  @Option(
      names = "--show-payloads",
      description = "Show payload previews of dead letters (they may hold personal data).")
  boolean showPayloads;

  @Option(
      names = "--actor",
      paramLabel = "NAME",
      description = "Who the audit log names for actions (default: the OS user).")
  String actor;

  @Option(
      names = "--commands-schema",
      paramLabel = "NAME",
      description = "The command queue's schema (default: " + CommandQueue.DEFAULT_SCHEMA + ").")
  String commandsSchema = CommandQueue.DEFAULT_SCHEMA;

  @Option(
      names = "--events-schema",
      paramLabel = "NAME",
      description = "The event store's schema (default: " + EventStore.DEFAULT_SCHEMA + ").")
  String eventsSchema = EventStore.DEFAULT_SCHEMA;

  @Option(
      names = "--balancer-schema",
      paramLabel = "NAME",
      description = "The balancer's schema (default: " + Balancer.DEFAULT_SCHEMA + ").")
  String balancerSchema = Balancer.DEFAULT_SCHEMA;

  @Option(
      names = "--orders-per-second",
      defaultValue = "10",
      description =
          "--demo: orders placed per second in the background (default ${DEFAULT-VALUE}).")
  int ordersPerSecond;

  @Option(
      names = "--exit-after",
      paramLabel = "DURATION",
      hidden = true,
      description = "Stop after this long (ISO-8601), for tests.")
  Duration exitAfter;

  @Spec CommandSpec spec;

  /** Counted down when everything is closed: Ctrl-C's shutdown hook waits for it. */
  private final CountDownLatch closed = new CountDownLatch(1);

  @Override
  public Integer call() throws Exception {
    try {
      return run();
    } finally {
      closed.countDown();
    }
  }

  private Integer run() throws Exception {
    String host = bind;
    int port = ConsoleServer.DEFAULT_PORT;
    int colon = bind.lastIndexOf(':');
    if (colon > 0 && !bind.endsWith("]") && bind.indexOf(':') == colon) {
      host = bind.substring(0, colon);
      try {
        port = Integer.parseInt(bind.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new CliException("--bind: not a port: " + bind.substring(colon + 1), 2);
      }
    }
    if (ordersPerSecond < 1 || ordersPerSecond > 1_000) {
      throw new CliException(
          "--orders-per-second must be between 1 and 1000: " + ordersPerSecond, 2);
    }
    ConsoleConfig.Builder config;
    try {
      config =
          ConsoleConfig.builder()
              .accessToken(token)
              .readOnly(readOnly)
              .showPayloads(showPayloads)
              .schemas(commandsSchema, eventsSchema, balancerSchema)
              .actorName(actor != null ? actor : System.getProperty("user.name", "console"));
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (Database database = Database.open(db, demo, demo ? 40 : 8, err)) {
      DataSource ds = database.dataSource();
      if (!demo) {
        return serve(ds, config.build(), host, port, out);
      }
      MigrateCommand.migrateAll(ds);
      DemoScenario.createSchema(ds);
      DemoScenario scenario = new DemoScenario(ds, 1_000, true);
      try (DemoWorkload workload = DemoWorkload.start(ds, scenario, 4)) {
        ConsoleConfig withMeters =
            config.meterRegistry(workload.registry).title("messagepump console · demo").build();
        out.printf(
            "demo on %s: %d orders/s from %d customers in the background; declined orders"
                + " become dead letters, %s's notifications park, some events park their stream%n",
            database.description(),
            ordersPerSecond,
            scenario.customers,
            DemoScenario.STUCK_CUSTOMER);
        Thread orders = placeOrders(workload);
        try {
          return serve(ds, withMeters, host, port, out);
        } finally {
          orders.interrupt();
        }
      }
    }
  }

  private Integer serve(DataSource ds, ConsoleConfig config, String host, int port, PrintWriter out)
      throws InterruptedException {
    ConsoleServer server;
    try {
      // Checks the address and the schema names (the drivers' own rules, when it builds the
      // servlet) before it binds; each message names what it rejects.
      server = ConsoleServer.start(ds, config, host, port);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
    try (server) {
      String url = server.uri().toString();
      out.println("console: " + url + (config.accessToken() != null ? "?token=<your token>" : ""));
      out.println(
          (config.readOnly() ? "read-only, " : "")
              + (config.showPayloads() ? "payloads shown" : "payloads hidden")
              + "; every action is audit-logged. Ctrl-C stops.");
      out.flush();
      CountDownLatch stop = new CountDownLatch(1);
      // Ctrl-C: stop serving, then let call() close the pumps and the (embedded) database
      // before the JVM halts.
      Thread hook =
          new Thread(
              () -> {
                stop.countDown();
                try {
                  closed.await(20, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "pump-console-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        if (exitAfter != null) {
          stop.await(exitAfter.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } else {
          stop.await();
        }
      } finally {
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // the JVM is exiting: the hook has run
        }
      }
    }
    return 0;
  }

  /** Places orders in the background, one small batch every 200 ms. */
  private Thread placeOrders(DemoWorkload workload) {
    Thread t =
        new Thread(
            () -> {
              int next = 0;
              double owed = 0;
              while (!Thread.currentThread().isInterrupted()) {
                owed += ordersPerSecond / 5.0;
                int n = (int) owed;
                owed -= n;
                try {
                  if (n > 0) {
                    workload.enqueue(next, n);
                    next += n;
                  }
                  Thread.sleep(200);
                } catch (InterruptedException e) {
                  return;
                } catch (RuntimeException e) {
                  return; // the database is going away
                }
              }
            },
            "demo-orders");
    t.setDaemon(true);
    t.start();
    return t;
  }
}
