package org.messagepump.balancer.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancedHandler;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriver;
import org.messagepump.balancer.BalancerDriverOptions;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The README's balancer snippet and docs/balancer.md's balancer-core sample, compiled and run as
 * written (pump-architecture's {@code ReadmeSnippetsTest} checks that every Java snippet of
 * README.md is the text between some pair of markers).
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIT {

  /** The downstream system of the snippet: records what it was sent. */
  static final class Downstream {
    final List<String> sent = new ArrayList<>();
    int refuse;

    /** Takes the content, unless it is still to refuse some. */
    boolean send(byte[] content) {
      sent.add(new String(content, StandardCharsets.UTF_8));
      return refuse-- <= 0;
    }
  }

  @Test
  void theBalancerSnippetRuns(TestDatabase db) {
    DataSource dataSource = db.dataSource();
    Downstream downstream = new Downstream();
    // README:balancer begin
    // spotless:off
    BalancerOperations.of(dataSource).migrate();
    MessageBalancer tenants = MessageBalancer.create(dataSource, "tenants");
    tenants.storeMessage("account-1", "hello".getBytes(StandardCharsets.UTF_8));
    BalancedHandlers handlers = BalancedHandlers.builder().on((message, ctx) ->
        downstream.send(message.content()) ? Result.ok() : Result.requeue()).build();
    MessagePump pump = MessagePump.builder(dataSource)
        .name("tenants").driver(tenants.driver(handlers)).build();
    // spotless:on
    // README:balancer end
    pump.close(); // never started: the tester runs the same driver synchronously
    PumpTester.builder(dataSource, tenants.driver(handlers)).build().drainUntilIdle();
    assertThat(downstream.sent).containsExactly("hello");
    assertThat(tenants.operations().messageCount(tenants.group())).isZero();
  }

  /** The "Coming from balancer-core" snippet: Requeue with a retry counter, then Ok. */
  @Test
  void theBalancerCoreSnippetRuns(TestDatabase db) {
    DataSource dataSource = db.dataSource();
    BalancerOperations.of(dataSource).migrate();
    Downstream downstream = new Downstream();
    downstream.refuse = 2;
    // README:balancercore begin
    // spotless:off
    MessageBalancer accounts = MessageBalancer.create(dataSource, "A"); // no init(): nothing to load
    accounts.storeMessage("x", "x1".getBytes(StandardCharsets.UTF_8), Map.of("retry", 0));
    BalancedHandler retrying = (message, ctx) -> {
      int retry = ((Number) message.properties().getOrDefault("retry", 0)).intValue();
      if (downstream.send(message.content()) || retry > 3) {
        return Result.ok();                                // {type: 'Ok'}
      }
      return Result.requeue(Map.of("retry", retry + 1));   // {type: 'Requeue', update: {properties}}
    };
    BalancerDriver driver = accounts.driver(BalancedHandlers.builder().on(retrying).build(),
        BalancerDriverOptions.defaults().withLockPartition(true));
    MessagePump consumers = MessagePump.builder(dataSource).name("A")  // the processNextMessage loops
        .driver(driver).workers(10).build();
    // spotless:on
    // README:balancercore end
    consumers.close(); // never started: the tester runs the same driver synchronously
    PumpTester.builder(dataSource, driver).build().drainUntilIdle();
    assertThat(downstream.sent).containsExactly("x1", "x1", "x1");
    assertThat(accounts.operations().messageCount(accounts.group())).isZero();
  }
}
