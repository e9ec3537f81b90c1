package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class GaugeReadingTest {

  @Test
  void oneReadServesEveryCallerWithinTheInterval() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    GaugeReading<Integer> r =
        GaugeReading.of("test", Duration.ofMinutes(1), -1, reads::incrementAndGet);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    CountDownLatch go = new CountDownLatch(1);
    for (int i = 0; i < 200; i++) {
      pool.execute(
          () -> {
            try {
              go.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            assertThat(r.get()).isEqualTo(1);
          });
    }
    go.countDown();
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    assertThat(reads).hasValue(1);
  }

  @Test
  void aFailedReadKeepsTheLastFiguresAndTheNextIntervalTriesAgain() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    GaugeReading<Integer> r =
        GaugeReading.of(
            "test",
            Duration.ofMillis(50),
            -1,
            () -> {
              int n = calls.incrementAndGet();
              if (n == 1 || n == 3) {
                throw new IllegalStateException("database down");
              }
              return n;
            });
    assertThat(r.get()).as("before any success: the initial figures").isEqualTo(-1);
    assertThat(r.get()).as("within the interval: no new read").isEqualTo(-1);
    Thread.sleep(60);
    assertThat(r.get()).isEqualTo(2);
    Thread.sleep(60);
    assertThat(r.get()).as("a failure keeps the last figures").isEqualTo(2);
    Thread.sleep(60);
    assertThat(r.get()).isEqualTo(4);
    assertThat(calls).hasValue(4);
  }

  @Test
  void badArgumentsAreRefused() {
    assertThatThrownBy(() -> GaugeReading.of("x", Duration.ZERO, 0, () -> 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("refresh");
    assertThatThrownBy(() -> GaugeReading.of("x", null, 0, () -> 1))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
