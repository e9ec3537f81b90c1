package org.messagepump.core.examples;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;

/** A complete driver over {@link TinyTable}: docs/writing-a-driver.md's example. */
public record TinyTableDriver(Handler handler) implements Driver {

  /** What the user's code does with one row, inside the delivery's transaction. */
  public interface Handler {
    Outcome handle(Tx tx, long id, String body) throws Exception;
  }

  @Override
  public String name() {
    return "tiny-table";
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) {
    // The row lock is the claim: other pumps skip these rows until this transaction ends.
    String due = "SELECT id, convert_to(body, 'UTF8'), failures FROM work WHERE due_at <= now()";
    return tx.dsl()
        .fetch(due + " ORDER BY due_at, id LIMIT ? FOR UPDATE SKIP LOCKED", max)
        .map(
            r ->
                Delivery.of(
                    Envelope.of(r.get(0, String.class), "work", r.get(1, byte[].class)),
                    r.get(2, Integer.class)));
  }

  @Override
  public Outcome handle(Tx tx, Delivery d) throws Exception {
    long id = Long.parseLong(d.messageId());
    Outcome outcome = handler.handle(tx, id, new String(d.envelope().payload(), UTF_8));
    if (outcome instanceof Outcome.Handled) { // done: removed in the same transaction
      tx.dsl().execute("DELETE FROM work WHERE id = ?", id);
    }
    return outcome;
  }

  @Override
  public Optional<Delivery> reacquire(Tx tx, Delivery d) {
    // After a rollback: lock the row again (unless taken) so the pump can count the failure.
    String locked = "SELECT failures FROM work WHERE id = ? FOR UPDATE SKIP LOCKED";
    return tx.dsl()
        .fetchOptional(locked, Long.parseLong(d.messageId()))
        .map(r -> Delivery.of(d.envelope(), r.get(0, Integer.class)));
  }

  @Override
  public void postpone(Tx tx, Delivery d, int failures, Duration delay) {
    // Times other processes must agree on come from the database clock; values are always bound.
    String sql =
        "UPDATE work SET failures = ?, postponed_at = clock_timestamp(), due_at ="
            + " clock_timestamp() + ? * interval '1 microsecond' WHERE id = ?";
    tx.dsl().execute(sql, failures, delay.toNanos() / 1000, Long.parseLong(d.messageId()));
  }

  @Override
  public void park(Tx tx, Delivery d, int failures, String reason) {
    String sql =
        "WITH gone AS (DELETE FROM work WHERE id = ? RETURNING id, body)"
            + " INSERT INTO work_parked SELECT id, body, ?, ? FROM gone";
    tx.dsl().execute(sql, Long.parseLong(d.messageId()), failures, reason);
  }
}
