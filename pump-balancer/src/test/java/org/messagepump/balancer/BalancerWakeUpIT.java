package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** A store's NOTIFY wakes an idle balancer pump long before its next poll. */
@ExtendWith(PostgresExtension.class)
class BalancerWakeUpIT {

  @Test
  void aStoredMessageWakesAnIdlePump(DataSource ds) throws Exception {
    BalancerOperations.of(ds).migrate();
    MessageBalancer group = MessageBalancer.create(ds, "wake");
    CountDownLatch handled = new CountDownLatch(1);
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("sleepy")
            .driver(
                group.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              handled.countDown();
                              return Result.ok();
                            })
                        .build()))
            .workers(1)
            .pollInterval(Duration.ofMinutes(5))
            .build()) {
      pump.start();
      Thread.sleep(1_000); // not for correctness: lets the first (empty) poll pass
      group.storeMessage("k", new byte[] {1});
      assertThat(handled.await(30, TimeUnit.SECONDS)).isTrue();
    }
  }
}
