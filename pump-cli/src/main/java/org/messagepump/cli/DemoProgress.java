package org.messagepump.cli;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.Search;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.QueueDepth;
import org.messagepump.eventstream.EventOperations;

/** Watches the demo: a live progress line, the "all done" test, and the closing summary. */
final class DemoProgress {

  private static final String TYPE = "demo.PlaceOrder";
  private static final List<String> PUMPS =
      List.of("orders", "orders-view", "customer-totals", "notifications");

  private final DemoScenario scenario;
  private final CommandQueue queue;
  private final EventOperations handlers;
  private final MeterRegistry registry;
  private final PrintWriter out;
  private final boolean terminal;
  private final long deadLettersBefore;
  private final long started = System.nanoTime();

  DemoProgress(
      DataSource ds,
      DemoScenario scenario,
      CommandQueue queue,
      MeterRegistry registry,
      PrintWriter out,
      boolean terminal) {
    this.scenario = scenario;
    this.queue = queue;
    this.handlers = scenario.events.operations();
    this.registry = registry;
    this.out = out;
    this.terminal = terminal;
    this.deadLettersBefore = queue.operations().deadLetters().count(TYPE);
  }

  long deadLettersAdded() {
    return queue.operations().deadLetters().count(TYPE) - deadLettersBefore;
  }

  /** Waits until every order is handled or parked and every reader caught up; false on timeout. */
  boolean awaitDone(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long lastPrint = 0;
    while (System.nanoTime() < deadline) {
      QueueDepth depth = queue.operations().depth();
      long pending = depth.of(TYPE).due() + depth.of(TYPE).delayed() + depth.of(TYPE).leased();
      long parked = deadLettersAdded();
      long viewLag = handlers.lag(DemoScenario.VIEW_HANDLER);
      long totalsLag = handlers.lag(DemoScenario.TOTALS_HANDLER);
      long notes = scenario.notifications.operations().messageCount(scenario.notifications.group());
      long handledOrders = (long) count("orders", "handled");
      boolean done =
          pending == 0
              && handledOrders + parked >= scenario.orders
              && viewLag == 0
              && totalsLag == 0
              && notes == 0;
      long now = System.nanoTime();
      if (done || now - lastPrint > TimeUnit.MILLISECONDS.toNanos(terminal ? 250 : 5_000)) {
        lastPrint = now;
        String line =
            String.format(
                "%5.1fs | orders %d/%d (%.0f/s) queued %d | view lag %d | totals lag %d"
                    + " | notifications %d (%.0f/s) waiting %d | in flight %d | retried %d | parked %d",
                seconds(),
                handledOrders,
                scenario.orders,
                rate("orders"),
                pending,
                viewLag,
                totalsLag,
                (long) count("notifications", "handled"),
                rate("notifications"),
                notes,
                inFlight(),
                (long) (sum("failed") + sum("busy")),
                parked);
        if (terminal) {
          out.print("\r" + line + "   ");
        } else {
          out.println(line);
        }
        out.flush();
      }
      if (done) {
        if (terminal) {
          out.println();
        }
        return true;
      }
      Thread.sleep(100);
    }
    if (terminal) {
      out.println();
    }
    return false;
  }

  void summary(long tookMs, DemoChecks checks, boolean done) {
    out.println();
    out.printf("Finished in %.1f s%s%n", tookMs / 1000.0, done ? "" : " (timed out)");
    Table t =
        new Table(
            "pump", "handled", "busy", "failed (retried)", "parked", "abandoned", "mean handle ms");
    for (String pump : PUMPS) {
      io.micrometer.core.instrument.Timer handle =
          Search.in(registry).name("messagepump.handle.duration").tag("pump", pump).timer();
      t.row(
          pump,
          (long) count(pump, "handled"),
          (long) count(pump, "busy"),
          (long) count(pump, "failed"),
          (long) count(pump, "parked"),
          (long) count(pump, "abandoned"),
          handle == null ? "" : String.format("%.2f", handle.mean(TimeUnit.MILLISECONDS)));
    }
    t.print(out);
    out.println();
    Table c = new Table("invariant", "result", "found");
    for (DemoChecks.Check check : checks.checks()) {
      c.row(check.name(), check.passed() ? "ok" : "FAILED", check.detail());
    }
    c.print(out);
    out.println();
    out.println(checks.allPassed() && done ? "All invariants hold." : "SOME INVARIANTS FAILED.");
    out.flush();
  }

  private double seconds() {
    return (System.nanoTime() - started) / 1e9;
  }

  private double rate(String pump) {
    double s = seconds();
    return s <= 0 ? 0 : count(pump, "handled") / s;
  }

  /** The pump's deliveries of {@code outcome}, summed over its message types. */
  private double count(String pump, String outcome) {
    return Search.in(registry)
        .name("messagepump.deliveries")
        .tags("pump", pump, "outcome", outcome)
        .counters()
        .stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private double sum(String outcome) {
    return PUMPS.stream().mapToDouble(p -> count(p, outcome)).sum();
  }

  private long inFlight() {
    return Math.round(
        Search.in(registry).name("messagepump.inflight").gauges().stream()
            .mapToDouble(g -> g.value())
            .sum());
  }
}
