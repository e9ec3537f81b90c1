package org.messagepump.core.engine;

import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;

/** A driver over an in-memory queue whose writes go through {@link FakeDatabase} journals. */
final class InMemoryDriver implements Driver {

  /** A user handler: may write through {@code tx}, return an outcome or throw. */
  interface Handler {
    Outcome handle(Tx tx, Delivery d) throws Exception;
  }

  record Item(String id, int failures, long dueAtNanos) {}

  record Postponement(String id, int failures, Duration delay) {}

  final Map<String, Item> items = new ConcurrentHashMap<>();
  final List<String> handled = new CopyOnWriteArrayList<>();
  final List<Postponement> postponements = new CopyOnWriteArrayList<>();
  final Map<String, String> parked = new ConcurrentHashMap<>();
  private final Set<String> locked = Collections.synchronizedSet(new HashSet<>());
  private volatile Handler handler = (tx, d) -> Outcome.HANDLED;
  private volatile boolean canPark = true;

  InMemoryDriver add(String... ids) {
    for (String id : ids) {
      items.put(id, new Item(id, 0, System.nanoTime()));
    }
    return this;
  }

  InMemoryDriver handler(Handler handler) {
    this.handler = handler;
    return this;
  }

  InMemoryDriver withoutPark() {
    this.canPark = false;
    return this;
  }

  static FakeDatabase.FakeConnection fake(Tx tx) {
    return FakeDatabase.of(tx.connection());
  }

  @Override
  public String name() {
    return "in-memory";
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) {
    List<Delivery> out = new ArrayList<>();
    long now = System.nanoTime();
    synchronized (locked) {
      for (Item item : items.values()) {
        if (out.size() == max) {
          break;
        }
        if (item.dueAtNanos() - now <= 0 && !locked.contains(item.id())) {
          locked.add(item.id());
          fake(tx).onEnd(() -> locked.remove(item.id()));
          out.add(
              Delivery.of(
                  new Envelope(item.id(), "test", null, null, Instant.now(), Map.of(), new byte[0]),
                  item.failures()));
        }
      }
    }
    return out;
  }

  @Override
  public Outcome handle(Tx tx, Delivery d) throws Exception {
    Outcome o = handler.handle(tx, d);
    if (o instanceof Outcome.Handled) {
      fake(tx)
          .write(
              () -> {
                items.remove(d.messageId());
                handled.add(d.messageId());
              });
    }
    return o;
  }

  @Override
  public void postpone(Tx tx, Delivery d, int failures, Duration delay) throws SQLException {
    fake(tx)
        .write(
            () -> {
              items.put(
                  d.messageId(),
                  new Item(d.messageId(), failures, System.nanoTime() + delay.toNanos()));
              postponements.add(new Postponement(d.messageId(), failures, delay));
            });
  }

  @Override
  public void park(Tx tx, Delivery d, int failures, String reason) throws SQLException {
    if (!canPark) {
      Driver.super.park(tx, d, failures, reason);
    }
    fake(tx)
        .write(
            () -> {
              items.remove(d.messageId());
              parked.put(d.messageId(), failures + ":" + reason);
            });
  }
}
