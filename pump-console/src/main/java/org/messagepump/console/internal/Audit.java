package org.messagepump.console.internal;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit log: every action, allowed or refused, with who did it, from where, what and the
 * result. Logged at INFO to the logger {@code org.messagepump.console.audit} (route it to a file or
 * your log shipper) and kept in memory (the last {@value #KEPT}) for the console's audit page.
 */
public final class Audit {

  static final int KEPT = 500;
  private static final Logger LOG = LoggerFactory.getLogger("org.messagepump.console.audit");

  /** One audited action. */
  public record Entry(
      Instant at, String actor, String from, String action, String target, String result) {}

  private final Deque<Entry> recent = new ArrayDeque<>();

  /** Records an action and logs it. */
  public void record(String actor, String from, String action, String target, String result) {
    Entry e = new Entry(Instant.now(), actor, from, action, target, result);
    LOG.info(
        "console audit: actor={} from={} action={} target={} result={}",
        actor,
        from,
        action,
        target,
        result);
    synchronized (recent) {
      recent.addFirst(e);
      while (recent.size() > KEPT) {
        recent.removeLast();
      }
    }
  }

  /** The latest entries, newest first. */
  public List<Entry> recent() {
    synchronized (recent) {
      return new ArrayList<>(recent);
    }
  }
}
