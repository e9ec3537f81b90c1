package org.messagepump.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The published modules as a modular application sees them on the module path: each with a {@code
 * module-info.java} exports its API package only, the compiler refuses an application that reads a
 * driver's {@code internal} package, and an application run on the module path migrates all three
 * drivers (Flyway reads each module's opened migrations) and has a command handled by a pump.
 */
@ExtendWith(PostgresExtension.class)
class ModulePathIT {

  /** Every module with a module-info.java, and the packages it exports. */
  static final Map<String, Set<String>> EXPORTS =
      Map.of(
          "org.messagepump.commands",
          Set.of("org.messagepump.commands"),
          "org.messagepump.eventstream",
          Set.of("org.messagepump.eventstream"),
          "org.messagepump.balancer",
          Set.of("org.messagepump.balancer", "org.messagepump.balancer.model"),
          "org.messagepump.console",
          Set.of("org.messagepump.console"),
          "org.messagepump.resilience4j",
          Set.of("org.messagepump.resilience4j"),
          "org.messagepump.opentelemetry",
          Set.of("org.messagepump.opentelemetry"),
          "org.messagepump.jackson3",
          Set.of("org.messagepump.jackson3"));

  /** The jars a modular application of the three drivers needs, by file name prefix. */
  private static final List<String> APPLICATION_JARS =
      List.of(
          "pump-core-",
          "pump-commands-",
          "pump-eventstream-",
          "pump-balancer-",
          "jooq-",
          "r2dbc-spi-",
          "reactive-streams-",
          "slf4j-api-",
          "slf4j-simple-",
          "jackson-annotations-2",
          "jackson-core-2",
          "jackson-databind-2",
          "jackson-datatype-jsr310-2",
          "cron-utils-",
          "postgresql-",
          "flyway-core-",
          "flyway-database-postgresql-");

  @Test
  void eachModularJarExportsItsApiPackageOnly() {
    Map<String, Set<String>> found = new TreeMap<>();
    for (ModuleReference ref : ModuleFinder.of(classPath().toArray(Path[]::new)).findAll()) {
      ModuleDescriptor d = ref.descriptor();
      if (EXPORTS.containsKey(d.name())) {
        assertThat(d.isAutomatic()).as(d.name() + " has a module-info").isFalse();
        found.put(
            d.name(),
            d.exports().stream()
                .map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new)));
      }
    }
    assertThat(found).isEqualTo(new TreeMap<>(EXPORTS));
    // pump-core has no module-info (Flyway, which its migrations use, has no module name): it is
    // an automatic module with a stable name.
    ModuleDescriptor core =
        ModuleFinder.of(classPath().toArray(Path[]::new))
            .find("org.messagepump.core")
            .orElseThrow()
            .descriptor();
    assertThat(core.isAutomatic()).isTrue();
  }

  @Test
  void theCompilerRefusesAnApplicationThatReadsADriversInternals(@TempDir Path dir)
      throws IOException {
    String api = "import org.messagepump.commands.CommandQueue;";
    String internal = "import org.messagepump.commands.internal.CommandTables;";
    assertThat(compile(dir.resolve("api"), api, "CommandQueue.class")).isEmpty();
    assertThat(compile(dir.resolve("internal"), internal, "CommandTables.class"))
        .contains("org.messagepump.commands.internal")
        .containsAnyOf("is not visible", "does not export");
  }

  @Test
  void aModularApplicationMigratesTheDriversAndHandlesACommand(TestDatabase db, @TempDir Path dir)
      throws Exception {
    Path classes = dir.resolve("classes");
    String errors = compileApplication(dir.resolve("src"), classes);
    assertThat(errors).isEmpty();
    String modulePath =
        classes
            + File.pathSeparator
            + applicationJars().stream()
                .map(Path::toString)
                .collect(Collectors.joining(File.pathSeparator));
    Path out = dir.resolve("out.txt");
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--module-path",
                modulePath,
                "-m",
                "demo.app/demo.app.Main",
                db.jdbcUrl(),
                db.server().user(),
                db.server().password())
            .redirectErrorStream(true)
            .redirectOutput(out.toFile())
            .start();
    boolean ended = p.waitFor(90, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly();
    }
    String output = Files.readString(out);
    assertThat(ended).as(output).isTrue();
    assertThat(p.exitValue()).as(output).isZero();
    assertThat(output).contains("migrated commands, events, balancer", "handled o-1");
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isZero();
  }

  private static String compile(Path dir, String importLine, String use) throws IOException {
    Path src = dir.resolve("demo.app");
    Files.createDirectories(src.resolve("demo/app"));
    Files.writeString(
        src.resolve("module-info.java"),
        "module demo.app { requires org.messagepump.commands; }\n",
        StandardCharsets.UTF_8);
    Files.writeString(
        src.resolve("demo/app/Use.java"),
        "package demo.app;\n"
            + importLine
            + "\npublic class Use { public static Object use() { return "
            + use
            + "; } }\n",
        StandardCharsets.UTF_8);
    return javac(
        dir.resolve("classes"),
        List.of(src.resolve("module-info.java"), src.resolve("demo/app/Use.java")),
        applicationJars());
  }

  private static String compileApplication(Path src, Path classes) throws IOException {
    Path pkg = src.resolve("demo/app");
    Files.createDirectories(pkg);
    Files.writeString(
        src.resolve("module-info.java"),
        String.join(
            "\n",
            "module demo.app {",
            "  requires org.messagepump.commands;",
            "  requires org.messagepump.eventstream;",
            "  requires org.messagepump.balancer;",
            "  requires org.postgresql.jdbc;",
            "  requires java.naming;",
            "  opens demo.app to com.fasterxml.jackson.databind;",
            "}"),
        StandardCharsets.UTF_8);
    Files.writeString(
        pkg.resolve("Main.java"),
        String.join(
            "\n",
            "package demo.app;",
            "",
            "import java.util.concurrent.CountDownLatch;",
            "import java.util.concurrent.TimeUnit;",
            "import org.messagepump.balancer.BalancerOperations;",
            "import org.messagepump.commands.CommandHandlers;",
            "import org.messagepump.commands.CommandOperations;",
            "import org.messagepump.commands.CommandQueue;",
            "import org.messagepump.core.JsonMessageCodec;",
            "import org.messagepump.core.engine.MessagePump;",
            "import org.messagepump.core.MessageTypes;",
            "import org.messagepump.eventstream.EventOperations;",
            "import org.postgresql.ds.PGSimpleDataSource;",
            "",
            "public final class Main {",
            "  public record PlaceOrder(String id) {}",
            "",
            "  public static void main(String[] args) throws Exception {",
            "    PGSimpleDataSource ds = new PGSimpleDataSource();",
            "    ds.setURL(args[0]);",
            "    ds.setUser(args[1]);",
            "    ds.setPassword(args[2]);",
            "    CommandOperations.of(ds).migrate();",
            "    EventOperations.of(ds).migrate();",
            "    BalancerOperations.of(ds).migrate();",
            "    System.out.println(\"migrated commands, events, balancer\");",
            "    CommandQueue queue = CommandQueue.create(ds, JsonMessageCodec.of(",
            "        MessageTypes.builder().register(PlaceOrder.class, \"demo.PlaceOrder\").build()));",
            "    CountDownLatch handled = new CountDownLatch(1);",
            "    CommandHandlers handlers = CommandHandlers.builder()",
            "        .on(PlaceOrder.class, (cmd, ctx) -> {",
            "          System.out.println(\"handled \" + cmd.id());",
            "          handled.countDown();",
            "        })",
            "        .build();",
            "    try (MessagePump pump = MessagePump.builder(ds).name(\"modular\")",
            "        .driver(queue.driver(handlers)).build()) {",
            "      pump.start();",
            "      queue.enqueue(new PlaceOrder(\"o-1\"));",
            "      if (!handled.await(30, TimeUnit.SECONDS)) {",
            "        throw new IllegalStateException(\"not handled in 30 s\");",
            "      }",
            "    }",
            "  }",
            "}",
            ""),
        StandardCharsets.UTF_8);
    return javac(
        classes,
        List.of(src.resolve("module-info.java"), pkg.resolve("Main.java")),
        applicationJars());
  }

  /** Compiles {@code sources} on the module path {@code jars}; returns the errors, or "". */
  private static String javac(Path classes, List<Path> sources, List<Path> jars)
      throws IOException {
    Files.createDirectories(classes);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    StringWriter diagnostics = new StringWriter();
    List<String> options = new ArrayList<>();
    options.add("--module-path");
    options.add(jars.stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator)));
    options.add("-d");
    options.add(classes.toString());
    try (var files = javac.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
      boolean ok =
          javac
              .getTask(
                  diagnostics,
                  files,
                  null,
                  options,
                  null,
                  files.getJavaFileObjectsFromPaths(sources))
              .call();
      return ok ? "" : diagnostics.toString();
    }
  }

  /** The test's class path entries (the reactor's jars and their dependencies). */
  private static List<Path> classPath() {
    List<Path> out = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(e);
      if (e.endsWith(".jar") && Files.isRegularFile(p)) {
        out.add(p);
      }
    }
    return out;
  }

  /** The jars of {@link #APPLICATION_JARS}, from the class path; fails if a driver is missing. */
  private static List<Path> applicationJars() {
    List<Path> out = new ArrayList<>();
    for (Path p : classPath()) {
      String name = p.getFileName().toString();
      if (APPLICATION_JARS.stream().anyMatch(name::startsWith)
          && !name.contains("-tests")
          && !name.contains("-sources")) {
        out.add(p);
      }
    }
    for (String m :
        List.of("pump-core-", "pump-commands-", "pump-eventstream-", "pump-balancer-")) {
      assertThat(out)
          .as(m + " jar on the class path")
          .anyMatch(p -> p.getFileName().toString().startsWith(m));
    }
    return out;
  }
}
