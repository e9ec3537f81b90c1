package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** A plain text table with aligned columns (numbers right-aligned). */
final class Table {

  private final String[] header;
  private final List<String[]> rows = new ArrayList<>();

  Table(String... header) {
    this.header = header;
  }

  Table row(Object... cells) {
    String[] r = new String[header.length];
    for (int i = 0; i < header.length; i++) {
      r[i] = i < cells.length && cells[i] != null ? String.valueOf(cells[i]) : "";
    }
    rows.add(r);
    return this;
  }

  void print(PrintWriter out) {
    int[] width = new int[header.length];
    for (int i = 0; i < header.length; i++) {
      width[i] = header[i].length();
      for (String[] r : rows) {
        width[i] = Math.max(width[i], r[i].length());
      }
    }
    line(out, header, width);
    StringBuilder rule = new StringBuilder();
    for (int w : width) {
      rule.append("-".repeat(w)).append("  ");
    }
    out.println(rule.toString().stripTrailing());
    for (String[] r : rows) {
      line(out, r, width);
    }
    if (rows.isEmpty()) {
      out.println("(none)");
    }
  }

  private static void line(PrintWriter out, String[] cells, int[] width) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < cells.length; i++) {
      boolean number = !cells[i].isEmpty() && cells[i].matches("-?[0-9.]+");
      String pad = " ".repeat(width[i] - cells[i].length());
      b.append(number ? pad + cells[i] : cells[i] + pad).append("  ");
    }
    out.println(b.toString().stripTrailing());
  }
}
