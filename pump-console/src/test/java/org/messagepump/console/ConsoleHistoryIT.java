package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.testkit.PostgresExtension;

/** The commands page lists the queue's recent history, newest first, a page at a time. */
@ExtendWith(PostgresExtension.class)
class ConsoleHistoryIT {

  private static final String SCHEMA = "console_history";
  private static final String TYPE = "reports.Build";
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  @Test
  void handledCommandsArePagedNewestFirstReadOnly(DataSource ds) throws Exception {
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    CommandOperations.of(ds, SCHEMA).migrate();
    CommandQueue queue =
        CommandQueue.builder(ds)
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .schema(SCHEMA)
            .history(true)
            .build();
    for (int i = 0; i < 24; i++) {
      queue.enqueueRaw(TYPE, BODY, EnqueueOptions.defaults());
    }
    queue.enqueueRaw(
        TYPE, BODY, EnqueueOptions.defaults().withIdempotencyKey("<b>report-2030</b>"));
    AtomicInteger handled = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder().onRaw(TYPE, (b, ctx) -> handled.incrementAndGet()).build();
    ConsoleConfig config =
        ConsoleConfig.builder().schemas(SCHEMA, "eventstream", "balancer").build();
    try (MessagePump pump =
            MessagePump.builder(ds)
                .name("console-history")
                .driver(queue.driver(handlers))
                .workers(1)
                .pollInterval(Duration.ofMillis(50))
                .build();
        ConsoleServer console = ConsoleServer.start(ds, config, "127.0.0.1", 0)) {
      pump.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 25);
      Http h = new Http(console.uri());
      String page = h.get("commands").body();
      assertThat(page).contains("Recent history", "<table id=\"history\">");
      assertThat(count(page, "id=\"history-")).isEqualTo(20);
      // The key is escaped: the page shows it, the browser does not run it.
      String all = page + h.get(next(page)).body();
      assertThat(all).contains("&lt;b&gt;report-2030&lt;/b&gt;").doesNotContain("<b>report");
      String second = h.get(next(page)).body();
      assertThat(count(second, "id=\"history-")).isEqualTo(5);
      assertThat(second).doesNotContain("id=\"next-history\"");
      // No action on history rows: the list is read-only.
      String table = second.substring(second.indexOf("<table id=\"history\">"));
      table = table.substring(0, table.indexOf("</table>"));
      assertThat(table).doesNotContain("<form", "<button");
      assertThat(h.get("commands?history_id=x&history_at=2030-01-01T00:00:00Z").statusCode())
          .isEqualTo(400);
      assertThat(h.get("commands?history_id=1&history_at=yesterday").statusCode()).isEqualTo(400);
    }
  }

  private static String next(String page) {
    Matcher m = Pattern.compile("id=\"next-history\" href=\"([^\"]+)\"").matcher(page);
    assertThat(m.find()).isTrue();
    String href = m.group(1).replace("&amp;", "&");
    return href.substring(href.indexOf("commands?"));
  }

  private static int count(String page, String needle) {
    int n = 0;
    for (int i = page.indexOf(needle); i >= 0; i = page.indexOf(needle, i + 1)) {
      n++;
    }
    return n;
  }
}
