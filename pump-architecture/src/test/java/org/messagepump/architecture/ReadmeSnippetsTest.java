package org.messagepump.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java snippet of README.md is the text of a test that compiles and runs it: a region between
 * {@code // README:<name> begin} and {@code // README:<name> end} in some module's test sources
 * (lines marked {@code // test only} and the {@code spotless:off/on} toggles left out). And the
 * example driver shown in docs/writing-a-driver.md is the tested file itself.
 */
class ReadmeSnippetsTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern REGION =
      Pattern.compile(
          "// README:(\\w+) begin\\n(.*?)\\n\\s*// README:\\1 end", Pattern.DOTALL);

  @Test
  void everyReadmeSnippetIsATestedRegion() throws IOException {
    Map<String, String> regions = regions();
    List<String> untested = new ArrayList<>();
    Matcher m = BLOCK.matcher(Files.readString(ROOT.resolve("README.md")));
    int blocks = 0;
    while (m.find()) {
      blocks++;
      String snippet = normalize(m.group(1));
      if (!regions.containsValue(snippet)) {
        untested.add(m.group(1));
      }
    }
    assertTrue(blocks >= 4, "README.md has " + blocks + " Java snippets");
    assertTrue(
        untested.isEmpty(),
        "README snippets with no identical tested region (// README:<name> begin/end): "
            + untested);
  }

  @Test
  void everySnippetOfTheLeaseModeDocIsATestedRegion() throws IOException {
    Map<String, String> regions = regions();
    Matcher m = BLOCK.matcher(Files.readString(ROOT.resolve("docs/leases.md")));
    int blocks = 0;
    while (m.find()) {
      blocks++;
      assertTrue(
          regions.containsValue(normalize(m.group(1))),
          "docs/leases.md snippet with no identical tested region: " + m.group(1));
    }
    assertTrue(blocks >= 1, "docs/leases.md has no Java snippet");
  }

  @Test
  void theExampleDriverInTheDocsIsTheTestedFile() throws IOException {
    String doc = Files.readString(ROOT.resolve("docs/writing-a-driver.md"));
    String file =
        Files.readString(
            ROOT.resolve(
                "pump-core/src/test/java/org/messagepump/core/examples/TinyTableDriver.java"));
    Matcher m = BLOCK.matcher(doc);
    String shown = null;
    while (m.find()) {
      if (m.group(1).contains("public record TinyTableDriver")) {
        shown = m.group(1);
      }
    }
    assertEquals(file.strip(), shown == null ? null : shown.strip());
    long lines = file.strip().lines().count();
    assertTrue(lines <= 80, "the example driver has " + lines + " lines, more than 80");
  }

  private static Map<String, String> regions() throws IOException {
    Map<String, String> out = new LinkedHashMap<>();
    try (Stream<Path> files = Files.walk(ROOT)) {
      for (Path p :
          files
              .filter(f -> f.toString().endsWith(".java"))
              .filter(f -> f.toString().contains("/src/test/java/"))
              .toList()) {
        Matcher m = REGION.matcher(Files.readString(p));
        while (m.find()) {
          out.put(p.getFileName() + ":" + m.group(1), normalize(m.group(2)));
        }
      }
    }
    return out;
  }

  /** Drops test-only and formatter lines and the common indentation; trims line ends. */
  static String normalize(String code) {
    List<String> lines = new ArrayList<>();
    for (String line : code.split("\\n")) {
      String t = line.strip();
      if (t.equals("// spotless:off") || t.equals("// spotless:on") || t.endsWith("// test only")) {
        continue;
      }
      lines.add(line.stripTrailing());
    }
    int indent = Integer.MAX_VALUE;
    for (String l : lines) {
      if (!l.isBlank()) {
        indent = Math.min(indent, l.length() - l.stripLeading().length());
      }
    }
    StringBuilder b = new StringBuilder();
    for (String l : lines) {
      b.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    }
    return b.toString().strip();
  }
}
