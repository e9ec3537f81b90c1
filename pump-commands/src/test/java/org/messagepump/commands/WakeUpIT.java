package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** An enqueue's NOTIFY wakes an idle command pump long before its next poll. */
@ExtendWith(PostgresExtension.class)
class WakeUpIT {

  @Test
  void anEnqueueWakesAnIdlePumpInOtherProcesses(DataSource ds) throws Exception {
    CommandQueue producer = Fixtures.queue(ds);
    CountDownLatch handled = new CountDownLatch(1);
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("sleepy")
            .driver(
                producer.driver(
                    CommandHandlers.builder()
                        .on(PlaceOrder.class, (c, ctx) -> handled.countDown())
                        .build()))
            .workers(1)
            .pollInterval(Duration.ofMinutes(5))
            .build()) {
      pump.start();
      Thread.sleep(1_000); // not for correctness: lets the first (empty) poll pass
      long t0 = System.nanoTime();
      // No pump.wake() and no in-process hook: only the database notification can wake it.
      producer.enqueue(new PlaceOrder("o-wake"));
      assertThat(handled.await(30, TimeUnit.SECONDS)).isTrue();
      assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).isLessThan(30);
    }
  }
}
