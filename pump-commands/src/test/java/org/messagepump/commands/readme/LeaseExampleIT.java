package org.messagepump.commands.readme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** docs/leases.md's example, compiled and run as written. */
@ExtendWith(PostgresExtension.class)
class LeaseExampleIT {

  record RenderReport(String reportId) {}

  /** Stands for minutes of work outside the database. */
  static byte[] render(String reportId) throws InterruptedException {
    Thread.sleep(1_500);
    return ("report " + reportId).getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  @Test
  void aLongHandlerWritesItsResultOnceFencedByItsToken(DataSource dataSource) throws Exception {
    CommandOperations.of(dataSource).migrate();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS reports");
      s.execute("CREATE TABLE reports (id text PRIMARY KEY, pdf bytea, fence bigint NOT NULL)");
      s.execute("TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    }
    MessageTypes types =
        MessageTypes.builder().register(RenderReport.class, "reports.RenderReport").build();
    CommandQueue queue = CommandQueue.builder(dataSource).codec(JsonMessageCodec.of(types)).build();
    // spotless:off
    // README:leaseFencing begin
    CommandHandlers handlers = CommandHandlers.builder()
        .on(RenderReport.class, (cmd, ctx) -> {
          byte[] pdf = render(cmd.reportId()); // minutes of work: no transaction is open
          long token = ctx.fencingToken().orElseThrow();
          try (Connection c = dataSource.getConnection();
              PreparedStatement ps = c.prepareStatement(
                  "INSERT INTO reports (id, pdf, fence) VALUES (?, ?, ?)"
                      + " ON CONFLICT (id) DO UPDATE SET pdf = excluded.pdf, fence = excluded.fence"
                      + " WHERE reports.fence < excluded.fence")) {
            // An attempt whose lease was taken over cannot overwrite the newer attempt's result.
            ps.setString(1, cmd.reportId());
            ps.setBytes(2, pdf);
            ps.setLong(3, token);
            ps.executeUpdate();
          }
        })
        .build();
    MessagePump pump = MessagePump.builder(dataSource)
        .name("reports")
        .driver(queue.driver(handlers,
            CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30))))
        .workers(4)
        .handlerTimeout(Duration.ofMinutes(10))
        .build();
    pump.start();
    queue.enqueue(new RenderReport("2026-11"));
    // README:leaseFencing end
    // spotless:on
    try (pump) {
      await().atMost(Duration.ofSeconds(30)).until(() -> queue.operations().depth().pending() == 0);
    }
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*), min(fence) FROM reports")) {
      rs.next();
      assertThat(rs.getLong(1)).isEqualTo(1);
      assertThat(rs.getLong(2)).isPositive();
    }
  }
}
