package org.messagepump.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump demo}: all three drivers in one process on an embedded PostgreSQL (or {@code
 * --jdbc-url}), with injected failures, a live progress line and checked invariants.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Run the demo: orders through all three drivers, with failures.",
      "Orders flow through commands, event streams and the balancer with injected failures;"
          + " then the demo checks that every order was projected once and per-customer order"
          + " was kept."
    })
final class DemoCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Option(
      names = "--messages",
      defaultValue = "1000",
      description = "Orders to place (default ${DEFAULT-VALUE}).")
  int messages;

  @Option(
      names = "--workers",
      defaultValue = "4",
      description = "Workers of the command and balancer pumps (default ${DEFAULT-VALUE}).")
  int workers;

  @Option(
      names = "--timeout",
      defaultValue = "PT5M",
      description = "Give up after this long (ISO-8601, default ${DEFAULT-VALUE}).")
  Duration timeout;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (messages < 1 || messages > 1_000_000) {
      throw new CliException("--messages must be between 1 and 1000000: " + messages, 2);
    }
    if (workers < 1 || workers > 64) {
      throw new CliException("--workers must be between 1 and 64: " + workers, 2);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (Database database = Database.open(db, true, 2 * workers + 24, err)) {
      DataSource ds = database.dataSource();
      MigrateCommand.migrateAll(ds);
      DemoScenario.createSchema(ds);
      DemoScenario scenario = new DemoScenario(ds, messages);
      out.printf(
          "demo run %s on %s: %d orders from %d customers, %d workers%n",
          scenario.run, database.description(), messages, scenario.customers, workers);
      out.flush();
      long started = System.nanoTime();
      try (DemoWorkload workload = DemoWorkload.start(ds, scenario, workers)) {
        DemoProgress progress =
            new DemoProgress(
                ds, scenario, workload.queue, workload.registry, out, System.console() != null);
        workload.enqueue(0, scenario.orders);
        boolean done = progress.awaitDone(timeout);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        workload.close();
        DemoChecks checks = DemoChecks.run(ds, scenario, progress.deadLettersAdded());
        progress.summary(tookMs, checks, done);
        if (!done) {
          err.println("pump: the demo did not finish within " + timeout);
          return 1;
        }
        return checks.allPassed() ? 0 : 1;
      }
    }
  }
}
