package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EnqueueOptionsTest {

  @Test
  void defaultsAreEmpty() {
    EnqueueOptions o = EnqueueOptions.defaults();
    assertThat(o.delay()).isNull();
    assertThat(o.deliverAt()).isNull();
    assertThat(o.idempotencyKey()).isNull();
    assertThat(o.headers()).isEmpty();
  }

  @Test
  void withersCopyAndKeepTheRest() {
    EnqueueOptions o =
        EnqueueOptions.defaults()
            .withIdempotencyKey("k")
            .withCorrelationId("c")
            .withCausationId("x")
            .withHeader("a", "1")
            .withHeader("b", "2")
            .withDelay(Duration.ofSeconds(3));
    assertThat(o)
        .isEqualTo(
            new EnqueueOptions(
                Duration.ofSeconds(3), null, "k", "c", "x", Map.of("a", "1", "b", "2")));
    Instant at = Instant.parse("2030-01-01T00:00:00Z");
    EnqueueOptions at2 = o.withDeliverAt(at);
    assertThat(at2.delay()).isNull();
    assertThat(at2.deliverAt()).isEqualTo(at);
    assertThat(at2.withDelay(Duration.ZERO).deliverAt()).isNull();
    assertThat(EnqueueOptions.defaults().headers()).isEmpty(); // defaults untouched
  }

  @Test
  void badValuesAreRejectedByName() {
    EnqueueOptions d = EnqueueOptions.defaults();
    assertThatThrownBy(() -> d.withDelay(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("delay must not be negative");
    assertThatThrownBy(() -> d.withIdempotencyKey(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey must not be blank");
    assertThatThrownBy(() -> d.withIdempotencyKey(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey");
    assertThatThrownBy(() -> d.withIdempotencyKey("k".repeat(EnqueueOptions.MAX_TEXT_LENGTH + 1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most");
    assertThatThrownBy(() -> d.withCorrelationId("  "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("correlationId");
    assertThatThrownBy(() -> d.withHeader(" ", "v"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header name");
    assertThatThrownBy(() -> d.withHeader("h", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header 'h'");
    Map<String, String> withNull = new HashMap<>();
    withNull.put("h", null);
    assertThatThrownBy(() -> d.withHeaders(withNull))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header 'h'");
    assertThatThrownBy(
            () -> new EnqueueOptions(Duration.ofSeconds(1), Instant.now(), null, null, null, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("exclusive");
  }

  @Test
  void thePriorityIsZeroByDefaultKeptByTheOtherOptionsAndCheckedByName() {
    assertThat(EnqueueOptions.defaults().priority()).isZero();
    assertThat(new EnqueueOptions(null, null, null, null, null, null).priority()).isZero();
    EnqueueOptions o =
        EnqueueOptions.defaults()
            .withPriority(EnqueueOptions.MAX_PRIORITY)
            .withDelay(Duration.ofSeconds(1))
            .withDeliverAt(Instant.parse("2030-01-01T00:00:00Z"))
            .withIdempotencyKey("k")
            .withCorrelationId("c")
            .withCausationId("x")
            .withHeader("a", "1")
            .withHeaders(Map.of("b", "2"));
    assertThat(o.priority()).isEqualTo(9);
    assertThat(o.withPriority(EnqueueOptions.MIN_PRIORITY).priority()).isZero();
    for (int bad : new int[] {-1, 10, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
      assertThatThrownBy(() -> EnqueueOptions.defaults().withPriority(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("priority must be between 0 and 9: " + bad);
    }
  }
}
