package org.messagepump.balancer.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancedHandler;
import org.messagepump.balancer.Balancer;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.core.MessagePump;
import org.messagepump.core.PumpTester;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The README's "Partition-balanced messages" snippet, compiled and run as written
 * (pump-architecture's {@code ReadmeSnippetsTest} checks the text between the markers is what
 * README.md shows).
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIT {

  /** The downstream system of the snippet: records what it was sent. */
  static final class Downstream {
    final List<String> sent = new ArrayList<>();

    boolean send(byte[] content) {
      sent.add(new String(content, StandardCharsets.UTF_8));
      return true;
    }
  }

  @Test
  void theBalancerSnippetRuns(TestDatabase db) {
    DataSource dataSource = db.dataSource();
    Downstream downstream = new Downstream();
    // README:balancer begin
    // spotless:off
    Balancer.migrate(dataSource);
    MessageBalancer tenants = MessageBalancer.create(dataSource, "tenants");
    tenants.storeMessage("account-1", "hello".getBytes(StandardCharsets.UTF_8));
    BalancedHandler handler = (message, ctx) ->
        downstream.send(message.content()) ? Result.ok() : Result.requeue();
    MessagePump pump = MessagePump.builder(dataSource)
        .name("tenants").driver(tenants.driver(handler).build()).build();
    // spotless:on
    // README:balancer end
    pump.close(); // never started: the tester runs the same driver synchronously
    PumpTester.builder(dataSource, tenants.driver(handler).build()).build().drainUntilIdle();
    assertThat(downstream.sent).containsExactly("hello");
    assertThat(tenants.messageCount()).isZero();
  }
}
