package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.testkit.PostgresExtension;

/** The operator face: made with no codec, it works on what a producer of its schema stored. */
@ExtendWith(PostgresExtension.class)
class CommandOperationsIT {

  private static final String SCHEMA = "cq_operator";

  @Test
  void anOperatorWithoutACodecWorksOnWhatTheProducerOfItsSchemaStored(DataSource ds) {
    CommandOperations operations = CommandOperations.of(ds, SCHEMA);
    assertThat(operations.schema()).isEqualTo(SCHEMA);
    assertThat(operations.migrate()).isPositive();
    assertThat(operations.migrate()).isZero();

    CommandQueue queue = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema(SCHEMA).build();
    assertThat(queue.operations()).isSameAs(queue.operations());
    assertThat(queue.operations().schema()).isEqualTo(SCHEMA);
    queue.enqueue(new PlaceOrder("o-1"), EnqueueOptions.defaults().withIdempotencyKey("op-1"));
    assertThat(operations.depth().of("orders.PlaceOrder").due()).isEqualTo(1);
    assertThat(operations.pending().findByKey("op-1"))
        .get()
        .extracting(PendingCommand::type)
        .isEqualTo("orders.PlaceOrder");

    // The producer encodes a schedule's command; an operator with no codec triggers it.
    assertThat(
            queue.defineSchedule(
                Schedule.every("op-tick", Duration.ofHours(1), new PlaceOrder("o-2"))))
        .isTrue();
    UUID triggered = operations.schedules().trigger("op-tick").orElseThrow();
    assertThat(operations.pending().find(triggered))
        .get()
        .extracting(PendingCommand::type)
        .isEqualTo("orders.PlaceOrder");
    assertThat(operations.schedules().list())
        .singleElement()
        .extracting(ScheduleInfo::triggered)
        .isEqualTo(1L);
  }

  @Test
  void grantStatementsNameTheOperatorsSchemaAndSendNothing(DataSource ds) {
    List<String> grants = CommandOperations.of(ds, "cq_never_migrated").grantStatements("app");
    assertThat(grants)
        .hasSize(3)
        .allSatisfy(g -> assertThat(g).contains("\"cq_never_migrated\"").endsWith("TO \"app\""));
    assertThatThrownBy(() -> CommandOperations.of(ds).grantStatements(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
  }

  @Test
  void badArgumentsAreRefusedByName(DataSource ds) {
    assertThatThrownBy(() -> CommandOperations.of(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dataSource");
    assertThatThrownBy(() -> CommandOperations.of(ds, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    for (String bad : List.of("Upper", "has-dash", "", "x".repeat(41), "pg_catalog")) {
      assertThatThrownBy(() -> CommandOperations.of(ds, bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
    }
    assertThatThrownBy(() -> CommandOperations.of(ds).history(null, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit");
    assertThatThrownBy(
            () -> CommandOperations.of(ds).history(null, CommandOperations.MAX_HISTORY_PAGE + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit");
  }
}
