package org.messagepump.chaos.kit;

import java.nio.ByteBuffer;
import java.sql.PreparedStatement;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriverOptions;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.chaos.Work;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventStore;

/**
 * The drivers of the fault scenarios (pump-chaos) and of the deployment scenarios
 * (pump-deployment): every handler records its delivery in the {@link Ledger} inside the delivery's
 * transaction, so a lost or doubled delivery shows in the ledger.
 */
public final class LedgerDrivers {

  private LedgerDrivers() {}

  /**
   * A driver of {@code kind} ({@code commands}, {@code events}, {@code balancer} or {@code
   * balancer-runs}: batches of runs) on {@code ds} whose deliveries are recorded as {@code node}.
   * Events are read under {@code handlerKey}; balancer messages (whose content is their sequence
   * number, a long) come from {@code group}, and when {@code handoffEvery} is positive every
   * message whose sequence number is a multiple of it is handed off (its token written to {@code
   * chaos.handoffs}) instead of done.
   */
  public static Driver create(
      String kind, DataSource ds, String node, String handlerKey, String group, int handoffEvery) {
    switch (kind) {
      case "commands":
        return CommandQueue.create(ds, Work.CODEC)
            .driver(
                CommandHandlers.builder()
                    .on(
                        Work.class,
                        (w, ctx) ->
                            Ledger.record(
                                ctx.tx().connection(),
                                ctx.messageId().toString(),
                                ctx.attempt(),
                                node))
                    .build());
      case "events":
        return EventStore.create(ds, Work.CODEC)
            .driver(
                handlerKey,
                EventHandlers.builder()
                    .on(
                        Work.class,
                        (w, ctx) ->
                            Ledger.record(
                                ctx.tx().connection(),
                                ctx.messageId(),
                                ctx.attempt(),
                                node,
                                Long.toString(ctx.streamId()),
                                ctx.offset()))
                    .build());
      case "balancer":
      case "balancer-runs":
        return MessageBalancer.create(ds, group)
            .driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          long seq = ByteBuffer.wrap(m.content()).getLong();
                          Ledger.record(
                              ctx.tx().connection(),
                              "b" + m.id(),
                              1 + m.attempts(),
                              node,
                              m.partitionKey(),
                              seq);
                          if (handoffEvery <= 0 || seq % handoffEvery != 0) {
                            return Result.ok();
                          }
                          try (PreparedStatement ps =
                              ctx.tx()
                                  .connection()
                                  .prepareStatement(
                                      "INSERT INTO chaos.handoffs (message_id, token) VALUES (?, ?)")) {
                            ps.setLong(1, m.id());
                            ps.setObject(2, m.handoffToken());
                            ps.executeUpdate();
                          }
                          return Result.handoff();
                        })
                    .build(),
                // balancer-runs: batches of runs (NodeMain gives its pump batches of 10).
                BalancerDriverOptions.defaults()
                    .withMessagesPerTurn(kind.equals("balancer-runs") ? 5 : 1));
      default:
        throw new IllegalArgumentException(
            "kind must be commands, events, balancer or balancer-runs, not " + kind);
    }
  }
}
