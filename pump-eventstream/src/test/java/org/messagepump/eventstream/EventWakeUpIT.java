package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;

/** An append's NOTIFY wakes an idle event pump long before its next poll. */
@ExtendWith(PostgresExtension.class)
class EventWakeUpIT {

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  @Test
  void anAppendWakesAnIdleHandler(DataSource ds) throws Exception {
    EventStore store = EVENTS.store();
    CountDownLatch seen = new CountDownLatch(1);
    EventDriver driver =
        store.driver(
            "sleepy",
            EventHandlers.builder().on(OrderPlaced.class, (e, ctx) -> seen.countDown()).build());
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("sleepy")
            .driver(driver)
            .workers(1)
            .pollInterval(Duration.ofMinutes(5))
            .build()) {
      pump.start();
      Thread.sleep(1_000); // not for correctness: lets the first (empty) poll pass
      inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("o-1", 1))));
      assertThat(seen.await(30, TimeUnit.SECONDS)).isTrue();
    }
  }
}
