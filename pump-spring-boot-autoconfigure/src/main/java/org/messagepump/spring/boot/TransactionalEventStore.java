package org.messagepump.spring.boot;

import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.AppendResult;
import org.messagepump.eventstream.EventMetadata;
import org.messagepump.eventstream.EventStore;
import org.messagepump.spring.boot.internal.CallerTransaction;

/**
 * Appends events in the caller's Spring transaction: called from a {@code @Transactional} method
 * (or a handler), the events commit or roll back with it, with no connection in your code. Called
 * outside any transaction, each call commits by itself.
 */
public final class TransactionalEventStore {

  private final EventStore store;
  private final DataSource dataSource;

  /** Appends to {@code store}, joining transactions Spring holds on {@code dataSource}. */
  public TransactionalEventStore(EventStore store, DataSource dataSource) {
    this.store = Objects.requireNonNull(store, "store");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
  }

  /** The store underneath; its {@link EventStore#operations()} reads streams and checkpoints. */
  public EventStore store() {
    return store;
  }

  /** Appends events to a new stream. */
  public AppendResult append(List<?> events) {
    return append(events, EventMetadata.NONE);
  }

  /** Appends events to a new stream, with metadata. */
  public AppendResult append(List<?> events, EventMetadata metadata) {
    return CallerTransaction.run(
        dataSource,
        tx -> store.append(tx, events, metadata),
        () ->
            Transactions.inNew(
                dataSource, "appending events", tx -> store.append(tx, events, metadata)));
  }

  /**
   * Appends events to stream {@code streamId} when its next offset is {@code expectedNextOffset}.
   */
  public AppendResult appendTo(long streamId, long expectedNextOffset, List<?> events) {
    return CallerTransaction.run(
        dataSource,
        tx -> store.appendTo(tx, streamId, expectedNextOffset, events),
        () ->
            Transactions.inNew(
                dataSource,
                "appending events",
                tx -> store.appendTo(tx, streamId, expectedNextOffset, events)));
  }
}
