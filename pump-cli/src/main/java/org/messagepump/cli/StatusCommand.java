package org.messagepump.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.QueueDepth;
import org.messagepump.core.Pause;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.eventstream.EventOperations;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pump status}: what waits, what lags and what is parked, for every driver. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = {
      "Queue depth, dead letters, handler lag and balancer groups.",
      "Per command type the due and delayed commands, those running under a lease and dead"
          + " letters; per event handler the lag"
          + " and parked streams; per balancer group its partitions, messages and leases; and what"
          + " is paused."
    })
final class StatusCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Mixin DriverSelection drivers;

  @Option(names = "--json", description = "Print one JSON document instead of tables.")
  boolean json;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    java.util.Set<DriverName> selected = drivers.selected(spec);
    try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
      DataSource ds = database.dataSource();
      Map<String, Object> status = new LinkedHashMap<>();
      try {
        if (selected.contains(DriverName.commands)) {
          commands(ds, drivers.schemaOf(DriverName.commands), status);
        }
        if (selected.contains(DriverName.events)) {
          events(ds, drivers.schemaOf(DriverName.events), status);
        }
        if (selected.contains(DriverName.balancer)) {
          balancer(ds, drivers.schemaOf(DriverName.balancer), status);
        }
      } catch (IllegalArgumentException e) {
        throw new CliException(e.getMessage(), 2);
      }
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(
            new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT)
                .writeValueAsString(status));
      } else {
        print(out, status);
      }
    }
    return 0;
  }

  /** The command queue's part of the status, as plain maps and lists (as {@code --json} prints). */
  private static void commands(DataSource ds, String schema, Map<String, Object> status) {
    CommandOperations operations = Stores.commands(ds, schema);
    QueueDepth depth = operations.depth();
    Map<String, Object> byType = new LinkedHashMap<>();
    depth
        .byType()
        .forEach(
            (type, d) ->
                byType.put(
                    type,
                    Map.of(
                        "due",
                        d.due(),
                        "delayed",
                        d.delayed(),
                        "leased",
                        d.leased(),
                        "deadLetters",
                        d.deadLetters())));
    Map<String, Object> commands = new LinkedHashMap<>();
    commands.put("due", depth.due());
    commands.put("delayed", depth.delayed());
    commands.put("leased", depth.leased());
    commands.put("deadLetters", depth.deadLetters());
    commands.put("byType", byType);
    List<Object> paused = new ArrayList<>();
    for (Pause p : operations.pausedTypes()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("type", p.name());
      m.put("pausedAt", p.pausedAt().toString());
      m.put("reason", p.reason());
      paused.add(m);
    }
    commands.put("pausedTypes", paused);
    status.put("commands", commands);
  }

  /** The event handlers' part of the status. */
  private static void events(DataSource ds, String schema, Map<String, Object> status) {
    EventOperations handlers = Stores.events(ds, schema);
    List<Object> eventHandlers = new ArrayList<>();
    for (String key : handlers.handlerKeys()) {
      List<Object> streams = new ArrayList<>();
      long lag = 0;
      long parked = 0;
      long failures = 0;
      for (Checkpoint c : handlers.checkpoints(key)) {
        lag += c.lag();
        parked += c.parked() ? 1 : 0;
        failures += c.failures();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("streamId", c.streamId());
        s.put("checkpoint", c.offset());
        s.put("streamEnd", c.streamNextOffset());
        s.put("lag", c.lag());
        s.put("failures", c.failures());
        s.put("parked", c.parked());
        if (c.parked()) {
          s.put("parkedReason", c.parkedReason());
        }
        streams.add(s);
      }
      Map<String, Object> h = new LinkedHashMap<>();
      h.put("handlerKey", key);
      h.put("lag", lag);
      h.put("parkedStreams", parked);
      h.put("failures", failures);
      h.put("streams", streams);
      eventHandlers.add(h);
    }
    status.put("eventHandlers", eventHandlers);
    List<Object> pausedHandlers = new ArrayList<>();
    for (Pause p : handlers.pausedHandlers()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("handlerKey", p.name());
      m.put("pausedAt", p.pausedAt().toString());
      m.put("reason", p.reason());
      pausedHandlers.add(m);
    }
    status.put("pausedHandlers", pausedHandlers);
  }

  /** The balancer groups' part of the status. */
  private static void balancer(DataSource ds, String schema, Map<String, Object> status) {
    BalancerOperations operations = BalancerOperations.of(ds, schema);
    List<Object> groups = new ArrayList<>();
    for (GroupStats g : operations.groups()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("group", g.group());
      m.put("partitions", g.partitions());
      m.put("messages", g.messages());
      m.put("inFlightLeases", g.leases());
      m.put("parkedPartitions", g.parked());
      m.put(
          "oldestMessageAgeSeconds",
          g.oldestAge() == null ? 0.0 : g.oldestAge().toMillis() / 1000.0);
      groups.add(m);
    }
    status.put("balancer", groups);
    List<Object> pausedGroups = new ArrayList<>();
    for (Pause p : operations.pausedGroups()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("group", p.name());
      m.put("pausedAt", p.pausedAt().toString());
      m.put("reason", p.reason());
      pausedGroups.add(m);
    }
    status.put("pausedGroups", pausedGroups);
  }

  private static void print(PrintWriter out, Map<String, Object> status) {
    if (status.containsKey("commands")) {
      printCommands(out, status);
    }
    if (status.containsKey("eventHandlers")) {
      printEvents(out, status);
    }
    if (status.containsKey("balancer")) {
      printBalancer(out, status);
    }
  }

  @SuppressWarnings("unchecked")
  private static void printCommands(PrintWriter out, Map<String, Object> status) {
    Map<String, Object> commands = (Map<String, Object>) status.get("commands");
    out.printf(
        "Commands: %s due, %s delayed, %s running under a lease, %s dead letters%n",
        commands.get("due"),
        commands.get("delayed"),
        commands.get("leased"),
        commands.get("deadLetters"));
    Table types = new Table("type", "due", "delayed", "leased", "dead letters");
    ((Map<String, Map<String, Object>>) commands.get("byType"))
        .forEach(
            (t, d) ->
                types.row(
                    t, d.get("due"), d.get("delayed"), d.get("leased"), d.get("deadLetters")));
    types.print(out);
    List<Map<String, Object>> paused = (List<Map<String, Object>>) commands.get("pausedTypes");
    if (!paused.isEmpty()) {
      out.println("Paused command types (no pump acquires them; `pump resume TYPE`):");
      Table pausedTable = new Table("type", "paused at", "reason");
      for (Map<String, Object> p : paused) {
        pausedTable.row(
            p.get("type"), p.get("pausedAt"), p.get("reason") == null ? "" : p.get("reason"));
      }
      pausedTable.print(out);
    }
    out.println();
  }

  @SuppressWarnings("unchecked")
  private static void printEvents(PrintWriter out, Map<String, Object> status) {
    out.println("Event handlers:");
    Table handlers =
        new Table("handler", "stream", "checkpoint", "end", "lag", "failures", "parked");
    for (Object o : (List<Object>) status.get("eventHandlers")) {
      Map<String, Object> h = (Map<String, Object>) o;
      for (Object so : (List<Object>) h.get("streams")) {
        Map<String, Object> s = (Map<String, Object>) so;
        handlers.row(
            h.get("handlerKey"),
            s.get("streamId"),
            s.get("checkpoint"),
            s.get("streamEnd"),
            s.get("lag"),
            s.get("failures"),
            Boolean.TRUE.equals(s.get("parked")) ? "yes" : "");
      }
    }
    handlers.print(out);
    printPaused(
        out,
        (List<Map<String, Object>>) status.get("pausedHandlers"),
        "Paused event handlers (no pump acquires them; `pump resume --handler KEY`):",
        "handler",
        "handlerKey");
    out.println();
  }

  @SuppressWarnings("unchecked")
  private static void printBalancer(PrintWriter out, Map<String, Object> status) {
    out.println("Balancer groups:");
    Table groups = new Table("group", "partitions", "messages", "leases", "parked", "oldest (s)");
    for (Object o : (List<Object>) status.get("balancer")) {
      Map<String, Object> g = (Map<String, Object>) o;
      groups.row(
          g.get("group"),
          g.get("partitions"),
          g.get("messages"),
          g.get("inFlightLeases"),
          g.get("parkedPartitions"),
          g.get("oldestMessageAgeSeconds"));
    }
    groups.print(out);
    printPaused(
        out,
        (List<Map<String, Object>>) status.get("pausedGroups"),
        "Paused balancer groups (no pump acquires them; `pump resume --group GROUP`):",
        "group",
        "group");
  }

  private static void printPaused(
      PrintWriter out, List<Map<String, Object>> paused, String title, String column, String key) {
    if (paused.isEmpty()) {
      return;
    }
    out.println(title);
    Table table = new Table(column, "paused at", "reason");
    for (Map<String, Object> p : paused) {
      table.row(p.get(key), p.get("pausedAt"), p.get("reason") == null ? "" : p.get("reason"));
    }
    table.print(out);
  }
}
