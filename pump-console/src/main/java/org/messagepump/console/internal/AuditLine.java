package org.messagepump.console.internal;

/**
 * A value written into an audit log line: quoted, with backslash, quote and every control or
 * line-breaking character escaped, so a value (a key, a reason, a header) can never end the line or
 * forge another one.
 */
public final class AuditLine {

  private AuditLine() {}

  /** {@code value} in double quotes, escaped; {@code null} for null. */
  public static String quote(Object value) {
    if (value == null) {
      return "null";
    }
    String s = value.toString();
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u2028' || c == '\u2029') {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
