package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class ConsoleCommandIT {

  private static int run(StringWriter out, StringWriter err, TestDatabase db, String... args) {
    String[] all = new String[args.length + 3];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--jdbc-url=" + db.jdbcUrl();
    all[args.length + 1] = "--user=" + db.server().user();
    all[args.length + 2] = "--password=" + db.server().password();
    return PumpCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), all);
  }

  /**
   * Interrupts the thread serving the console, as a program that runs the command on a thread of
   * its own stops it, and returns the command's exit code. ({@code --exit-after} is only the bound
   * of a test that fails before it gets here.)
   */
  private static int stopped(ExecutorService console, Future<Integer> code) throws Exception {
    console.shutdownNow();
    try {
      return code.get(60, TimeUnit.SECONDS);
    } finally {
      assertThat(console.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  /**
   * Runs {@code command} on {@code console}'s thread; its exit code, once it has checked that the
   * thread's interrupt, if it was interrupted, is set again when the command returns.
   */
  private static Future<Integer> serving(ExecutorService console, IntSupplier command) {
    return console.submit(
        () -> {
          int code = command.getAsInt();
          assertThat(Thread.currentThread().isInterrupted())
              .as("the interrupt that stopped the console is set again")
              .isTrue();
          return code;
        });
  }

  @Test
  void badArgumentsAreUsageErrors(TestDatabase db) {
    StringWriter err = new StringWriter();
    assertThat(run(new StringWriter(), err, db, "console", "--bind", "0.0.0.0:0")).isEqualTo(2);
    assertThat(err.toString()).contains("requires an access token");
    assertThat(run(new StringWriter(), new StringWriter(), db, "console", "--token", "short"))
        .isEqualTo(2);
    assertThat(run(new StringWriter(), new StringWriter(), db, "console", "--bind", "127.0.0.1:x"))
        .isEqualTo(2);
    StringWriter schema = new StringWriter();
    assertThat(run(new StringWriter(), schema, db, "console", "--commands-schema", "No-Such"))
        .isEqualTo(2);
    assertThat(schema.toString()).contains("schema must match");
    StringWriter badHost = new StringWriter();
    assertThat(run(new StringWriter(), badHost, db, "console", "--allow-host", "a/b")).isEqualTo(2);
    assertThat(badHost.toString()).contains("allowed host");
    assertThat(run(new StringWriter(), new StringWriter(), db, "console", "--bind", "[::1"))
        .isEqualTo(2);
    assertThat(
            run(
                new StringWriter(),
                new StringWriter(),
                db,
                "console",
                "--trusted-proxy",
                "10.0.0.1"))
        .isEqualTo(2);
    StringWriter noUrl = new StringWriter();
    assertThat(
            PumpCli.execute(
                new PrintWriter(new StringWriter()),
                new PrintWriter(noUrl),
                "console",
                "--jdbc-url="))
        .isEqualTo(2);
  }

  @Test
  void servesTheConsoleOnAJdbcUrlAndPrintsWhere(TestDatabase db) throws Exception {
    assertThat(run(new StringWriter(), new StringWriter(), db, "migrate")).isZero();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    ExecutorService console = Executors.newSingleThreadExecutor();
    Future<Integer> code =
        serving(
            console,
            () ->
                run(
                    out,
                    err,
                    db,
                    "console",
                    "--bind",
                    "127.0.0.1:0",
                    "--read-only",
                    "--actor",
                    "cli-test",
                    "--exit-after",
                    "PT120S"));
    Pattern url = Pattern.compile("console: (http://127\\.0\\.0\\.1:\\d+/)");
    await().atMost(Duration.ofSeconds(60)).until(() -> url.matcher(out.toString()).find());
    Matcher m = url.matcher(out.toString());
    assertThat(m.find()).isTrue();
    HttpResponse<String> page =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(m.group(1) + "commands")).build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("read-only", "cli-test", "No dead letters.");
    assertThat(out.toString()).contains("tokenless: serves direct loopback clients only");
    assertThat(stopped(console, code)).as(err.toString()).isZero();
  }

  @Test
  void operatorsFromAFileOnAnIpv6Bind(TestDatabase db, @TempDir Path dir) throws Exception {
    assertThat(run(new StringWriter(), new StringWriter(), db, "migrate")).isZero();
    Path operators = dir.resolve("operators");
    Files.writeString(
        operators, "# name token\nalice  alice-token-0123456789\nbob\tbob-token-0123456789\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    ExecutorService console = Executors.newSingleThreadExecutor();
    Future<Integer> code =
        serving(
            console,
            () ->
                run(
                    out,
                    err,
                    db,
                    "console",
                    "--bind",
                    "[::1]:0",
                    "--operators",
                    operators.toString(),
                    "--exit-after",
                    "PT120S"));
    Pattern url = Pattern.compile("console: (http://\\[::1\\]:\\d+/)");
    await().atMost(Duration.ofSeconds(60)).until(() -> url.matcher(out.toString()).find());
    Matcher m = url.matcher(out.toString());
    assertThat(m.find()).isTrue();
    assertThat(out.toString()).contains("2 operator token(s)");
    HttpClient http = HttpClient.newHttpClient();
    HttpResponse<String> anonymous =
        http.send(
            HttpRequest.newBuilder(URI.create(m.group(1) + "commands")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(anonymous.statusCode()).isEqualTo(401);
    HttpResponse<String> bob =
        http.send(
            HttpRequest.newBuilder(URI.create(m.group(1) + "commands"))
                .header("Authorization", "Bearer bob-token-0123456789")
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(bob.statusCode()).isEqualTo(200);
    assertThat(bob.body()).contains("id=\"actor\">bob<");
    assertThat(stopped(console, code)).as(err.toString()).isZero();
  }

  @Test
  void pumpConsoleWritesTheAuditLinesAndRows(TestDatabase db, @TempDir Path dir) throws Exception {
    assertThat(run(new StringWriter(), new StringWriter(), db, "migrate")).isZero();
    Path out = dir.resolve("out");
    Path err = dir.resolve("err");
    // PumpCli.main, as `pump console` runs: it sets logging to ERROR, the audit logger stays INFO.
    Process pump =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                PumpCli.class.getName(),
                "console",
                "--bind",
                "127.0.0.1:0",
                "--actor",
                "audit-test",
                "--exit-after",
                "PT60S",
                "--jdbc-url=" + db.jdbcUrl(),
                "--user=" + db.server().user(),
                "--password=" + db.server().password())
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    try {
      Pattern url = Pattern.compile("console: (http://127\\.0\\.0\\.1:\\d+/)");
      await().atMost(Duration.ofSeconds(60)).until(() -> url.matcher(Files.readString(out)).find());
      Matcher m = url.matcher(Files.readString(out));
      assertThat(m.find()).isTrue();
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> page =
          http.send(
              HttpRequest.newBuilder(URI.create(m.group(1) + "commands")).build(),
              HttpResponse.BodyHandlers.ofString());
      Matcher csrf =
          Pattern.compile("name=\"csrf\" content=\"([0-9a-f]{64})\"").matcher(page.body());
      assertThat(csrf.find()).isTrue();
      String cookie = page.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
      HttpResponse<String> action =
          http.send(
              HttpRequest.newBuilder(URI.create(m.group(1) + "actions/dead-letters/retry"))
                  .header("Cookie", cookie)
                  .header("Content-Type", "application/x-www-form-urlencoded")
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "csrf=" + csrf.group(1) + "&type=no.such.Type"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(action.statusCode()).isEqualTo(404);
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> Files.readString(err).contains("console audit: id="));
      assertThat(Files.readString(err))
          .contains(
              "actor=\"audit-test\"",
              "action=\"dead-letters.retry\"",
              "result=\"refused 404: no dead letters of type no.such.Type\"");
      assertThat(Files.readString(out)).contains("pumpconsole.audit");
    } finally {
      pump.destroy();
      pump.waitFor();
    }
  }
}
