package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BalancerDriverOptionsTest {

  @Test
  void defaultsAreTheDriversDefaults() {
    BalancerDriverOptions d = BalancerDriverOptions.defaults();
    assertThat(d.lockPartition()).isTrue();
    assertThat(d.messagesPerTurn()).isEqualTo(BalancerDriver.DEFAULT_MESSAGES_PER_TURN);
    assertThat(d.leaseDuration()).isEqualTo(BalancerDriver.DEFAULT_LEASE_DURATION);
    assertThat(d.reapInterval()).isEqualTo(BalancerDriver.DEFAULT_REAP_INTERVAL);
    assertThat(d.maxAttempts()).isEqualTo(BalancerDriver.DEFAULT_MAX_ATTEMPTS);
    assertThat(d.leaseOwner()).contains("@");
    assertThat(d.leaseMode()).isNull();
  }

  @Test
  void withMethodsReturnChangedCopiesThatCompareByValue() {
    BalancerDriverOptions d = BalancerDriverOptions.defaults();
    BalancerDriverOptions changed =
        d.withLockPartition(false)
            .withLockPartition(true)
            .withMessagesPerTurn(8)
            .withLeaseDuration(Duration.ofMinutes(2))
            .withReapInterval(Duration.ofSeconds(3))
            .withMaxAttempts(4)
            .withLeaseOwner("node-1")
            .withLeaseMode(Duration.ofSeconds(30));
    assertThat(changed.messagesPerTurn()).isEqualTo(8);
    assertThat(changed.leaseDuration()).isEqualTo(Duration.ofMinutes(2));
    assertThat(changed.reapInterval()).isEqualTo(Duration.ofSeconds(3));
    assertThat(changed.maxAttempts()).isEqualTo(4);
    assertThat(changed.leaseOwner()).isEqualTo("node-1");
    assertThat(changed.leaseMode()).isEqualTo(Duration.ofSeconds(30));
    assertThat(changed.withoutLeaseMode().leaseMode()).isNull();
    assertThat(d).isEqualTo(BalancerDriverOptions.defaults()).isNotEqualTo(changed);
    assertThat(d.withMessagesPerTurn(8)).isEqualTo(d.withMessagesPerTurn(8));
    assertThat(changed.toString()).contains("messagesPerTurn=8");
  }

  @Test
  void eachOptionIsCheckedAtOnceByName() {
    BalancerDriverOptions d = BalancerDriverOptions.defaults();
    assertThatThrownBy(() -> d.withMessagesPerTurn(0)).hasMessageContaining("messagesPerTurn");
    assertThatThrownBy(() -> d.withMessagesPerTurn(BalancerDriver.MAX_MESSAGES_PER_TURN + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messagesPerTurn");
    assertThatThrownBy(() -> d.withLeaseDuration(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseDuration");
    assertThatThrownBy(() -> d.withReapInterval(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reapInterval");
    assertThatThrownBy(() -> d.withMaxAttempts(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> d.withLeaseOwner(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseOwner");
    assertThatThrownBy(() -> d.withLeaseMode(Duration.ofMillis(10)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseMode");
    assertThatThrownBy(() -> d.withLeaseMode(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseMode");
  }

  @Test
  void leaseModeDefaultsItsAttemptsAndNeedsOneLockedMessagePerTurn() {
    BalancerDriverOptions lease =
        BalancerDriverOptions.defaults().withLeaseMode(Duration.ofMinutes(1));
    assertThat(lease.resolved().maxAttempts())
        .isEqualTo(BalancerDriver.DEFAULT_LEASE_MODE_MAX_ATTEMPTS);
    assertThat(lease.withMaxAttempts(2).resolved().maxAttempts()).isEqualTo(2);
    assertThatThrownBy(() -> lease.withLockPartition(false).resolved())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseMode");
    assertThatThrownBy(() -> lease.withMessagesPerTurn(2).resolved())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseMode");
    assertThatThrownBy(
            () ->
                BalancerDriverOptions.defaults()
                    .withMessagesPerTurn(2)
                    .withLockPartition(false)
                    .resolved())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messagesPerTurn");
  }
}
