package org.messagepump.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The benchmark's figures: printed as a table, written as JSON with {@code --json FILE}. */
final class BenchReport {

  /** One figure: a name, its parameters, the value, its unit, and the ratio to the baseline. */
  record Row(String name, Map<String, Object> params, double value, String unit, Double ratio) {}

  private final List<Row> rows = new ArrayList<>();
  private final PrintWriter out;

  BenchReport(PrintWriter out) {
    this.out = out;
  }

  /** Adds a row and prints it at once (a long run shows progress). */
  Row add(String name, Map<String, Object> params, double value, String unit, Double ratio) {
    Row r = new Row(name, new LinkedHashMap<>(params), value, unit, ratio);
    rows.add(r);
    out.printf(
        "  %-26s %-34s %12s %-10s %s%n",
        name, params, format(value), unit, ratio == null ? "" : String.format("ratio %.2f", ratio));
    out.flush();
    return r;
  }

  List<Row> rows() {
    return rows;
  }

  void printTable() {
    Table t = new Table("name", "params", "value", "unit", "ratio");
    for (Row r : rows) {
      t.row(
          r.name(),
          r.params(),
          format(r.value()),
          r.unit(),
          r.ratio() == null ? "" : String.format("%.2f", r.ratio()));
    }
    t.print(out);
    out.flush();
  }

  void writeJson(Path file) throws IOException {
    List<Map<String, Object>> json = new ArrayList<>();
    for (Row r : rows) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", r.name());
      m.put("params", r.params());
      m.put("value", r.value());
      m.put("unit", r.unit());
      m.put("ratio", r.ratio());
      json.add(m);
    }
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), json);
  }

  private static String format(double v) {
    return v >= 100 ? String.format("%.0f", v) : String.format("%.2f", v);
  }
}
