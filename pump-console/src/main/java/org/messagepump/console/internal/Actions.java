package org.messagepump.console.internal;

import java.sql.Connection;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.commands.DeadLetters;
import org.messagepump.commands.RescheduleResult;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.eventstream.CheckpointConflictException;
import org.messagepump.eventstream.EventOperations;

/**
 * The console's actions, each a POST that the servlet has already admitted and CSRF-checked, run in
 * one transaction with its audit row ({@link ActionTransactions}). Input is validated before
 * anything is sent to the database. Every target is named: a bulk action acts on the ids it lists,
 * one by one, or (all of a type) in a repeatable-read snapshot in which the ids it records are
 * exactly the rows it moves.
 */
public final class Actions {

  /** At most this many dead letters in one bulk request. */
  static final int MAX_IDS = 1_000;

  /** At most this many dead letters in one "all of a type" action. */
  static final int MAX_TYPE_IDS = 100_000;

  /**
   * What an action did: the audit's targets and result (also shown once on the next page), and
   * where the browser goes next.
   */
  public record Done(String action, List<String> targets, String result, String redirect) {}

  private final Stores stores;
  private final Deque<UUID> retried = new ArrayDeque<>();

  public Actions(Stores stores) {
    this.stores = stores;
  }

  /** The latest commands retried through this console, newest first. */
  public List<UUID> retried() {
    synchronized (retried) {
      return new ArrayList<>(retried);
    }
  }

  /** The isolation an action's transaction needs: a snapshot when it acts on all of a type. */
  public static int isolation(String path, Request r) {
    return path.startsWith("/dead-letters/") && r.optional("type", 200) != null
        ? Connection.TRANSACTION_REPEATABLE_READ
        : Connection.TRANSACTION_READ_COMMITTED;
  }

  /**
   * Runs the action at {@code path} (below {@code /actions}) in {@code tx}, the transaction every
   * driver call joins; throws {@link HttpError}.
   */
  public Done run(String path, Request r, Tx tx) {
    return switch (path) {
      case "/dead-letters/retry" -> deadLetters(r, true, tx);
      case "/dead-letters/discard" -> deadLetters(r, false, tx);
      case "/streams/resume" -> resume(r);
      case "/checkpoints/reset" -> reset(r);
      case "/checkpoints/set" -> setCheckpoint(r);
      case "/keys/unpark" -> unpark(r);
      case "/commands/cancel" -> cancel(r);
      case "/commands/reschedule" -> reschedule(r);
      case "/pauses/pause" -> pause(r, true);
      case "/pauses/resume" -> pause(r, false);
      default -> throw HttpError.notFound("no action " + path);
    };
  }

  private Done deadLetters(Request r, boolean retry, Tx tx) {
    String action = retry ? "dead-letters.retry" : "dead-letters.discard";
    String verb = retry ? "retried" : "discarded";
    DeadLetters letters = stores.commands().deadLetters();
    String type = r.optional("type", 200);
    String[] raw = r.http().getParameterValues("id");
    if (type != null && raw != null) {
      throw HttpError.badRequest("say either id or type, not both");
    }
    if (type != null) {
      List<String> ids = stores.deadLetterIds(tx, type, MAX_TYPE_IDS + 1);
      if (ids.isEmpty()) {
        throw HttpError.notFound("no dead letters of type " + type);
      }
      if (ids.size() > MAX_TYPE_IDS) {
        throw HttpError.badRequest(
            "more than " + MAX_TYPE_IDS + " dead letters of type " + type + ": use the CLI");
      }
      // The same snapshot as the ids read: exactly those rows move (a row another transaction
      // changed meanwhile is a serialization failure, and nothing moves).
      int n = retry ? letters.retryAll(type) : letters.discardAll(type);
      if (n != ids.size()) {
        throw new IllegalStateException(verb + " " + n + " of " + ids.size() + " listed ids");
      }
      return new Done(action, ids, verb + " all " + n + " of type " + type, "/commands");
    }
    if (raw == null || raw.length == 0) {
      throw HttpError.badRequest("missing parameter id (or type)");
    }
    if (raw.length > MAX_IDS) {
      throw HttpError.badRequest("at most " + MAX_IDS + " ids at once");
    }
    Set<UUID> ids = new LinkedHashSet<>();
    for (String s : raw) {
      try {
        ids.add(UUID.fromString(s.trim()));
      } catch (IllegalArgumentException e) {
        throw HttpError.badRequest(
            "not a message id: " + (s.length() > 40 ? s.substring(0, 40) : s));
      }
    }
    List<String> done = new ArrayList<>();
    List<UUID> missing = new ArrayList<>();
    for (UUID id : ids) {
      boolean ok = retry ? letters.retry(id) : letters.discard(id);
      if (ok) {
        done.add(id.toString());
      } else {
        missing.add(id);
      }
    }
    if (done.isEmpty()) {
      throw HttpError.notFound(
          ids.size() == 1
              ? "no dead letter with message id " + ids.iterator().next()
              : "none of these are dead letters");
    }
    if (retry) {
      done.forEach(id -> remember(UUID.fromString(id)));
    }
    String result =
        verb
            + " "
            + done.size()
            + (missing.isEmpty() ? "" : ", " + missing.size() + " unknown: " + missing);
    return new Done(action, done, result, "/commands");
  }

  private void remember(UUID id) {
    synchronized (retried) {
      retried.remove(id);
      retried.addFirst(id);
      while (retried.size() > 10) {
        retried.removeLast();
      }
    }
  }

  /**
   * Cancels one pending command, by message id, confirmed by that id typed again. A command a
   * running handler holds is refused with 409 and stays as it is.
   */
  private Done cancel(Request r) {
    UUID id = commandId(r);
    String typed = r.optional("confirm", 100);
    if (typed == null || !typed.strip().equals(id.toString())) {
      throw HttpError.badRequest("type the message id " + id + " to confirm");
    }
    return switch (stores.commands().pending().cancel(id)) {
      case CANCELLED -> new Done("commands.cancel", List.of(id.toString()), "cancelled", found(id));
      case NOT_FOUND -> throw HttpError.notFound("no pending command with message id " + id);
      case HELD -> throw held(id);
    };
  }

  /** Moves one pending command, by message id, to the time given ({@code at}, ISO-8601). */
  private Done reschedule(Request r) {
    UUID id = commandId(r);
    String raw = r.required("at", 64).strip();
    java.time.Instant at;
    try {
      at = java.time.Instant.parse(raw);
    } catch (java.time.format.DateTimeParseException e) {
      throw HttpError.badRequest(
          "at must be an instant such as 2030-01-31T08:00:00Z: "
              + (raw.length() > 40 ? raw.substring(0, 40) : raw));
    }
    RescheduleResult result;
    try {
      result = stores.commands().pending().reschedule(id, at);
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    return switch (result) {
      case RESCHEDULED ->
          new Done(
              "commands.reschedule", List.of(id.toString()), "rescheduled to " + at, found(id));
      case NOT_FOUND -> throw HttpError.notFound("no pending command with message id " + id);
      case HELD -> throw held(id);
    };
  }

  private static UUID commandId(Request r) {
    String raw = r.required("id", 36);
    try {
      return UUID.fromString(raw.strip());
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest("not a message id: " + raw);
    }
  }

  private static HttpError held(UUID id) {
    return new HttpError(
        409,
        "command "
            + id
            + " is held by a running handler and nothing changed: it is handled, or due again"
            + " after a failure; try again then");
  }

  /** The commands page with this command looked up. */
  private static String found(UUID id) {
    return "/commands?by=id&find=" + id;
  }

  private Done resume(Request r) {
    String handler = handler(r);
    EventOperations handlers = stores.events();
    String stream = r.optional("stream", 20);
    String back = "/events?handler=" + Html.url(handler);
    if (stream == null) {
      // The parked streams, each resumed by id: exactly the ones listed are recorded.
      List<String> resumed = new ArrayList<>();
      for (Checkpoint c : handlers.parked(handler)) {
        if (handlers.resume(handler, c.streamId())) {
          resumed.add(handler + " stream " + c.streamId());
        }
      }
      if (resumed.isEmpty()) {
        throw HttpError.notFound("no parked streams for " + handler);
      }
      return new Done("streams.resume", resumed, "resumed " + resumed.size(), back);
    }
    long id = r.longParam("stream");
    if (!handlers.resume(handler, id)) {
      throw HttpError.notFound("stream " + id + " is not parked for " + handler);
    }
    return new Done("streams.resume", List.of(handler + " stream " + id), "resumed 1", back);
  }

  private Done reset(Request r) {
    String handler = handler(r);
    confirmed(r, handler);
    int n = stores.events().reset(handler);
    return new Done(
        "checkpoints.reset",
        List.of(handler),
        "reset all " + n + " streams to offset 0",
        "/events?handler=" + Html.url(handler));
  }

  private Done setCheckpoint(Request r) {
    String handler = handler(r);
    long stream = r.longParam("stream");
    long expected = r.longParam("expected");
    long offset = r.longParam("offset");
    if (stream < 0 || expected < 0 || offset < 0) {
      throw HttpError.badRequest("stream, expected and offset must not be negative");
    }
    confirmed(r, handler);
    try {
      stores.events().setCheckpoint(handler, stream, expected, offset);
    } catch (CheckpointConflictException e) {
      throw new HttpError(409, "the checkpoint moved: " + e.getMessage());
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    return new Done(
        "checkpoints.set",
        List.of(handler + " stream " + stream),
        "stream " + stream + " moved from " + expected + " to " + offset,
        "/events?handler=" + Html.url(handler));
  }

  private Done unpark(Request r) {
    String group = r.required("group", MessageBalancer.MAX_NAME_LENGTH);
    String key = r.required("key", MessageBalancer.MAX_NAME_LENGTH);
    if (stores.groups().stream().noneMatch(g -> g.group().equals(group))) {
      throw HttpError.notFound("no balancer group " + group);
    }
    if (!stores.balancer().unpark(group, key)) {
      throw HttpError.notFound("key " + key + " is not parked in " + group);
    }
    return new Done(
        "keys.unpark",
        List.of(group + " key " + key),
        "unparked",
        "/balancer?group=" + Html.url(group));
  }

  /**
   * Pauses or resumes, cluster-wide, one command type, event handler or balancer group ({@code
   * driver}: {@code commands}, {@code events} or {@code balancer}; {@code name}; an optional {@code
   * reason} for a pause). Handlers and groups must exist; a type need not have commands yet, as the
   * queue lets a type be paused before its first command.
   */
  private Done pause(Request r, boolean pause) {
    String driver = r.required("driver", 20);
    String name = r.required("name", MessageBalancer.MAX_NAME_LENGTH);
    String reason = pause ? r.optional("reason", 500) : null;
    if (reason != null && reason.isBlank()) {
      reason = null;
    }
    String verb = pause ? "paused" : "resumed";
    boolean changed;
    String target;
    try {
      switch (driver) {
        case "commands" -> {
          changed =
              pause
                  ? stores.commands().pauseType(name, reason)
                  : stores.commands().resumeType(name);
          target = "type " + name;
        }
        case "events" -> {
          if (!stores.events().handlerKeys().contains(name)) {
            throw HttpError.notFound("no event handler " + name);
          }
          changed =
              pause
                  ? stores.events().pauseHandler(name, reason)
                  : stores.events().resumeHandler(name);
          target = "handler " + name;
        }
        case "balancer" -> {
          if (stores.groups().stream().noneMatch(g -> g.group().equals(name))) {
            throw HttpError.notFound("no balancer group " + name);
          }
          changed =
              pause
                  ? stores.balancer().pauseGroup(name, reason)
                  : stores.balancer().resumeGroup(name);
          target = "group " + name;
        }
        default -> throw HttpError.badRequest("driver must be commands, events or balancer");
      }
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    if (!changed) {
      throw new HttpError(409, target + " was " + (pause ? "paused" : "not paused") + " already");
    }
    return new Done(
        pause ? "pauses.pause" : "pauses.resume",
        List.of(target),
        verb + (reason == null ? "" : ": " + reason),
        "/jobs?driver=" + driver);
  }

  private String handler(Request r) {
    String handler = r.required("handler", 200);
    if (!stores.events().handlerKeys().contains(handler)) {
      throw HttpError.notFound("no event handler " + handler);
    }
    return handler;
  }

  private static void confirmed(Request r, String handler) {
    String typed = r.optional("confirm", 200);
    if (typed == null || !typed.equals(handler)) {
      throw HttpError.badRequest("type the handler key " + handler + " to confirm");
    }
  }
}
