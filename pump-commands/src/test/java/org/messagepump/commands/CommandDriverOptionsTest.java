package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CommandDriverOptionsTest {

  @Test
  void defaultsAreTransactionalMode() {
    assertThat(CommandDriverOptions.defaults().lease()).isEmpty();
    assertThat(CommandDriverOptions.defaults().toString()).contains("lease=none");
  }

  @Test
  void withLeaseCopiesAndValuesCompareByContent() {
    CommandDriverOptions base = CommandDriverOptions.defaults();
    CommandDriverOptions leased = base.withLease(Duration.ofSeconds(30));
    assertThat(leased.lease()).contains(Duration.ofSeconds(30));
    assertThat(base.lease()).isEmpty();
    assertThat(leased)
        .isEqualTo(CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30)))
        .hasSameHashCodeAs(CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30)))
        .isNotEqualTo(base)
        .isNotEqualTo(base.withLease(Duration.ofSeconds(31)));
    assertThat(leased.toString()).contains("PT30S");
    assertThat(leased.withoutLease()).isEqualTo(base);
    assertThat(base.withLease(CommandDriverOptions.MIN_LEASE).lease())
        .contains(CommandDriverOptions.MIN_LEASE);
    assertThat(base.withLease(CommandDriverOptions.MAX_LEASE).lease())
        .contains(CommandDriverOptions.MAX_LEASE);
  }

  @Test
  void aLeaseOutsideItsBoundsIsRefusedByName() {
    CommandDriverOptions o = CommandDriverOptions.defaults();
    assertThatThrownBy(() -> o.withLease(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> o.withLease(Duration.ofMillis(999)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease must be at least");
    assertThatThrownBy(() -> o.withLease(Duration.ofHours(1).plusNanos(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> o.withLease(Duration.ofSeconds(-5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
  }
}
