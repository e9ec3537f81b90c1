package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.testkit.PostgresExtension;

/** A console on schemas other than the drivers' defaults shows those schemas, and only them. */
@ExtendWith(PostgresExtension.class)
class ConsoleSchemasIT {

  @Test
  void aConsoleShowsTheSchemasItIsGiven(DataSource ds) throws Exception {
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    CommandOperations.of(ds, "console_cq").migrate();
    EventOperations.of(ds, "console_es").migrate();
    BalancerOperations.of(ds, "console_bal").migrate();
    CommandQueue.builder(ds)
        .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
        .schema("console_cq")
        .build()
        .enqueueRaw(
            "elsewhere.Type", "{}".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults());
    ConsoleConfig other =
        ConsoleConfig.builder().schemas("console_cq", "console_es", "console_bal").build();
    try (ConsoleServer there = ConsoleServer.start(ds, other, "127.0.0.1", 0);
        ConsoleServer defaults =
            ConsoleServer.start(ds, ConsoleConfig.defaults(), "127.0.0.1", 0)) {
      assertThat(new Http(there.uri()).get("commands").body()).contains("elsewhere.Type");
      assertThat(new Http(defaults.uri()).get("commands").body()).doesNotContain("elsewhere.Type");
      assertThat(new Http(there.uri()).get("events").statusCode()).isEqualTo(200);
      assertThat(new Http(there.uri()).get("balancer").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void aSchemaNameADriverRefusesFailsWhenTheConsoleIsBuilt(DataSource ds) {
    for (ConsoleConfig bad :
        new ConsoleConfig[] {
          ConsoleConfig.builder().schemas("Bad-Name", "eventstream", "balancer").build(),
          ConsoleConfig.builder().schemas("commandqueue", "x\"; DROP", "balancer").build(),
          ConsoleConfig.builder().schemas("commandqueue", "eventstream", "").build()
        }) {
      assertThatThrownBy(() -> new ConsoleServlet(ds, bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
    }
    assertThatThrownBy(() -> ConsoleConfig.builder().schemas(null, "a", "b"))
        .isInstanceOf(NullPointerException.class);
  }
}
