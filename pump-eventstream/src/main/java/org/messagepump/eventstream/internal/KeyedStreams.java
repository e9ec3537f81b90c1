package org.messagepump.eventstream.internal;

import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_KEY;

import org.jooq.DSLContext;
import org.jooq.Record1;

/**
 * Streams addressed by an application key (an aggregate id): the key maps to one stream, created
 * with the key's first append.
 */
public final class KeyedStreams {

  private final EventTables tables;
  private final StreamWriter writer;

  /** The keyed streams of the store in {@code tables}, created through {@code writer}. */
  public KeyedStreams(EventTables tables, StreamWriter writer) {
    this.tables = tables;
    this.writer = writer;
  }

  /** The stream of {@code key}, or null when the key has no stream (as this statement sees). */
  public Long streamOf(DSLContext dsl, String key) {
    Record1<Long> r =
        dsl.select(STREAM_ID).from(tables.streamKeys).where(STREAM_KEY.eq(key)).fetchOne();
    return r == null ? null : r.value1();
  }

  /**
   * The stream of {@code key}, created (empty, held by this transaction) when the key has none. Two
   * transactions creating the same key: the second waits for the first on the key's unique index;
   * if the first commits, the second drops the stream it made and uses the first's.
   */
  public long streamOrCreate(DSLContext dsl, String key) {
    Long existing = streamOf(dsl, key);
    if (existing != null) {
      return existing;
    }
    long created = writer.createStream(dsl);
    int inserted =
        dsl.insertInto(tables.streamKeys, STREAM_KEY, STREAM_ID)
            .values(key, created)
            .onConflictDoNothing()
            .execute();
    if (inserted == 1) {
      return created;
    }
    dsl.deleteFrom(tables.streams).where(ID.eq(created)).execute();
    return streamOf(dsl, key);
  }
}
