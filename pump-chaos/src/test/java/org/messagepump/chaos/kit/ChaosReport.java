package org.messagepump.chaos.kit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One JSON line per scenario, appended to {@code target/chaos/report.jsonl} (or the file named by
 * the system property {@value #FILE_PROPERTY}): the scenario's name, sizes and measured figures.
 */
public final class ChaosReport {

  /** System property overriding the report file. */
  public static final String FILE_PROPERTY = "chaos.report";

  private final Map<String, Object> fields = new LinkedHashMap<>();

  private ChaosReport(String scenario) {
    fields.put("scenario", scenario);
    fields.put("at", Instant.now().toString());
  }

  /** A new line for {@code scenario}. */
  public static ChaosReport of(String scenario) {
    return new ChaosReport(scenario);
  }

  /** Adds a field: numbers, booleans and strings as such, durations in milliseconds. */
  public ChaosReport put(String name, Object value) {
    fields.put(name, value instanceof Duration d ? d.toMillis() : value);
    return this;
  }

  /** Adds the ledger figures. */
  public ChaosReport put(Ledger.Figures f) {
    put("acknowledged", f.acknowledged());
    put("handled", f.handled());
    put("ledgerRows", f.ledgerRows());
    put("lost", f.lost());
    return put("duplicates", f.duplicates());
  }

  /** The line as JSON. */
  public String toJson() {
    StringBuilder sb = new StringBuilder("{");
    Iterator<Map.Entry<String, Object>> it = fields.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Object> e = it.next();
      sb.append(quote(e.getKey())).append(':');
      Object v = e.getValue();
      if (v == null) {
        sb.append("null");
      } else if (v instanceof Number || v instanceof Boolean) {
        sb.append(v);
      } else {
        sb.append(quote(v.toString()));
      }
      if (it.hasNext()) {
        sb.append(',');
      }
    }
    return sb.append('}').toString();
  }

  /** Appends the line to the report file and returns it. */
  public String write() {
    String line = toJson();
    Path file = Path.of(System.getProperty(FILE_PROPERTY, "target/chaos/report.jsonl"));
    try {
      if (file.getParent() != null) {
        Files.createDirectories(file.getParent());
      }
      synchronized (ChaosReport.class) {
        Files.writeString(
            file,
            line + "\n",
            StandardCharsets.UTF_8,
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
      }
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot write " + file, e);
    }
    return line;
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
