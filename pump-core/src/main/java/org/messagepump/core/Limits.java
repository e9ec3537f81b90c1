package org.messagepump.core;

import java.time.Duration;
import java.time.Instant;

/**
 * Size limits for what producers write: payloads, headers and (for the balancer) properties. Every
 * write API checks its arguments against these before it sends anything, so a value over a limit
 * gets an {@link IllegalArgumentException} and the caller's transaction survives.
 *
 * <p>The fixed limits ({@link #MAX_KEY_BYTES}, {@link #MAX_DELAY}, the instant range) protect the
 * schema itself: identifiers sit in B-tree indexes, whose entries PostgreSQL caps at about 2.7 kB,
 * and timestamps must fit {@code timestamptz}. The configurable ones protect the database and the
 * handlers from oversized messages.
 *
 * @param maxPayloadBytes largest encoded payload, in bytes
 * @param maxHeaders most headers per message
 * @param maxHeaderBytes largest sum of the UTF-8 bytes of all header names and values of a message
 * @param maxPropertiesBytes largest encoded (JSON) properties of a balancer message, in bytes
 */
public record Limits(
    int maxPayloadBytes, int maxHeaders, int maxHeaderBytes, int maxPropertiesBytes) {

  /**
   * Largest {@code batchSize}: 64. Each delivery that writes runs in its own savepoint, a
   * subtransaction, and PostgreSQL caches at most 64 subtransaction ids per backend
   * (PGPROC_MAX_CACHED_SUBXIDS). Past that the cache overflows and every snapshot taken while the
   * transaction is open, on the primary and on hot standbys, has to look subtransactions up in
   * pg_subtrans: a known cliff. The gain of larger batches is flat well before 64 (see
   * docs/benchmarks.md).
   */
  public static final int MAX_BATCH_SIZE = 64;

  /**
   * Longest identifier, in UTF-8 bytes: type names, group names, partition keys, idempotency keys,
   * correlation and causation ids, handler keys and stream ids. Two of them together stay well
   * below PostgreSQL's B-tree entry limit (about 2,700 bytes), which a composite index needs.
   */
  public static final int MAX_KEY_BYTES = 512;

  /** Default {@link #maxPayloadBytes()}: 1 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

  /** Default {@link #maxHeaders()}: 64. */
  public static final int DEFAULT_MAX_HEADERS = 64;

  /** Default {@link #maxHeaderBytes()}: 16 KiB. */
  public static final int DEFAULT_MAX_HEADER_BYTES = 16 * 1024;

  /** Default {@link #maxPropertiesBytes()}: 64 KiB. */
  public static final int DEFAULT_MAX_PROPERTIES_BYTES = 64 * 1024;

  /** Largest payload one may configure: 256 MiB (PostgreSQL's own field limit is 1 GB). */
  public static final int HARD_MAX_PAYLOAD_BYTES = 256 << 20;

  /** Longest delay a producer may ask for: 100 years. */
  public static final Duration MAX_DELAY = Duration.ofDays(36_500);

  /** Earliest instant a producer may schedule at. */
  public static final Instant MIN_INSTANT = Instant.parse("1970-01-01T00:00:00Z");

  /** Latest instant a producer may schedule at. */
  public static final Instant MAX_INSTANT = Instant.parse("9999-12-31T23:59:59Z");

  /** Longest failure reason written to the database, in characters. */
  public static final int MAX_REASON_CHARS = 2_000;

  private static final Limits DEFAULTS =
      new Limits(
          DEFAULT_MAX_PAYLOAD_BYTES,
          DEFAULT_MAX_HEADERS,
          DEFAULT_MAX_HEADER_BYTES,
          DEFAULT_MAX_PROPERTIES_BYTES);

  public Limits {
    range("maxPayloadBytes", maxPayloadBytes, HARD_MAX_PAYLOAD_BYTES);
    range("maxHeaders", maxHeaders, 10_000);
    range("maxHeaderBytes", maxHeaderBytes, HARD_MAX_PAYLOAD_BYTES);
    range("maxPropertiesBytes", maxPropertiesBytes, HARD_MAX_PAYLOAD_BYTES);
  }

  /** The documented defaults. */
  public static Limits defaults() {
    return DEFAULTS;
  }

  /** These limits with another payload limit. */
  public Limits withMaxPayloadBytes(int bytes) {
    return new Limits(bytes, maxHeaders, maxHeaderBytes, maxPropertiesBytes);
  }

  /** These limits with another header count limit. */
  public Limits withMaxHeaders(int count) {
    return new Limits(maxPayloadBytes, count, maxHeaderBytes, maxPropertiesBytes);
  }

  /** These limits with another header size limit. */
  public Limits withMaxHeaderBytes(int bytes) {
    return new Limits(maxPayloadBytes, maxHeaders, bytes, maxPropertiesBytes);
  }

  /** These limits with another properties size limit. */
  public Limits withMaxPropertiesBytes(int bytes) {
    return new Limits(maxPayloadBytes, maxHeaders, maxHeaderBytes, bytes);
  }

  private static void range(String name, int value, int max) {
    if (value < 1 || value > max) {
      throw new IllegalArgumentException(name + " must be between 1 and " + max + ", was " + value);
    }
  }
}
