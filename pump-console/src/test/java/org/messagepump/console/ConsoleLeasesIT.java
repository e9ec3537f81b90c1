package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.testkit.PostgresExtension;

/**
 * A command running under a lease (lease mode) shows as such on the console: counted per type as
 * running under a lease, not as delayed (its due time is its lease's expiry), and listed with its
 * holder and its lease's expiry.
 */
@ExtendWith(PostgresExtension.class)
class ConsoleLeasesIT {

  private static final String SCHEMA = "console_lease";
  private static final String TYPE = "exports.Run";
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  @Test
  void aLeasedCommandIsShownRunningWithItsHolderAndExpiry(DataSource ds) throws Exception {
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    CommandOperations.of(ds, SCHEMA).migrate();
    CommandQueue queue =
        CommandQueue.builder(ds)
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .schema(SCHEMA)
            .build();
    UUID id = queue.enqueueRaw(TYPE, BODY, EnqueueOptions.defaults().withPriority(6)).messageId();
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                TYPE,
                (b, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    ConsoleConfig config =
        ConsoleConfig.builder().schemas(SCHEMA, "eventstream", "balancer").build();
    try (MessagePump pump =
            MessagePump.builder(ds)
                .name("console-lease")
                .driver(
                    queue.driver(
                        handlers, CommandDriverOptions.defaults().withLease(Duration.ofMinutes(5))))
                .workers(1)
                .pollInterval(Duration.ofMillis(50))
                .build();
        ConsoleServer console = ConsoleServer.start(ds, config, "127.0.0.1", 0)) {
      pump.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      String holder = java.lang.management.ManagementFactory.getRuntimeMXBean().getName();

      String page = new Http(console.uri()).get("commands").body();
      // Depth row: due 0, delayed 0, running under a lease 1, dead letters 0.
      assertThat(page.replaceAll("\\s+", " "))
          .contains("running under a lease</th>")
          .containsPattern(
              "exports\\.Run</a></td><td class=\"num\">0</td><td class=\"num\">0</td>"
                  + "<td class=\"num\">1</td><td class=\"num\">0</td>");
      assertThat(page).contains("<table id=\"leased\">").contains("id=\"leased-" + id + "\"");
      String row = page.substring(page.indexOf("id=\"leased-" + id + "\""));
      row = row.substring(0, row.indexOf("</tr>"));
      assertThat(row)
          .contains(org.messagepump.console.internal.Html.esc(holder))
          .contains(" UTC")
          .contains(TYPE)
          .contains("<td class=\"num priority\">6</td>");

      String overview = new Http(console.uri()).get("").body();
      assertThat(overview).contains("running under a lease");

      finish.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> queue.operations().depth().pending() == 0);
      assertThat(new Http(console.uri()).get("commands").body())
          .doesNotContain("<table id=\"leased\">");
    }
  }
}
