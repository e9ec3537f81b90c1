package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
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
 * Where a retried command is, as the commands page's "recently retried" table shows it: waiting,
 * running under a lease (with its holder and expiry), handled.
 */
@ExtendWith(PostgresExtension.class)
class StoresLeaseIT {

  private static final String SCHEMA = "stores_lease";
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  @Test
  void aCommandIsWaitingThenLeasedWithItsHolderThenDone(DataSource ds) throws Exception {
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    CommandOperations.of(ds, SCHEMA).migrate();
    Stores stores = new Stores(ds, SCHEMA, "eventstream", "balancer");
    CommandQueue queue =
        CommandQueue.builder(ds)
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .schema(SCHEMA)
            .build();
    UUID id = queue.enqueueRaw("exports.Run", BODY, EnqueueOptions.defaults()).messageId();
    assertThat(stores.commandState(id))
        .isEqualTo(new Stores.CommandStatus(Stores.CommandState.WAITING, null, null));

    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "exports.Run",
                (b, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    Instant before = Instant.now();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("stores-lease")
            .driver(
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofMinutes(5))))
            .workers(1)
            .pollInterval(Duration.ofMillis(50))
            .build()) {
      pump.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      Stores.CommandStatus s = stores.commandState(id);
      assertThat(s.state()).isEqualTo(Stores.CommandState.LEASED);
      assertThat(s.holder())
          .isEqualTo(java.lang.management.ManagementFactory.getRuntimeMXBean().getName());
      // Bounded generously for the difference of the database's clock and this JVM's.
      assertThat(s.leaseExpiresAt()).isAfter(before.plus(Duration.ofMinutes(4)));
      finish.countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> stores.commandState(id).state() == Stores.CommandState.DONE);
    }
    assertThat(stores.commandState(UUID.randomUUID()).state()).isEqualTo(Stores.CommandState.DONE);
  }
}
