package org.messagepump.eventstream.internal;

import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_KEY;

import java.sql.Connection;
import org.jooq.Param;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.StatementCache;

/**
 * Streams addressed by an application key (an aggregate id): the key maps to one stream, created
 * with the key's first append.
 *
 * <p>Its statements are on every keyed append's path: built by jOOQ over {@link EventTables},
 * rendered once per store ({@link StatementCache#render}) and run through JDBC with every value
 * bound, as the {@link StreamWriter}'s.
 */
public final class KeyedStreams {

  private static final Param<String> KEY = StatementCache.parameter("key", SQLDataType.CLOB);
  private static final Param<Long> STREAM = StatementCache.parameter("stream", SQLDataType.BIGINT);

  private final StreamWriter writer;
  private final StatementCache.Statement streamOf;
  private final StatementCache.Statement insertKey;
  private final StatementCache.Statement deleteStream;

  /** The keyed streams of the store in {@code tables}, created through {@code writer}. */
  public KeyedStreams(EventTables tables, StreamWriter writer) {
    this.writer = writer;
    this.streamOf =
        StatementCache.render(
            dsl -> dsl.select(STREAM_ID).from(tables.streamKeys).where(STREAM_KEY.eq(KEY)), "key");
    this.insertKey =
        StatementCache.render(
            dsl ->
                dsl.insertInto(tables.streamKeys, STREAM_KEY, STREAM_ID)
                    .values(KEY, STREAM)
                    .onConflictDoNothing(),
            "key",
            "stream");
    this.deleteStream =
        StatementCache.render(dsl -> dsl.deleteFrom(tables.streams).where(ID.eq(STREAM)), "stream");
  }

  /** The stream of {@code key}, or null when the key has no stream (as this statement sees). */
  public Long streamOf(Connection c, String key) {
    return Jdbc.unchecked("reading the stream of a key", () -> Jdbc.firstLong(streamOf, c, key));
  }

  /**
   * The stream of {@code key}, created (empty, held by this transaction) when the key has none. Two
   * transactions creating the same key: the second waits for the first on the key's unique index;
   * if the first commits, the second drops the stream it made and uses the first's.
   */
  public long streamOrCreate(Connection c, String key) {
    Long existing = streamOf(c, key);
    if (existing != null) {
      return existing;
    }
    long created = writer.createStream(c);
    return Jdbc.unchecked(
        "creating the stream of a key",
        () -> {
          if (insertKey.executeUpdate(c, key, created) == 1) {
            return created;
          }
          deleteStream.executeUpdate(c, created);
          return Jdbc.firstLong(streamOf, c, key);
        });
  }
}
