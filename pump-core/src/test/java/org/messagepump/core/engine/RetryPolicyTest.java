package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;
import org.messagepump.core.Limits;
import org.messagepump.core.RetryAfter;
import org.messagepump.core.RetryPolicy;

class RetryPolicyTest {

  private final RandomGenerator random = new SplittableRandom(7);

  @Test
  void theDefaultParksAtTheTwentyFifthFailureWithTheCappedExponentialBackoff() {
    RetryPolicy p = RetryPolicy.defaults();
    assertThat(p.maxAttempts())
        .isEqualTo(25)
        .isEqualTo(PumpOptions.defaults().retryPolicy().maxAttempts());
    assertThat(p.retriesForever()).isFalse();
    assertThat(p.backoffBase()).isEqualTo(Duration.ofMillis(250));
    assertThat(p.backoffCap()).isEqualTo(Duration.ofMinutes(5));
    assertThat(p.isFixedDelay()).isFalse();
    assertThat(p.nonRetryable()).isEmpty();
    assertThat(p.parks(24, new IllegalStateException())).isFalse();
    assertThat(p.parks(25, new IllegalStateException())).isTrue();
    for (int n = 1; n <= 30; n++) {
      assertThat(p.delay(n, random))
          .as("delay after %d failures", n)
          .isBetween(p.backoffBase(), p.backoff().ceiling(n));
    }
    assertThat(p.backoff().ceiling(3)).isEqualTo(Duration.ofSeconds(2));
    assertThat(p.backoff().ceiling(11)).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void theDocumentedTimeToParkMatchesTheDefaultCurve() {
    // The 24 waits before the 25th failure: at least 24 bases, at most the sum of the ceilings,
    // on average their midpoints (equal jitter is uniform between base and ceiling).
    RetryPolicy p = RetryPolicy.defaults();
    Duration least = Duration.ZERO;
    Duration most = Duration.ZERO;
    for (int n = 1; n < p.maxAttempts(); n++) {
      least = least.plus(p.backoffBase());
      most = most.plus(p.backoff().ceiling(n));
    }
    Duration mean = least.plus(most).dividedBy(2);
    assertThat(least).isEqualTo(Duration.ofSeconds(6));
    assertThat(most).isEqualTo(Duration.ofMillis(4_711_500)); // about 79 min
    assertThat(mean.toMinutes()).isEqualTo(39); // 39 min 19 s
  }

  @Test
  void retryForeverNeverParksButForANonRetryableFailure() {
    RetryPolicy p = RetryPolicy.retryForever();
    assertThat(p.retriesForever()).isTrue();
    assertThat(p.maxAttempts()).isEqualTo(MessagePump.UNLIMITED_FAILURES);
    assertThat(p.parks(Integer.MAX_VALUE - 1, new RuntimeException())).isFalse();
    assertThat(p.backoffBase()).isEqualTo(RetryPolicy.defaults().backoffBase());
    RetryPolicy strict = p.withNonRetryable(IOException.class);
    assertThat(strict.parks(1, new java.io.FileNotFoundException("x"))).isTrue(); // a subclass
    assertThat(strict.parks(1, new UncheckedIOException(new IOException()))).isFalse(); // a cause
    assertThat(strict.parks(1, null)).isFalse();
  }

  @Test
  void aFixedDelayWaitsTheSameEveryTimeAndIsTheBusyDelay() {
    RetryPolicy p = RetryPolicy.defaults().withMaxAttempts(3).withFixedDelay(Duration.ofSeconds(2));
    assertThat(p.isFixedDelay()).isTrue();
    for (int n = 0; n <= 40; n++) {
      assertThat(p.delay(n, random)).isEqualTo(Duration.ofSeconds(2));
    }
    assertThat(RetryAfter.delay(null, p.backoff())).isEqualTo(Duration.ofSeconds(2));
    assertThat(p.parks(2, new RuntimeException())).isFalse();
    assertThat(p.parks(3, new RuntimeException())).isTrue();
    assertThat(p).hasToString("RetryPolicy[maxAttempts=3, fixedDelay=PT2S]");
  }

  @Test
  void withersReturnChangedCopiesAndLeaveTheOriginal() {
    RetryPolicy base = RetryPolicy.defaults();
    RetryPolicy changed =
        base.withMaxAttempts(2)
            .withExponentialBackoff(Duration.ofMillis(10), Duration.ofSeconds(1))
            .withNonRetryable(IllegalArgumentException.class, IllegalStateException.class)
            .withNonRetryable(IllegalArgumentException.class); // replaces the set
    assertThat(base).isEqualTo(RetryPolicy.defaults());
    assertThat(changed.maxAttempts()).isEqualTo(2);
    assertThat(changed.backoffBase()).isEqualTo(Duration.ofMillis(10));
    assertThat(changed.backoffCap()).isEqualTo(Duration.ofSeconds(1));
    assertThat(changed.nonRetryable()).containsExactly(IllegalArgumentException.class);
    assertThat(changed.isNonRetryable(new IllegalStateException())).isFalse();
    assertThat(changed)
        .isEqualTo(
            RetryPolicy.defaults()
                .withNonRetryable(IllegalArgumentException.class)
                .withExponentialBackoff(Duration.ofMillis(10), Duration.ofSeconds(1))
                .withMaxAttempts(2))
        .hasSameHashCodeAs(
            RetryPolicy.defaults()
                .withNonRetryable(IllegalArgumentException.class)
                .withExponentialBackoff(Duration.ofMillis(10), Duration.ofSeconds(1))
                .withMaxAttempts(2));
    assertThatThrownBy(() -> changed.nonRetryable().clear())
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void invalidOptionsAreRejectedNamingTheOption() {
    RetryPolicy p = RetryPolicy.defaults();
    assertThatThrownBy(() -> p.withMaxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> p.withExponentialBackoff(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffBase");
    assertThatThrownBy(() -> p.withExponentialBackoff(Duration.ofSeconds(1), null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffCap");
    assertThatThrownBy(() -> p.withExponentialBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffCap");
    assertThatThrownBy(() -> p.withFixedDelay(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fixedDelay");
    assertThatThrownBy(() -> p.withFixedDelay(Limits.MAX_DELAY.plusDays(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fixedDelay");
    assertThatThrownBy(() -> p.withNonRetryable((Class<? extends Throwable>) null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nonRetryable");
    @SuppressWarnings({"unchecked", "rawtypes"})
    java.util.List<Class<? extends Throwable>> notThrowable =
        (java.util.List) java.util.List.of(String.class);
    assertThatThrownBy(() -> p.withNonRetryable(notThrowable))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nonRetryable");
  }

  @Test
  void theBuildersShorthandsChangeThePumpsPolicyAndTypesKeepTheirOwn() {
    javax.sql.DataSource ds = new FakeDatabase().dataSource();
    RetryPolicy orders = RetryPolicy.retryForever().withFixedDelay(Duration.ofSeconds(1));
    RetryPolicies policies =
        MessagePump.builder(ds)
            .retryPolicy(RetryPolicy.defaults().withNonRetryable(IOException.class))
            .maxFailures(3)
            .backoff(Duration.ofMillis(10), Duration.ofSeconds(2))
            .retryPolicy("orders.PlaceOrder", orders)
            .policies();
    assertThat(policies.perPump())
        .isEqualTo(
            RetryPolicy.defaults()
                .withMaxAttempts(3)
                .withExponentialBackoff(Duration.ofMillis(10), Duration.ofSeconds(2))
                .withNonRetryable(IOException.class));
    assertThat(policies.of("orders.PlaceOrder")).isSameAs(orders);
    assertThat(policies.of("orders.ShipOrder")).isSameAs(policies.perPump());
    // A new pump's default: the finite default policy.
    assertThat(MessagePump.builder(ds).policies().perPump()).isEqualTo(RetryPolicy.defaults());
    // retryPolicy replaces what the shorthands set before it.
    assertThat(
            MessagePump.builder(ds)
                .maxFailures(2)
                .retryPolicy(RetryPolicy.retryForever())
                .policies()
                .perPump())
        .isEqualTo(RetryPolicy.retryForever());
    assertThatThrownBy(() -> MessagePump.builder(ds).retryPolicy(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryPolicy");
    assertThatThrownBy(() -> MessagePump.builder(ds).retryPolicy("orders.X", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryPolicy of orders.X");
    assertThatThrownBy(() -> MessagePump.builder(ds).retryPolicy(null, orders))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messageType");
  }
}
