package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.messagepump.core.Envelope;

/**
 * A delivery's log keys (what the pump adds to the MDC while it runs the delivery) are checked when
 * the driver makes it.
 */
class DeliveryTest {

  private static final Envelope ENVELOPE =
      Envelope.of("m-1", "Order", "{}".getBytes(StandardCharsets.UTF_8));

  @Test
  void noKeysIsAnEmptyMapAndTheKeysAreACopy() {
    assertThat(new Delivery(ENVELOPE, 0, null, null).logKeys()).isEmpty();
    Map<String, String> keys = new HashMap<>(Map.of("partitionKey", "k"));
    Delivery d = new Delivery(ENVELOPE, 0, keys, null);
    keys.put("other", "x");
    assertThat(d.logKeys()).containsOnlyKeys("partitionKey");
  }

  @Test
  void aKeyThatIsBlankHasNoValueOrIsThePumpsOwnIsRefused() {
    Map<String, String> noValue = new HashMap<>();
    noValue.put("streamId", null);
    for (Map<String, String> bad : new Map[] {Map.of(" ", "x"), Map.of("attempt", "1"), noValue}) {
      assertThatThrownBy(() -> new Delivery(ENVELOPE, 0, bad, null))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("log keys");
    }
  }
}
