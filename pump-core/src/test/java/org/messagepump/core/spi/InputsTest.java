package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.messagepump.core.Limits;

class InputsTest {

  @Test
  void keysRefuseNullEmptyNulAndMoreThanTheIndexLimitInBytes() {
    assertThatThrownBy(() -> Inputs.key("group", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("group");
    assertThatThrownBy(() -> Inputs.key("group", "")).hasMessageContaining("empty");
    assertThatThrownBy(() -> Inputs.key("type", "a\0b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type")
        .hasMessageContaining("NUL");
    String cjk = "漢".repeat(171); // 513 bytes
    assertThatThrownBy(() -> Inputs.key("key", cjk))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("512");
    assertThat(Inputs.key("key", "漢".repeat(170))).hasSize(170);
    assertThat(Inputs.key("key", "x".repeat(512))).hasSize(512);
    assertThat(Inputs.optionalKey("correlationId", null)).isNull();
  }

  @Test
  void schemaNamesAreLowerCaseIdentifiersOfAtMost40CharactersAndNotSystemSchemas() {
    assertThat(Inputs.schema("schema", "tenant_1")).isEqualTo("tenant_1");
    assertThat(Inputs.schema("schema", "_" + "a".repeat(39))).hasSize(40);
    assertThatThrownBy(() -> Inputs.schema("schema", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("schema");
    for (String bad :
        new String[] {"", "1st", "Upper", "a-b", "a b", "a\0b", "quote\"d", "a".repeat(41)}) {
      assertThatThrownBy(() -> Inputs.schema("schema", bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema must match [a-z_][a-z0-9_]* with at most 40 characters");
    }
    for (String system : new String[] {"pg_catalog", "pg_temp_3", "information_schema"}) {
      assertThatThrownBy(() -> Inputs.schema("schema", system))
          .as(system)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("system schema");
    }
    assertThat(Inputs.MAX_SCHEMA_LENGTH).isEqualTo(40);
    // A table name may start with pg_ (it lives in the caller's schema).
    assertThat(Inputs.identifier("historyTable", "pg_history", 63)).isEqualTo("pg_history");
  }

  @Test
  void headersAreCheckedForNullsNulCountAndSize() {
    Map<String, String> withNull = new HashMap<>();
    withNull.put("a", null);
    assertThatThrownBy(() -> Inputs.headers(withNull, Limits.defaults()))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("header 'a'");
    assertThatThrownBy(() -> Inputs.headers(Map.of("a", "x\0"), Limits.defaults()))
        .hasMessageContaining("NUL");
    Map<String, String> many = new LinkedHashMap<>();
    for (int i = 0; i < 65; i++) {
      many.put("h" + i, "v");
    }
    assertThatThrownBy(() -> Inputs.headers(many, Limits.defaults())).hasMessageContaining("64");
    Map<String, String> big = new LinkedHashMap<>();
    for (int i = 0; i < 20; i++) {
      big.put("h" + i, "v".repeat(1_000));
    }
    assertThatThrownBy(() -> Inputs.headers(big, Limits.defaults()))
        .hasMessageContaining(String.valueOf(Limits.DEFAULT_MAX_HEADER_BYTES));
    assertThat(Inputs.headers(big, Limits.defaults().withMaxHeaderBytes(100_000))).hasSize(20);
    assertThat(Inputs.headers(null, Limits.defaults())).isEmpty();
  }

  @Test
  void payloadJsonDelaysAndInstantsHaveLimits() {
    Limits small = Limits.defaults().withMaxPayloadBytes(10);
    assertThatThrownBy(() -> Inputs.payload("payload", new byte[11], small))
        .hasMessageContaining("10");
    assertThatThrownBy(() -> Inputs.json("properties", "{\"a\":\"\\u0000\"}", 100))
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> Inputs.delay("delay", Duration.ofSeconds(Long.MAX_VALUE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("36500 days");
    assertThatThrownBy(() -> Inputs.delay("delay", Duration.ofSeconds(-1)))
        .hasMessageContaining("negative");
    assertThatThrownBy(() -> Inputs.instant("at", Instant.MAX))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("9999");
    assertThat(Inputs.instant("at", Instant.parse("2030-01-01T00:00:00Z"))).isNotNull();
    assertThatThrownBy(() -> Limits.defaults().withMaxPayloadBytes(0))
        .hasMessageContaining("maxPayloadBytes");
  }

  @Test
  void reasonsAreSanitizedAndCut() {
    assertThat(Inputs.reason("a\0b\u0007c\td\ne")).isEqualTo("a\uFFFDb\uFFFDc\td\ne");
    assertThat(Inputs.reason("x".repeat(10_000))).hasSize(Limits.MAX_REASON_CHARS + 6);
    assertThat(Inputs.reason("\uD800 lone")).startsWith("\uFFFD");
    assertThat(Inputs.reason(null)).isEqualTo("(no reason)");
  }

  @Test
  void everyDriversWakeChannelIsNamedAfterTheDriverAndTheSchemaWithinPostgresLimits() {
    assertThat(WakeSignal.channel("commands", "commandqueue"))
        .isEqualTo("messagepump_commands_commandqueue");
    String longest = WakeSignal.channel("abcdefghij", "s".repeat(Inputs.MAX_SCHEMA_LENGTH));
    assertThat(longest).hasSize(63);
    for (String bad : new String[] {"", "Upper", "with_underscore", "abcdefghijk", "a1"}) {
      assertThatThrownBy(() -> WakeSignal.channel(bad, "s"))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("driver must be 1 to 10 lower-case letters");
    }
    assertThatThrownBy(() -> WakeSignal.channel("commands", "s".repeat(41)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema must match");
  }
}
