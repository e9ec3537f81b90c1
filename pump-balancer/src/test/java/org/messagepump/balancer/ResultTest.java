package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.model.PartitionStats;

class ResultTest {

  @Test
  void requeueValidatesAndNormalizesProperties() {
    assertThat(((Result.Requeue) Result.requeue("{ \"a\" : 1 }")).propertiesJson())
        .isEqualTo("{\"a\":1}");
    assertThat(((Result.Requeue) Result.requeue(Map.of("retry", 2))).propertiesJson())
        .isEqualTo("{\"retry\":2}");
    assertThat(((Result.Requeue) Result.requeue()).propertiesJson()).isNull();
    assertThatThrownBy(() -> Result.requeue("[]"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("properties must be a JSON object");
    assertThatThrownBy(() -> Result.requeue("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("JSON object");
  }

  @Test
  void handoffLeaseMustBePositive() {
    assertThat(((Result.Handoff) Result.handoff()).lease()).isNull();
    assertThat(((Result.Handoff) Result.handoff(Duration.ofSeconds(3))).lease())
        .isEqualTo(Duration.ofSeconds(3));
    assertThatThrownBy(() -> Result.handoff(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
  }

  @Test
  void factoriesBuildTheClosedSet() {
    assertThat(Result.ok()).isInstanceOf(Result.Ok.class);
  }

  @Test
  void messagePropertiesParseAsAMap() {
    BalancedMessage m =
        new BalancedMessage(
            7,
            "g",
            "k",
            new byte[] {1},
            "{\"retry\":3,\"tags\":[\"a\"]}",
            null,
            0,
            0,
            UUID.randomUUID());
    assertThat(m.properties()).containsEntry("retry", 3).containsKey("tags");
    assertThat(m.toString()).contains("id=7").contains("1 bytes");
  }

  @Test
  void partitionStatsSaysInFlight() {
    PartitionStats idle =
        new PartitionStats("k", 1, false, null, null, 0, null, null, Duration.ZERO);
    PartitionStats leased =
        new PartitionStats("k", 1, false, 9L, null, 0, null, null, Duration.ZERO);
    assertThat(idle.inFlight()).isFalse();
    assertThat(leased.inFlight()).isTrue();
    assertThat(idle.parked()).isFalse();
  }
}
