package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.Envelope;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.StatementCapture;
import org.messagepump.testkit.TestDatabase;

/**
 * With {@code standard_conforming_strings = off} (backslashes escape in plain literals), values
 * with backslashes and quotes still round-trip exactly and none is executed as SQL: they are bound.
 */
@ExtendWith(PostgresExtension.class)
class StandardConformingStringsOffIT {

  private static final String EVIL = "x\\'; DROP TABLE scs_canary; --";

  @Test
  void valuesRoundTripAndNothingIsExecuted(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE scs_canary (v int)");
    db.execute("ALTER DATABASE \"" + db.name() + "\" SET standard_conforming_strings = off");
    StatementCapture capture = StatementCapture.of(db.newDataSource("scs-off", 6));
    DataSource ds = capture.dataSource();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW standard_conforming_strings")) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo("off");
    }
    CommandOperations.of(ds, "cq_scs").migrate();
    capture.clear();
    CommandQueue queue = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema("cq_scs").build();
    EnqueueOptions options =
        EnqueueOptions.defaults()
            .withIdempotencyKey(EVIL)
            .withCorrelationId(EVIL + "c")
            .withCausationId("\\\\" + EVIL)
            .withHeader(EVIL, EVIL + "\\");
    UUID good = queue.enqueue(new PlaceOrder(EVIL), options).messageId();
    String badType = "t\\" + EVIL;
    byte[] badPayload = ("\\x00" + EVIL).getBytes(StandardCharsets.UTF_8);
    UUID bad = queue.enqueueRaw(badType, badPayload, EnqueueOptions.defaults()).messageId();

    List<Envelope> seen = new CopyOnWriteArrayList<>();
    List<String> orders = new CopyOnWriteArrayList<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (cmd, ctx) -> {
                  orders.add(cmd.orderId());
                  seen.add(ctx.envelope());
                })
            .onRaw(
                badType,
                (b, ctx) -> {
                  throw new IllegalStateException(EVIL);
                })
            .build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("scs")
            .driver(queue.driver(handlers))
            .workers(1)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(20), Duration.ofMillis(100))
            .maxFailures(2)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> orders.size() == 1 && queue.operations().deadLetters().count() == 1);
    }
    assertThat(orders).containsExactly(EVIL);
    Envelope e = seen.get(0);
    assertThat(e.messageId()).isEqualTo(good.toString());
    assertThat(e.correlationId()).isEqualTo(EVIL + "c");
    assertThat(e.causationId()).isEqualTo("\\\\" + EVIL);
    assertThat(e.headers()).isEqualTo(Map.of(EVIL, EVIL + "\\"));
    DeadLetter d = queue.operations().deadLetters().find(bad).orElseThrow();
    assertThat(d.type()).isEqualTo(badType);
    assertThat(d.envelope().payload()).isEqualTo(badPayload);
    assertThat(d.lastError()).contains(EVIL);
    assertThat(queue.enqueue(new PlaceOrder("again"), options).isDuplicate()).isTrue();
    assertThat(db.queryLong("SELECT count(*) FROM scs_canary")).isZero();
    assertThat(capture.statementsWithLiteralsOtherThan(SqlSafetyIT.ALLOWED)).isEmpty();
  }
}
