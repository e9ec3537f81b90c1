package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The benchmark runs end to end at a tiny scale and reports every figure; timings are not asserted.
 */
@ExtendWith(PostgresExtension.class)
class BenchCommandIT {

  @Test
  void reportsEveryFigureAsJson(TestDatabase db, @TempDir Path dir) throws Exception {
    Path json = dir.resolve("bench.json");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code =
        PumpCli.execute(
            new PrintWriter(out),
            new PrintWriter(err),
            "bench",
            "--quick",
            "--scale=0.02",
            "--json=" + json,
            "--jdbc-url=" + db.jdbcUrl(),
            "--user=" + db.server().user(),
            "--password=" + db.server().password());
    assertThat(code).as(out + "\n" + err).isZero();
    JsonNode rows = new ObjectMapper().readTree(Files.readString(json));
    Set<String> names = new HashSet<>();
    for (JsonNode row : rows) {
      names.add(row.path("name").asText());
      assertThat(row.has("params") && row.has("unit") && row.has("ratio"))
          .as(row.toString())
          .isTrue();
      assertThat(row.path("value").isNumber()).as(row.toString()).isTrue();
      String name = row.path("name").asText();
      if (name.equals("balancer.order.violations")) {
        assertThat(row.path("value").asDouble()).as("per-key order violations").isZero();
      } else if (name.startsWith("cpu.") || name.startsWith("jit.")) {
        // CPU time from /proc counts in 10 ms ticks: a drain of 100 deliveries may show none.
        assertThat(row.path("value").asDouble()).as(row.toString()).isNotNegative();
      } else if (name.equals("warmup")) {
        // One round at this smoke scale (at most six at a real one), however busy the JIT was.
        assertThat(row.path("value").asDouble()).as(row.toString()).isNotNegative();
        assertThat(row.path("params").path("rounds").asInt()).as(row.toString()).isEqualTo(1);
      } else if (!name.startsWith("heap")) {
        assertThat(row.path("value").asDouble()).as(row.toString()).isPositive();
      }
      if (name.startsWith("commands.drain")
          || name.startsWith("events.catchup")
          || name.startsWith("balancer.drain")) {
        assertThat(row.path("ratio").asDouble()).as(row.toString()).isPositive();
      }
    }
    assertThat(names)
        .contains(
            "baseline.skiplocked",
            "commands.drain",
            "commands.drain.batch",
            "commands.drain.history",
            "commands.drain.leased",
            "commands.lease.heartbeats",
            "commands.lease.heartbeats.per.delivery",
            "commands.lease.extended.per.delivery",
            "enqueue.single",
            "enqueue.batch",
            "commands.backlog",
            "latency.polling",
            "latency.notify",
            "latency.priority",
            "heap.delta",
            "events.append",
            "events.catchup",
            "events.catchup.batch",
            "events.poll.idle",
            "balancer.drain",
            "balancer.drain.batch",
            "balancer.store.batch",
            "balancer.order.violations",
            "balancer.fairness.jain",
            "cpu.client",
            "jit.compile",
            "warmup");
    assertThat(out.toString()).contains("ratio");
  }
}
