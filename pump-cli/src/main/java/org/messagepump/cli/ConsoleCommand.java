package org.messagepump.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.console.ConsoleAudit;
import org.messagepump.console.ConsoleConfig;
import org.messagepump.console.ConsoleServer;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump console}: the web operations console on {@code --jdbc-url}, or with {@code --demo} on
 * an embedded PostgreSQL with the demo's workload (and failures for an operator to handle) running
 * in the background.
 */
@Command(
    name = "console",
    mixinStandardHelpOptions = true,
    description = {
      "Serve the web operations console.",
      "Direct loopback clients only unless operators are identified: --token, --operators or"
          + " --identity-header.",
      "--demo: embedded PostgreSQL with the demo's orders flowing and failing in the background."
    })
final class ConsoleCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Option(
      names = "--demo",
      description = "Run the demo workload (on an embedded PostgreSQL unless --jdbc-url is given).")
  boolean demo;

  @Option(
      names = "--bind",
      paramLabel = "HOST[:PORT]",
      defaultValue = ConsoleServer.DEFAULT_HOST + ":" + ConsoleServer.DEFAULT_PORT,
      description =
          "Where to listen (default ${DEFAULT-VALUE}); any non-loopback host needs --token.")
  String bind;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      defaultValue = "${env:PUMP_CONSOLE_TOKEN}",
      description =
          "Access token (>= 16 characters; env PUMP_CONSOLE_TOKEN); open the console once"
              + " with ?token=TOKEN.")
  String token;

  @Option(
      names = "--operators",
      paramLabel = "FILE",
      description =
          "Operators and their tokens, one 'name token' a line ('#' comments); each is audited"
              + " under their name. Keep the file readable by you only.")
  Path operatorsFile;

  @Option(
      names = "--identity-header",
      paramLabel = "HEADER",
      description =
          "The header a trusted proxy names the authenticated operator in (needs --trusted-proxy).")
  String identityHeader;

  @Option(
      names = "--trusted-proxy",
      paramLabel = "ADDRESS",
      split = ",",
      description = "Address or CIDR block of the proxy that sends --identity-header (repeatable).")
  List<String> trustedProxies = new ArrayList<>();

  @Option(
      names = "--allow-host",
      paramLabel = "NAME",
      split = ",",
      description =
          "A host name the console may be addressed by besides loopback names and the address it"
              + " binds (repeatable): the name of a proxy in front or of the machine.")
  List<String> allowedHosts = new ArrayList<>();

  @Option(
      names = "--tls-in-front",
      description = "Browsers reach the console over TLS (a proxy): Secure, __Host- cookies.")
  boolean tlsInFront;

  @Option(
      names = "--secret",
      paramLabel = "SECRET",
      defaultValue = "${env:PUMP_CONSOLE_SECRET}",
      description =
          "Signs CSRF tokens and login cookies (>= 32 characters; env PUMP_CONSOLE_SECRET); the"
              + " same on every instance behind one name. Default: random per process.")
  String secret;

  @Option(
      names = "--login-ttl",
      paramLabel = "DURATION",
      description = "How long a login by token lasts (ISO-8601, default PT12H).")
  Duration loginTtl;

  @Option(names = "--read-only", description = "Show only: refuse every action.")
  boolean readOnly;

  @Option(
      names = "--show-payloads",
      description = "Show payload previews of dead letters (they may hold personal data).")
  boolean showPayloads;

  @Option(
      names = "--actor",
      paramLabel = "NAME",
      description = "Who the audit log names for actions (default: the OS user).")
  String actor;

  @Option(
      names = "--commands-schema",
      paramLabel = "NAME",
      description = "The command queue's schema (default: " + CommandQueue.DEFAULT_SCHEMA + ").")
  String commandsSchema = CommandQueue.DEFAULT_SCHEMA;

  @Option(
      names = "--events-schema",
      paramLabel = "NAME",
      description = "The event store's schema (default: " + EventStore.DEFAULT_SCHEMA + ").")
  String eventsSchema = EventStore.DEFAULT_SCHEMA;

  @Option(
      names = "--balancer-schema",
      paramLabel = "NAME",
      description = "The balancer's schema (default: " + BalancerOperations.DEFAULT_SCHEMA + ").")
  String balancerSchema = BalancerOperations.DEFAULT_SCHEMA;

  @Option(
      names = "--audit-schema",
      paramLabel = "NAME",
      description =
          "The schema of the audit table (default: "
              + ConsoleAudit.DEFAULT_SCHEMA
              + "); created or upgraded at start unless --read-only.")
  String auditSchema = ConsoleAudit.DEFAULT_SCHEMA;

  @Option(
      names = "--audit-retention",
      paramLabel = "DURATION",
      description = "How long audit entries are kept (ISO-8601, default P400D).")
  Duration auditRetention;

  @Option(
      names = "--orders-per-second",
      defaultValue = "10",
      description =
          "--demo: orders placed per second in the background (default ${DEFAULT-VALUE}).")
  int ordersPerSecond;

  @Option(
      names = "--exit-after",
      paramLabel = "DURATION",
      hidden = true,
      description = "Stop after this long (ISO-8601), for tests.")
  Duration exitAfter;

  @Spec CommandSpec spec;

  /** Counted down when everything is closed: Ctrl-C's shutdown hook waits for it. */
  private final CountDownLatch closed = new CountDownLatch(1);

  /** The thread serving was interrupted: it stopped as on Ctrl-C, and keeps the interrupt. */
  private boolean interrupted;

  @Override
  public Integer call() throws Exception {
    // pump logs at ERROR unless --verbose; the audit lines are the console's record at INFO.
    String auditLevel = "org.slf4j.simpleLogger.log." + ConsoleAudit.LOGGER;
    if (System.getProperty(auditLevel) == null) {
      System.setProperty(auditLevel, "info");
    }
    try {
      return run();
    } finally {
      closed.countDown();
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private Integer run() throws Exception {
    String host = bind;
    int port = ConsoleServer.DEFAULT_PORT;
    if (bind.startsWith("[")) {
      int end = bind.indexOf(']');
      if (end < 0 || (end + 1 < bind.length() && bind.charAt(end + 1) != ':')) {
        throw new CliException("--bind: write an IPv6 address as [ADDRESS] or [ADDRESS]:PORT", 2);
      }
      host = bind.substring(1, end);
      if (end + 1 < bind.length()) {
        port = port(bind.substring(end + 2));
      }
    } else {
      int colon = bind.lastIndexOf(':');
      if (colon > 0 && bind.indexOf(':') == colon) {
        host = bind.substring(0, colon);
        port = port(bind.substring(colon + 1));
      }
    }
    if (ordersPerSecond < 1 || ordersPerSecond > 1_000) {
      throw new CliException(
          "--orders-per-second must be between 1 and 1000: " + ordersPerSecond, 2);
    }
    ConsoleConfig.Builder config;
    try {
      config =
          ConsoleConfig.builder()
              .accessToken(token)
              .readOnly(readOnly)
              .showPayloads(showPayloads)
              .schemas(commandsSchema, eventsSchema, balancerSchema)
              .allowedHosts(allowedHosts.toArray(String[]::new))
              .tlsInFront(tlsInFront)
              .secret(secret == null || secret.isBlank() ? null : secret)
              .auditSchema(auditSchema)
              .actorName(actor != null ? actor : System.getProperty("user.name", "console"));
      if (loginTtl != null) {
        config.loginTtl(loginTtl);
      }
      if (auditRetention != null) {
        config.auditRetention(auditRetention);
      }
      if (operatorsFile != null) {
        operators(config, operatorsFile);
      }
      if (identityHeader != null) {
        config.identityHeader(identityHeader, trustedProxies.toArray(String[]::new));
      } else if (!trustedProxies.isEmpty()) {
        throw new CliException("--trusted-proxy needs --identity-header", 2);
      }
      config.build(); // conflicts (two operators with one token) are usage errors too
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new CliException(e.getMessage(), 2);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (Database database = Database.open(db, demo, demo ? 40 : 8, err)) {
      DataSource ds = database.dataSource();
      if (!readOnly) {
        // No action runs unaudited: the audit table must exist before the first one.
        ConsoleAudit.migrate(ds, auditSchema);
      }
      if (!demo) {
        return serve(ds, config.build(), host, port, out);
      }
      MigrateCommand.migrateAll(ds);
      DemoScenario.createSchema(ds);
      DemoScenario scenario = new DemoScenario(ds, 1_000, true);
      try (DemoWorkload workload = DemoWorkload.start(ds, scenario, 4)) {
        ConsoleConfig withMeters =
            config.meterRegistry(workload.registry).title("messagepump console · demo").build();
        out.printf(
            "demo on %s: %d orders/s from %d customers in the background; declined orders"
                + " become dead letters, %s's notifications park, some events park their stream%n",
            database.description(),
            ordersPerSecond,
            scenario.customers,
            DemoScenario.STUCK_CUSTOMER);
        Thread orders = placeOrders(workload);
        try {
          return serve(ds, withMeters, host, port, out);
        } finally {
          orders.interrupt();
        }
      }
    }
  }

  private Integer serve(DataSource ds, ConsoleConfig config, String host, int port, PrintWriter out)
      throws InterruptedException {
    ConsoleServer server;
    try {
      // Checks the address and the schema names (the drivers' own rules, when it builds the
      // servlet) before it binds; each message names what it rejects.
      server = ConsoleServer.start(ds, config, host, port);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
    try (server) {
      String url = server.uri().toString();
      out.println("console: " + url + (config.operators().isEmpty() ? "" : "?token=<your token>"));
      out.println(who(config));
      out.println(
          (config.readOnly() ? "read-only, " : "")
              + (config.showPayloads() ? "payloads shown" : "payloads hidden")
              + "; every action is audited in "
              + config.auditSchema()
              + ".audit (kept "
              + config.auditRetention().toDays()
              + " days) and logged at INFO to "
              + ConsoleAudit.LOGGER
              + " on stderr. Ctrl-C stops.");
      out.flush();
      CountDownLatch stop = new CountDownLatch(1);
      // Ctrl-C: stop serving, then let call() close the pumps and the (embedded) database
      // before the JVM halts.
      Thread hook =
          new Thread(
              () -> {
                stop.countDown();
                try {
                  closed.await(20, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "pump-console-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        if (exitAfter != null) {
          stop.await(exitAfter.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } else {
          stop.await();
        }
      } catch (InterruptedException e) {
        // A program running the command on a thread of its own stops it by interrupting that
        // thread: the console stops as on Ctrl-C, closes everything with the interrupt cleared,
        // and sets it again once closed.
        interrupted = true;
      } finally {
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // the JVM is exiting: the hook has run
        }
      }
    }
    return 0;
  }

  /** Who may use the console, as the start-up lines say it. */
  private static String who(ConsoleConfig config) {
    String hosts =
        "answers to loopback names and addresses"
            + (config.allowedHosts().isEmpty()
                ? ""
                : " and " + String.join(", ", config.allowedHosts()))
            + " only (421 otherwise)";
    if (config.tokenless()) {
      return "tokenless: serves direct loopback clients only (a request with a Forwarded,"
          + " X-Forwarded-*, X-Real-IP or Via header is refused); every user and process on this"
          + " machine can act as '"
          + config.actorName()
          + "'; "
          + hosts;
    }
    List<String> ways = new ArrayList<>();
    if (!config.operators().isEmpty()) {
      ways.add(config.operators().size() + " operator token(s), logins last " + config.loginTtl());
    }
    if (config.identityHeader() != null) {
      ways.add(
          "the header "
              + config.identityHeader()
              + " from "
              + String.join(", ", config.trustedProxies()));
    }
    return "operators are identified by " + String.join(" or ", ways) + "; " + hosts;
  }

  /** Reads 'name token' lines into the config; a usage error names the line. */
  private static void operators(ConsoleConfig.Builder config, Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new CliException("--operators: cannot read " + file + ": " + e.getMessage(), 2);
    }
    int n = 0;
    for (String line : lines) {
      n++;
      String t = line.replace('\t', ' ').strip();
      if (t.isEmpty() || t.startsWith("#")) {
        continue;
      }
      int space = t.lastIndexOf(' ');
      if (space < 1) {
        throw new CliException("--operators: line " + n + " is not 'name token'", 2);
      }
      try {
        config.operator(t.substring(0, space).strip(), t.substring(space + 1));
      } catch (IllegalArgumentException e) {
        throw new CliException("--operators: line " + n + ": " + e.getMessage(), 2);
      }
    }
  }

  private static int port(String text) {
    try {
      int p = Integer.parseInt(text);
      if (p < 0 || p > 65_535) {
        throw new CliException("--bind: port must be between 0 and 65535: " + text, 2);
      }
      return p;
    } catch (NumberFormatException e) {
      throw new CliException("--bind: not a port: " + text, 2);
    }
  }

  /** Places orders in the background, one small batch every 200 ms. */
  private Thread placeOrders(DemoWorkload workload) {
    Thread t =
        new Thread(
            () -> {
              int next = 0;
              double owed = 0;
              while (!Thread.currentThread().isInterrupted()) {
                owed += ordersPerSecond / 5.0;
                int n = (int) owed;
                owed -= n;
                try {
                  if (n > 0) {
                    workload.enqueue(next, n);
                    next += n;
                  }
                  Thread.sleep(200);
                } catch (InterruptedException e) {
                  return;
                } catch (RuntimeException e) {
                  return; // the database is going away
                }
              }
            },
            "demo-orders");
    t.setDaemon(true);
    t.start();
    return t;
  }
}
