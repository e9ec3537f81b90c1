package org.messagepump.eventstream.internal;

import org.jooq.DSLContext;
import org.jooq.Record1;

/**
 * Streams addressed by an application key (an aggregate id): the key maps to one stream, created
 * with the key's first append.
 */
public final class KeyedStreams {

  private final Tables.StreamKeys keys;
  private final Tables.Streams streams;
  private final StreamWriter writer;

  /** The keyed streams of the store in {@code tables}, created through {@code writer}. */
  public KeyedStreams(Tables tables, StreamWriter writer) {
    this.keys = tables.streamKeys;
    this.streams = tables.streams;
    this.writer = writer;
  }

  /** The stream of {@code key}, or null when the key has no stream (as this statement sees). */
  public Long streamOf(DSLContext dsl, String key) {
    Record1<Long> r = dsl.select(keys.streamId).from(keys.table).where(keys.key.eq(key)).fetchOne();
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
        dsl.insertInto(keys.table, keys.key, keys.streamId)
            .values(key, created)
            .onConflictDoNothing()
            .execute();
    if (inserted == 1) {
      return created;
    }
    dsl.deleteFrom(streams.table).where(streams.id.eq(created)).execute();
    return streamOf(dsl, key);
  }
}
