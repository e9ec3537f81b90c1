package org.messagepump.balancer;

import java.util.ArrayList;
import java.util.List;
import org.messagepump.balancer.internal.LeaseOutcome;
import org.messagepump.balancer.internal.StoreQueries.GroupFigures;
import org.messagepump.balancer.internal.StoreQueries.KeyFigures;

/**
 * The public value types made of what the internal queries return: the internal package does not
 * know the public one.
 */
final class FromInternal {

  private FromInternal() {}

  static LeaseResult leaseResult(LeaseOutcome outcome) {
    return switch (outcome) {
      case APPLIED -> LeaseResult.APPLIED;
      case STALE_TOKEN -> LeaseResult.STALE_TOKEN;
      case UNKNOWN_MESSAGE -> LeaseResult.UNKNOWN_MESSAGE;
    };
  }

  static GroupStats groupStats(GroupFigures g) {
    return new GroupStats(
        g.group(), g.partitions(), g.messages(), g.leases(), g.parked(), g.oldestAge());
  }

  /** The groups' stats, in order (a mutable list, as the query's was). */
  static List<GroupStats> groupStatsList(List<GroupFigures> groups) {
    List<GroupStats> out = new ArrayList<>(groups.size());
    for (GroupFigures g : groups) {
      out.add(groupStats(g));
    }
    return out;
  }

  /** The key's stats, or null when there are no figures. */
  static PartitionStats partitionStats(KeyFigures k) {
    return k == null
        ? null
        : new PartitionStats(
            k.partitionKey(),
            k.messageCount(),
            k.locked(),
            k.leasedMessageId(),
            k.leaseUntil(),
            k.failures(),
            k.resumeAt(),
            k.parkedReason(),
            k.oldestAge());
  }
}
