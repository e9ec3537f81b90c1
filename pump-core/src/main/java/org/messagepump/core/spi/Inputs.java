package org.messagepump.core.spi;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.Limits;

/**
 * The one place that checks what producers pass in, before anything is sent to PostgreSQL. Every
 * check throws {@link IllegalArgumentException} (or {@link NullPointerException} for a required
 * argument that is null) naming the argument and the limit, so the caller's own transaction is
 * never aborted by a server error.
 *
 * <p>Why these checks: PostgreSQL rejects NUL in {@code text} (22021) and {@code \u0000} in {@code
 * jsonb} (22P05), rejects index entries over about 2.7 kB (54000), and {@code timestamptz}
 * arithmetic overflows for extreme delays (22008). Each of those aborts the whole transaction.
 */
public final class Inputs {

  private Inputs() {}

  /**
   * A required identifier (type name, group, key, handler key...): not null, no NUL, at most {@link
   * Limits#MAX_KEY_BYTES} UTF-8 bytes, not empty.
   */
  public static String key(String argument, String value) {
    if (value == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (value.isEmpty()) {
      throw new IllegalArgumentException(argument + " must not be empty");
    }
    return text(argument, value, Limits.MAX_KEY_BYTES);
  }

  /**
   * A name written into SQL text as an identifier (a schema, a table): lower-case letters, digits
   * and {@code _}, not starting with a digit, 1 to {@code maxLength} characters. Identifiers cannot
   * be bind values; a name of this shape needs no quoting care, so it is checked instead.
   *
   * @throws NullPointerException when {@code value} is null
   * @throws IllegalArgumentException naming {@code argument} and the rule otherwise
   */
  public static String identifier(String argument, String value, int maxLength) {
    if (value == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (value.length() > maxLength || !IDENTIFIER.matcher(value).matches()) {
      throw new IllegalArgumentException(
          argument
              + " must match [a-z_][a-z0-9_]* with at most "
              + maxLength
              + " characters (lower-case letters, digits or _, not starting with a digit)");
    }
    return value;
  }

  /**
   * Longest schema name, the same for every driver: a driver's NOTIFY channel, {@code
   * messagepump_<driver>_<schema>} ({@link WakeSignal#channel}), must fit PostgreSQL's 63-byte
   * identifiers with a driver name of up to {@value WakeSignal#MAX_DRIVER_LENGTH} characters.
   */
  public static final int MAX_SCHEMA_LENGTH = 40;

  /**
   * A schema name, as {@link #identifier} with at most {@value #MAX_SCHEMA_LENGTH} characters, and
   * not a PostgreSQL system schema ({@code pg_*}, {@code information_schema}). The one rule for the
   * schema of every driver's tables.
   */
  public static String schema(String argument, String value) {
    identifier(argument, value, MAX_SCHEMA_LENGTH);
    if (value.startsWith("pg_") || value.equals("information_schema")) {
      throw new IllegalArgumentException(argument + " must not be a PostgreSQL system schema");
    }
    return value;
  }

  private static final java.util.regex.Pattern IDENTIFIER =
      java.util.regex.Pattern.compile("[a-z_][a-z0-9_]*");

  /** An optional identifier (correlation id, idempotency key...): null, or as {@link #key}. */
  public static String optionalKey(String argument, String value) {
    return value == null ? null : key(argument, value);
  }

  /** A required string of at most {@code maxBytes} UTF-8 bytes, without NUL. */
  public static String text(String argument, String value, int maxBytes) {
    if (value == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          argument + " must not contain a NUL character (PostgreSQL text cannot hold it)");
    }
    int bytes = utf8Length(value, maxBytes);
    if (bytes > maxBytes) {
      throw new IllegalArgumentException(
          argument + " is longer than " + maxBytes + " UTF-8 bytes (" + bytes + "+)");
    }
    return value;
  }

  /**
   * Headers: null becomes empty; no null names or values, no NUL, at most {@link
   * Limits#maxHeaders()} entries and {@link Limits#maxHeaderBytes()} bytes of names and values.
   * Returns an unmodifiable copy in the iteration order of the argument.
   */
  public static Map<String, String> headers(Map<String, String> headers, Limits limits) {
    if (headers == null || headers.isEmpty()) {
      return Map.of();
    }
    if (headers.size() > limits.maxHeaders()) {
      throw new IllegalArgumentException(
          "headers: " + headers.size() + " entries, more than the limit of " + limits.maxHeaders());
    }
    long total = 0;
    Map<String, String> copy = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : headers.entrySet()) {
      String name = e.getKey();
      if (name == null) {
        throw new NullPointerException("headers must not have a null name");
      }
      String value = e.getValue();
      if (value == null) {
        throw new NullPointerException("header '" + printable(name) + "' must not be null");
      }
      text("header name", name, limits.maxHeaderBytes());
      text("header '" + printable(name) + "'", value, limits.maxHeaderBytes());
      total += utf8Length(name, Integer.MAX_VALUE) + utf8Length(value, Integer.MAX_VALUE);
      if (total > limits.maxHeaderBytes()) {
        throw new IllegalArgumentException(
            "headers are larger than the limit of " + limits.maxHeaderBytes() + " bytes");
      }
      copy.put(name, value);
    }
    return java.util.Collections.unmodifiableMap(copy);
  }

  /** An encoded payload: not null, at most {@link Limits#maxPayloadBytes()} bytes. */
  public static byte[] payload(String argument, byte[] payload, Limits limits) {
    if (payload == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (payload.length > limits.maxPayloadBytes()) {
      throw new IllegalArgumentException(
          argument
              + " is "
              + payload.length
              + " bytes, more than the limit of "
              + limits.maxPayloadBytes());
    }
    return payload;
  }

  /**
   * A JSON document bound for a {@code jsonb} column: at most {@code maxBytes} UTF-8 bytes, and no
   * {@code \u0000} escape (jsonb rejects it).
   */
  public static String json(String argument, String json, int maxBytes) {
    if (json == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (json.contains("\\u0000")) {
      throw new IllegalArgumentException(
          argument + " must not contain a NUL character (PostgreSQL jsonb cannot hold it)");
    }
    return text(argument, json, maxBytes);
  }

  /** A delay: not null, not negative, at most {@link Limits#MAX_DELAY}. */
  public static Duration delay(String argument, Duration delay) {
    if (delay == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (delay.isNegative()) {
      throw new IllegalArgumentException(argument + " must not be negative: " + delay);
    }
    if (delay.compareTo(Limits.MAX_DELAY) > 0) {
      throw new IllegalArgumentException(
          argument + " must be at most " + Limits.MAX_DELAY.toDays() + " days: " + delay);
    }
    return delay;
  }

  /** An instant: not null, between {@link Limits#MIN_INSTANT} and {@link Limits#MAX_INSTANT}. */
  public static Instant instant(String argument, Instant at) {
    if (at == null) {
      throw new NullPointerException(argument + " must not be null");
    }
    if (at.isBefore(Limits.MIN_INSTANT) || at.isAfter(Limits.MAX_INSTANT)) {
      throw new IllegalArgumentException(
          argument
              + " must be between "
              + Limits.MIN_INSTANT
              + " and "
              + Limits.MAX_INSTANT
              + ": "
              + at);
    }
    return at;
  }

  /**
   * A failure reason made safe to store: NUL and other control characters (but tab and newline)
   * become {@code U+FFFD}, unpaired surrogates too, and it is cut to {@link
   * Limits#MAX_REASON_CHARS} characters. Null becomes {@code "(no reason)"}.
   */
  public static String reason(String reason) {
    if (reason == null) {
      return "(no reason)";
    }
    int n = Math.min(reason.length(), Limits.MAX_REASON_CHARS);
    StringBuilder b = new StringBuilder(n + 16);
    for (int i = 0; i < n; i++) {
      char c = reason.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < reason.length()
          && Character.isLowSurrogate(reason.charAt(i + 1))) {
        if (i + 1 >= n) {
          break; // do not split a pair at the cut
        }
        b.append(c).append(reason.charAt(++i));
      } else if (Character.isSurrogate(c)
          || (Character.isISOControl(c) && c != '\t' && c != '\n')) {
        b.append('\uFFFD');
      } else {
        b.append(c);
      }
    }
    if (reason.length() > n) {
      b.append(" [cut]");
    }
    return b.toString();
  }

  /** Quotes a user value for an exception message: control characters shown, at most 64 chars. */
  static String printable(String value) {
    String s = value.length() > 64 ? value.substring(0, 64) + "..." : value;
    StringBuilder b = new StringBuilder(s.length());
    for (char c : s.toCharArray()) {
      b.append(Character.isISOControl(c) ? String.format("\\u%04x", (int) c) : String.valueOf(c));
    }
    return b.toString();
  }

  /** UTF-8 length of {@code s}, counting stops once it passes {@code stopAfter}. */
  static int utf8Length(String s, int stopAfter) {
    if (s.length() * 3L <= stopAfter) {
      return s.getBytes(StandardCharsets.UTF_8).length; // cheap enough; exact
    }
    int bytes = 0;
    for (int i = 0; i < s.length() && bytes <= stopAfter; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else {
        bytes += 3;
      }
    }
    return bytes;
  }
}
