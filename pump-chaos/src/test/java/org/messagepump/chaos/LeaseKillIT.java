package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Lease mode with real processes ({@link LeaseNodeMain}): a holder killed with SIGKILL in its
 * handler, a holder frozen with SIGSTOP past its lease, and a thousand commands across three nodes
 * killed and frozen again and again. Every completion is in the ledger (written in the completion's
 * own fenced transaction, with the completing claim's fencing token), every handler run in {@code
 * chaos.runs}; the figures are computed in SQL on the database clock and printed.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class LeaseKillIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final Duration LEASE = Duration.ofSeconds(2);

  /** A handler that outlives every step of the single-command scenarios. */
  private static final Duration LONG_HANDLER = Duration.ofSeconds(60);

  private static final Duration SHORT_HANDLER = Duration.ofMillis(100);

  /**
   * How late after its lease expired a command may start again: one 100 ms poll, plus the load of a
   * shared two-core machine (a JVM and PostgreSQL competing with other builds), where a poll has
   * been seen to wait for seconds. A stalled re-claim (a lock or a missed expiry) takes far longer.
   */
  private static final Duration RECLAIM_SLACK = Duration.ofSeconds(5);

  private CommandQueue queue;
  private Ledger ledger;
  private final List<NodeProcess> nodes = new ArrayList<>();

  @BeforeEach
  void setUp(TestDatabase db) {
    queue = COMMANDS.queue();
    ledger = Ledger.install(db.dataSource());
    ledger.reset();
  }

  @org.junit.jupiter.api.AfterEach
  void stopNodes() {
    for (NodeProcess n : nodes) {
      n.close();
    }
    nodes.clear();
  }

  /** A lease node with a fresh log, remembered for the clean-up. */
  private NodeProcess node(
      TestDatabase db, String name, int workers, Duration handler, Duration maxHandler, int max) {
    NodeProcess n = Chaos.leaseNode(db, name, workers, LEASE, handler, maxHandler, max);
    try {
      Files.deleteIfExists(n.log());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    nodes.add(n);
    return n;
  }

  private NodeProcess startReady(TestDatabase db, NodeProcess n) {
    Instant before = ledger.now();
    n.start();
    Chaos.awaitMark(db.dataSource(), "ready:" + n.name(), before, Duration.ofSeconds(90));
    return n;
  }

  @Test
  void aHolderKilledInItsHandlerLosesTheCommandToAnotherNodeOnceItsLeaseExpires(TestDatabase db) {
    DataSource ds = db.dataSource();
    NodeProcess a = startReady(db, node(db, "lease-killed", 1, LONG_HANDLER, LONG_HANDLER, 5));
    String id = Chaos.enqueue(queue, ledger, 0, 1).get(0);
    Run first = awaitRun(ds, id, 1);
    NodeProcess b = startReady(db, node(db, "lease-taker", 1, SHORT_HANDLER, SHORT_HANDLER, 5));
    // B's start took longer than a lease; the heartbeats kept A's claim meanwhile.
    long heldBeforeKillMs = Duration.between(first.startedAt(), ledger.now()).toMillis();
    assertThat(runs(ds, id)).as("runs while A holds the lease").hasSize(1);

    Instant killedAt = ledger.mark("kill:" + a.name());
    a.kill();
    Instant expiry = leaseExpiry(ds, id);
    Run second = awaitRun(ds, id, 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> ledger.rows() == 1);
    b.stop(Duration.ofSeconds(15));
    Map<String, Long> metersB = LeaseNodeMain.meters(b);

    long killToExpiryMs = Duration.between(killedAt, expiry).toMillis();
    long killToRerunMs = Duration.between(killedAt, second.startedAt()).toMillis();
    long expiryToRerunMs = Duration.between(expiry, second.startedAt()).toMillis();
    Completion done = completion(ds, id);
    String line =
        ChaosReport.of("lease-1-kill9-mid-handler")
            .put("leaseMs", LEASE.toMillis())
            .put("heldBeforeKillMs", heldBeforeKillMs)
            .put("killToLeaseExpiryMs", killToExpiryMs)
            .put("killToSecondRunMs", killToRerunMs)
            .put("leaseExpiryToSecondRunMs", expiryToRerunMs)
            .put("firstRun", first.toString())
            .put("secondRun", second.toString())
            .put("completion", done.toString())
            .put("takerMeters", metersB.toString())
            .write();
    System.out.println("LEASE-FIGURES " + line);

    assertThat(first.node()).isEqualTo(a.name());
    assertThat(second.node()).isEqualTo(b.name());
    assertThat(second.attempt()).as("the killed attempt counts as a failure").isEqualTo(2);
    assertThat(second.token()).isGreaterThan(first.token());
    // The lease's expiry on the database was set by A's last heartbeat, at most a lease before.
    assertThat(killToExpiryMs).isBetween(0L, LEASE.toMillis());
    assertThat(second.startedAt()).as("no second run before the lease expired").isAfter(expiry);
    assertThat(expiryToRerunMs).isLessThanOrEqualTo(RECLAIM_SLACK.toMillis());
    assertThat(done.node()).isEqualTo(b.name());
    assertThat(done.token()).isEqualTo(second.token());
    assertThat(done.attempt()).isEqualTo(2);
    assertThat(ledger.figures().exactlyOnce()).isTrue();
    assertThat(metersB).containsEntry("messagepump.commands.leases.expired", 1L);
    assertThat(metersB).containsEntry("messagepump.deliveries{outcome=handled}", 1L);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
  }

  @Test
  void aHolderFrozenPastItsLeaseCannotCompleteAndTheOtherNodeCompletesOnce(TestDatabase db)
      throws IOException {
    DataSource ds = db.dataSource();
    // A's handler sleeps 15 s: it is still in it when frozen, and returns soon after the thaw.
    Duration frozenHandler = Duration.ofSeconds(15);
    NodeProcess a = startReady(db, node(db, "lease-frozen", 1, frozenHandler, frozenHandler, 5));
    String id = Chaos.enqueue(queue, ledger, 0, 1).get(0);
    Run first = awaitRun(ds, id, 1);
    NodeProcess b = startReady(db, node(db, "lease-other", 1, SHORT_HANDLER, SHORT_HANDLER, 5));

    Instant pausedAt = ledger.mark("stop:" + a.name());
    assertThat(Duration.between(first.startedAt(), pausedAt))
        .as("A must still be in its handler when frozen")
        .isLessThan(frozenHandler.minusSeconds(3));
    a.pause();
    Run second = awaitRun(ds, id, 2);
    await().atMost(Duration.ofSeconds(30)).until(() -> ledger.rows() == 1);
    Instant resumedAt = ledger.mark("cont:" + a.name());
    a.resume();
    String refusal = "the outcome of " + Work.TYPE + " " + id + " was refused";
    await()
        .atMost(frozenHandler.plusSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> logLines(a, refusal) >= 1);
    a.stop(Duration.ofSeconds(15));
    b.stop(Duration.ofSeconds(15));
    Map<String, Long> metersA = LeaseNodeMain.meters(a);
    Map<String, Long> metersB = LeaseNodeMain.meters(b);
    long refusals = logLines(a, refusal);
    long beatsFoundLost = logLines(a, "the lease of " + Work.TYPE + " " + id + " was taken");

    Completion done = completion(ds, id);
    String line =
        ChaosReport.of("lease-2-sigstop-past-lease")
            .put("leaseMs", LEASE.toMillis())
            .put("frozenMs", Duration.between(pausedAt, resumedAt).toMillis())
            .put("stopToSecondRunMs", Duration.between(pausedAt, second.startedAt()).toMillis())
            .put("firstRun", first.toString())
            .put("secondRun", second.toString())
            .put("completion", done.toString())
            .put("completionsInLedger", ledger.rows())
            .put("refusalsLoggedByFrozen", refusals)
            .put("heartbeatLossLoggedByFrozen", beatsFoundLost)
            .put("frozenMeters", metersA.toString())
            .put("otherMeters", metersB.toString())
            .write();
    System.out.println("LEASE-FIGURES " + line);

    assertThat(second.node()).isEqualTo(b.name());
    assertThat(second.attempt()).isEqualTo(2);
    assertThat(second.token()).isGreaterThan(first.token());
    assertThat(done.node()).as("completed by the other node").isEqualTo(b.name());
    assertThat(done.token()).isEqualTo(second.token());
    assertThat(ledger.figures().ledgerRows()).as("completions").isEqualTo(1);
    assertThat(metersA).containsEntry("messagepump.leases.lost", 1L);
    assertThat(metersA).containsEntry("messagepump.deliveries{outcome=handled}", 0L);
    assertThat(refusals).as("refusal logged once").isEqualTo(1);
    assertThat(beatsFoundLost).as("heartbeat's finding logged at most once").isLessThanOrEqualTo(1);
    assertThat(metersB).containsEntry("messagepump.commands.leases.expired", 1L);
    assertThat(metersB).containsEntry("messagepump.leases.lost", 0L);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
  }

  @Test
  void aThousandCommandsUnderRepeatedKillsAndFreezesCompleteExactlyOnce(TestDatabase db)
      throws IOException {
    DataSource ds = db.dataSource();
    int commands = 1_000;
    // High enough that no command parks: it would take 20 faults hitting the same command.
    int maxFailures = 20;
    for (int i = 1; i <= 3; i++) {
      startReady(
          db,
          node(db, "lease-n" + i, 4, Duration.ofMillis(50), Duration.ofMillis(500), maxFailures));
    }
    // Ten rounds of a hundred commands, a fault in each while the nodes work on them. The queue
    // serves due commands oldest due time first, so an expired lease waits behind a backlog that
    // was due before it expired: waves keep that backlog short, so that a frozen holder's claims
    // are taken over while it is frozen.
    int rounds = 10;
    Instant began = ledger.now();
    int kills = 0;
    int freezes = 0;
    long leasedAtFaults = 0;
    long expiredAtFaults = 0;
    long takenOver = 0;
    long frozenMsMax = 0;
    for (int round = 0; round < rounds; round++) {
      Chaos.enqueue(
          queue, ledger, (long) round * commands / rounds, (round + 1L) * commands / rounds);
      Chaos.pace(Duration.ofMillis(500));
      NodeProcess victim = nodes.get((round + round / 3) % nodes.size());
      if (round % 3 == 2) {
        ledger.mark("stop:" + victim.name());
        victim.pause();
        Map<String, Long> held = leasesOf(ds, victim);
        leasedAtFaults += held.size();
        expiredAtFaults += expiredLeasesOf(ds, victim);
        long frozenAt = System.nanoTime();
        // Frozen until another node took over its claims (they expire within a lease), bounded:
        // a claim whose completion the freeze caught mid-transaction stays locked by it.
        long bound = frozenAt + Duration.ofSeconds(15).toNanos();
        long taken = 0;
        while (System.nanoTime() < bound) {
          taken = takenOver(ds, held);
          if (taken == held.size() && System.nanoTime() - frozenAt > LEASE.toNanos()) {
            break;
          }
          Chaos.pace(Duration.ofMillis(100));
        }
        takenOver += taken;
        frozenMsMax = Math.max(frozenMsMax, (System.nanoTime() - frozenAt) / 1_000_000);
        victim.resume();
        freezes++;
      } else {
        leasedAtFaults += leasesOf(ds, victim).size();
        expiredAtFaults += expiredLeasesOf(ds, victim);
        ledger.mark("kill:" + victim.name());
        victim.kill();
        startReady(db, victim);
        kills++;
      }
      Chaos.pace(Duration.ofSeconds(1));
    }
    await()
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> pending(db) == 0);
    long drainMs = Duration.between(began, ledger.now()).toMillis();
    long lostByFinal = 0;
    long expiredByFinal = 0;
    Map<String, Long> refusalsPerCommand = new java.util.HashMap<>();
    // What the nodes logged about their leases, over every start: the story of the figures.
    Map<String, String> logged =
        Map.of(
            "expiredClaimsLogged", "expired before it completed; counted as a failure",
            "heartbeatFoundLostLogged", "was taken by another claim while its handler runs",
            "heartbeatFailuresLogged", "extending the leases of",
            "unrecordedOutcomesLogged", "recording the outcome of");
    Map<String, Long> logCounts = new java.util.TreeMap<>();
    for (NodeProcess n : nodes) {
      for (Map.Entry<String, String> e : logged.entrySet()) {
        logCounts.merge(e.getKey(), logLines(n, e.getValue()), Long::sum);
      }
      n.stop(Duration.ofSeconds(15));
      Map<String, Long> m = LeaseNodeMain.meters(n);
      lostByFinal += m.getOrDefault("messagepump.leases.lost", 0L);
      expiredByFinal += m.getOrDefault("messagepump.commands.leases.expired", 0L);
      for (String id : refusedIds(n)) {
        refusalsPerCommand.merge(id, 1L, Long::sum);
      }
    }
    long refusalsLogged = refusalsPerCommand.values().stream().mapToLong(Long::longValue).sum();
    long refusalsOfOneCommandMax =
        refusalsPerCommand.values().stream().mapToLong(Long::longValue).max().orElse(0);

    Ledger.Figures f = ledger.figures();
    long runs = db.queryLong("SELECT count(*) FROM chaos.runs");
    long commandsRun = db.queryLong("SELECT count(DISTINCT message_id) FROM chaos.runs r");
    long maxAttempt = db.queryLong("SELECT coalesce(max(attempt), 0) FROM chaos.ledger");
    long retried = db.queryLong("SELECT count(*) FROM chaos.ledger WHERE attempt > 1");
    // A completion by any claim but the command's last one would be a fencing failure.
    long staleCompletions =
        db.queryLong(
            "SELECT count(*) FROM chaos.ledger l WHERE l.position <>"
                + " (SELECT max(r.token) FROM chaos.runs r WHERE r.message_id = l.message_id)");
    long completionsWithoutRun =
        db.queryLong(
            "SELECT count(*) FROM chaos.ledger l WHERE NOT EXISTS (SELECT 1 FROM chaos.runs r"
                + " WHERE r.message_id = l.message_id AND r.token = l.position)");
    long parked = db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
    String line =
        ChaosReport.of("lease-3-thousand-under-kill9-and-sigstop")
            .put("commands", commands)
            .put("nodes", "3x4")
            .put("leaseMs", LEASE.toMillis())
            .put("handlerMs", "50-500")
            .put("kills", kills)
            .put("freezes", freezes)
            .put("leasedByVictimsAtFaults", leasedAtFaults)
            .put("takenOverWhileFrozen", takenOver)
            .put("longestFreezeMs", frozenMsMax)
            .put(f)
            .put("handlerRuns", runs)
            .put("commandsRun", commandsRun)
            .put("completedAfterRetry", retried)
            .put("maxAttempt", maxAttempt)
            .put("staleCompletions", staleCompletions)
            .put("completionsWithoutRun", completionsWithoutRun)
            .put("parked", parked)
            .put("pending", pending(db))
            .put("leasesLostFinalIncarnations", lostByFinal)
            .put("leasesExpiredFinalIncarnations", expiredByFinal)
            .put("refusalsLoggedAllIncarnations", refusalsLogged)
            .put("refusalsLoggedForOneCommandMax", refusalsOfOneCommandMax)
            .put("drainMs", drainMs)
            .put("expiredLeasesOfVictimsAtFaults", expiredAtFaults)
            .put("nodeLogs", logCounts.toString())
            .write();
    System.out.println("LEASE-FIGURES " + line);

    assertThat(kills).as("kills").isEqualTo(7);
    assertThat(freezes).as("freezes").isEqualTo(3);
    assertThat(leasedAtFaults).as("claims held by the victims at the faults").isPositive();
    assertThat(takenOver).as("claims taken over from frozen holders").isPositive();
    // Each taken-over claim's frozen handler returned after the thaw and was refused (unless its
    // node was killed first), logged once per command.
    assertThat(refusalsLogged).as("refusals logged").isPositive();
    assertThat(refusalsOfOneCommandMax).as("refusals logged for one command").isEqualTo(1);
    assertThat(f.acknowledged()).isEqualTo(commands);
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicate completions").isZero();
    assertThat(f.ledgerRows()).as("completions").isEqualTo(commands);
    assertThat(staleCompletions).isZero();
    assertThat(completionsWithoutRun).isZero();
    assertThat(parked).as("parked").isZero();
    assertThat(pending(db)).isZero();
    assertThat(retried).as("commands whose earlier attempt was killed or frozen").isPositive();
    assertThat(runs).isGreaterThan(commands);
  }

  private static long pending(TestDatabase db) {
    return db.queryLong("SELECT count(*) FROM commandqueue.commands");
  }

  /**
   * The commands leased now by the node's JVM (its holder name is {@code pid@host}): message id to
   * fencing token.
   */
  private static Map<String, Long> leasesOf(DataSource ds, NodeProcess n) {
    Map<String, Long> out = new java.util.HashMap<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id::text, lease_token FROM commandqueue.commands"
                    + " WHERE leased_by LIKE ?")) {
      ps.setString(1, n.pid() + "@%");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getString(1), rs.getLong(2));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  /** How many of the node's leases have expired (and no other claim took them yet). */
  private static long expiredLeasesOf(DataSource ds, NodeProcess n) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM commandqueue.commands WHERE leased_by LIKE ?"
                    + " AND deliver_at <= clock_timestamp()")) {
      ps.setString(1, n.pid() + "@%");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** How many of {@code held} (id to token) another claim took since, or completed. */
  private static long takenOver(DataSource ds, Map<String, Long> held) {
    if (held.isEmpty()) {
      return 0;
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM unnest(?::text[], ?::bigint[]) AS h(id, token)"
                    + " WHERE NOT EXISTS (SELECT 1 FROM commandqueue.commands c"
                    + " WHERE c.message_id = h.id::uuid AND c.lease_token = h.token)")) {
      List<String> ids = new ArrayList<>(held.keySet());
      ps.setArray(1, c.createArrayOf("text", ids.toArray()));
      ps.setArray(2, c.createArrayOf("int8", ids.stream().map(held::get).toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The ids of the commands whose outcome the node's log says was refused (all its starts). */
  private static List<String> refusedIds(NodeProcess n) throws IOException {
    java.util.regex.Pattern refused =
        java.util.regex.Pattern.compile(
            "the outcome of " + java.util.regex.Pattern.quote(Work.TYPE) + " (\\S+) was refused");
    List<String> ids = new ArrayList<>();
    if (!Files.exists(n.log())) {
      return ids;
    }
    for (String l : Files.readAllLines(n.log())) {
      java.util.regex.Matcher m = refused.matcher(l);
      if (m.find()) {
        ids.add(m.group(1));
      }
    }
    return ids;
  }

  /** Lines of the node's log (every start since the test began) holding {@code text}. */
  private static long logLines(NodeProcess n, String text) throws IOException {
    if (!Files.exists(n.log())) {
      return 0;
    }
    try (var lines = Files.lines(n.log())) {
      return lines.filter(l -> l.contains(text)).count();
    }
  }

  /** One handler run: who, which attempt, under which fencing token, when (database clock). */
  record Run(String node, int attempt, long token, Instant startedAt) {}

  /** The completion of a command in the ledger. */
  record Completion(String node, int attempt, long token) {}

  private static Run awaitRun(DataSource ds, String id, int attempt) {
    Run[] found = new Run[1];
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(50))
        .until(
            () -> {
              for (Run r : runs(ds, id)) {
                if (r.attempt() == attempt) {
                  found[0] = r;
                  return true;
                }
              }
              return false;
            });
    return found[0];
  }

  private static List<Run> runs(DataSource ds, String id) {
    List<Run> out = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT node, attempt, token, started_at FROM chaos.runs WHERE message_id = ?"
                    + " ORDER BY seq")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new Run(
                  rs.getString(1), rs.getInt(2), rs.getLong(3), rs.getTimestamp(4).toInstant()));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  private static Completion completion(DataSource ds, String id) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT node, attempt, position FROM chaos.ledger WHERE message_id = ?")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("a completion of " + id).isTrue();
        Completion done = new Completion(rs.getString(1), rs.getInt(2), rs.getLong(3));
        assertThat(rs.next()).as("a second completion of " + id).isFalse();
        return done;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The command's lease expiry as recorded now (its {@code deliver_at} while leased). */
  private static Instant leaseExpiry(DataSource ds, String id) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT deliver_at FROM commandqueue.commands WHERE message_id = ?::uuid"
                    + " AND leased_by IS NOT NULL")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("the killed holder's lease on " + id).isTrue();
        Timestamp t = rs.getTimestamp(1);
        return t.toInstant();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
