package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.messagepump.core.RetryPolicy;

/** The pump's options as one value: defaults, derived copies, checks, and the builders on it. */
class PumpOptionsTest {

  @Test
  void theDefaults() {
    PumpOptions d = PumpOptions.defaults();
    assertThat(d.workers()).isEqualTo(4);
    assertThat(d.batchSize()).isEqualTo(1);
    assertThat(d.pollInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.retryPolicy()).isEqualTo(RetryPolicy.defaults());
    assertThat(d.typeRetryPolicies()).isEmpty();
    assertThat(d.handlerTimeout()).isEmpty();
    assertThat(d.typeHandlerTimeouts()).isEmpty();
    assertThat(d.shutdownGrace()).isEqualTo(Duration.ofSeconds(10));
    assertThat(d.notifications()).isTrue();
  }

  @Test
  void withMethodsReturnChangedCopiesAndLeaveTheOriginal() {
    RetryPolicy ping = RetryPolicy.retryForever().withFixedDelay(Duration.ofSeconds(3));
    PumpOptions o =
        PumpOptions.defaults()
            .withWorkers(8)
            .withBatchSize(16)
            .withPollInterval(Duration.ofMillis(200))
            .withMaxFailures(5)
            .withBackoff(Duration.ofMillis(50), Duration.ofMinutes(1))
            .withRetryPolicy("test.Ping", ping)
            .withHandlerTimeout(Duration.ofSeconds(30))
            .withHandlerTimeout("test.Ping", Duration.ofSeconds(5))
            .withShutdownGrace(Duration.ZERO)
            .withNotifications(false);
    assertThat(o.workers()).isEqualTo(8);
    assertThat(o.batchSize()).isEqualTo(16);
    assertThat(o.pollInterval()).isEqualTo(Duration.ofMillis(200));
    RetryPolicy pump =
        RetryPolicy.defaults()
            .withMaxAttempts(5)
            .withExponentialBackoff(Duration.ofMillis(50), Duration.ofMinutes(1));
    assertThat(o.retryPolicy()).isEqualTo(pump);
    assertThat(o.retryPolicy("test.Ping")).isEqualTo(ping);
    assertThat(o.retryPolicy("test.Pong")).isEqualTo(pump);
    assertThat(o.typeRetryPolicies()).isEqualTo(Map.of("test.Ping", ping));
    assertThat(o.handlerTimeout()).isEqualTo(Optional.of(Duration.ofSeconds(30)));
    assertThat(o.typeHandlerTimeouts()).isEqualTo(Map.of("test.Ping", Duration.ofSeconds(5)));
    assertThat(o.shutdownGrace()).isZero();
    assertThat(o.notifications()).isFalse();
    assertThat(PumpOptions.defaults().workers()).as("the defaults are untouched").isEqualTo(4);
    assertThat(o.typeRetryPolicies()).isUnmodifiable();
    assertThat(o)
        .isEqualTo(
            PumpOptions.defaults()
                .withNotifications(false)
                .withShutdownGrace(Duration.ZERO)
                .withHandlerTimeout("test.Ping", Duration.ofSeconds(5))
                .withHandlerTimeout(Duration.ofSeconds(30))
                .withRetryPolicy("test.Ping", ping)
                .withRetryPolicy(pump)
                .withPollInterval(Duration.ofMillis(200))
                .withBatchSize(16)
                .withWorkers(8))
        .hasSameHashCodeAs(o.withWorkers(8))
        .isNotEqualTo(o.withWorkers(7));
    assertThat(o.toString()).contains("workers=8", "test.Ping");
  }

  @Test
  void badValuesAreRefusedNamingTheOptionAndTheValue() {
    PumpOptions d = PumpOptions.defaults();
    refused(() -> d.withWorkers(0), "workers must be >= 1: 0");
    refused(() -> d.withBatchSize(65), "batchSize must be between 1 and 64: 65");
    refused(() -> d.withBatchSize(0), "batchSize must be between 1 and 64: 0");
    refused(() -> d.withPollInterval(Duration.ZERO), "pollInterval must be positive: PT0S");
    refused(() -> d.withPollInterval(null), "pollInterval must not be null");
    refused(() -> d.withMaxFailures(0), "maxFailures must be >= 1: 0");
    refused(
        () -> d.withBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)),
        "backoffCap (PT1S) must be >= backoffBase (PT2S)");
    refused(() -> d.withRetryPolicy(null), "retryPolicy must not be null");
    refused(() -> d.withRetryPolicy(null, RetryPolicy.defaults()), "messageType must not be null");
    refused(
        () -> d.withRetryPolicy("test.Ping", null), "retryPolicy of test.Ping must not be null");
    refused(() -> d.withHandlerTimeout(Duration.ofMillis(-1)), "handlerTimeout must be positive");
    refused(
        () -> d.withHandlerTimeout(Duration.ofDays(40_000)),
        "handlerTimeout must be at most 36500 days");
    refused(
        () -> d.withHandlerTimeout("test.Ping", Duration.ZERO),
        "handlerTimeout of test.Ping must be positive");
    refused(
        () -> d.withShutdownGrace(Duration.ofSeconds(-1)),
        "shutdownGrace must not be negative: PT-1S");
  }

  private static void refused(
      org.assertj.core.api.ThrowableAssert.ThrowingCallable call, String message) {
    assertThatThrownBy(call)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  @Test
  void theBuilderHoldsItsOptionsAsPumpOptions() {
    FakeDatabase db = new FakeDatabase();
    PumpOptions given = PumpOptions.defaults().withWorkers(2).withMaxFailures(3);
    MessagePump.Builder b = MessagePump.builder(db.dataSource()).options(given);
    assertThat(b.resolvedOptions()).isEqualTo(given);
    // Setters after options(...) change it; options(...) replaces what was set before.
    b.batchSize(8).backoffBase(Duration.ofSeconds(1));
    assertThat(b.resolvedOptions())
        .isEqualTo(
            given
                .withBatchSize(8)
                .withBackoff(Duration.ofSeconds(1), RetryPolicy.DEFAULT_BACKOFF_CAP));
    b.options(PumpOptions.defaults());
    assertThat(b.resolvedOptions()).isEqualTo(PumpOptions.defaults());
    // A backoff base and cap set one at a time are checked together, at build.
    b.backoffBase(Duration.ofMinutes(10));
    refused(b::resolvedOptions, "backoffCap (PT5M) must be >= backoffBase (PT10M)");
    b.backoffCap(Duration.ofMinutes(20));
    assertThat(b.resolvedOptions().retryPolicy())
        .isEqualTo(
            RetryPolicy.defaults()
                .withExponentialBackoff(Duration.ofMinutes(10), Duration.ofMinutes(20)));
    // A retry policy replaces the parts set before it.
    RetryPolicy fixed = RetryPolicy.defaults().withFixedDelay(Duration.ofSeconds(2));
    b.retryPolicy(fixed);
    assertThat(b.resolvedOptions().retryPolicy()).isEqualTo(fixed);
    refused(() -> b.options(null), "options must not be null");
  }
}
