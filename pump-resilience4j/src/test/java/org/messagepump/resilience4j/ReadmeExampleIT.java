package org.messagepump.resilience4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.BusyException;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** docs/resilience.md's example of working against a downstream system, run as written. */
@ExtendWith(PostgresExtension.class)
class ReadmeExampleIT {

  /** A downstream that answers "429, retry after 1 s" to every second call. */
  static final class Gateway {
    private final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger charged = new AtomicInteger();

    boolean tooManyRequests() {
      return calls.incrementAndGet() % 2 == 0;
    }

    void charge(byte[] body) {
      charged.incrementAndGet();
    }
  }

  @Test
  void theReadmeExampleRuns(DataSource dataSource) {
    CommandOperations.of(dataSource).migrate();
    CommandQueue queue =
        CommandQueue.create(dataSource, JsonMessageCodec.of(MessageTypes.builder().build()));
    Gateway gateway = new Gateway();
    for (int i = 0; i < 6; i++) {
      queue.enqueueRaw(
          "billing.Charge", "{}".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults());
    }
    // spotless:off
    // README:downstream begin
    CommandHandlers handlers = CommandHandlers.builder()
        .onRaw("billing.Charge", (body, ctx) -> {
          if (gateway.tooManyRequests()) {   // HTTP 429 with Retry-After: 1
            throw new BusyException("gateway throttled", Duration.ofSeconds(1)); // no failure counted
          }
          gateway.charge(body);
        })
        .build();
    ResilientDriver driver = ResilientDriver.builder(queue.driver(handlers))
        .circuitBreaker("billing.Charge", CircuitBreakerConfig.custom()   // open: not acquired
            .failureRateThreshold(50).slidingWindowSize(20)
            .waitDurationInOpenState(Duration.ofSeconds(10)).build())
        .build();
    try (MessagePump pump = MessagePump.builder(dataSource)
            .name("billing")
            .driver(driver)
            .handlerTimeout(Duration.ofSeconds(30))   // interrupt, cancel its statement, count a failure
            .maxFailures(5)
            .build()) {
      pump.start();
      queue.operations().pauseType("billing.Charge", "gateway maintenance");   // every process stops taking them
      queue.operations().resumeType("billing.Charge");
      pump.pause();                                                            // this process only
      pump.resume();
      // README:downstream end
      // spotless:on
      pump.wake();
      await().atMost(Duration.ofSeconds(60)).until(() -> gateway.charged.get() == 6);
    }
    assertThat(queue.operations().deadLetters().count()).isZero();
  }
}
