package org.messagepump.console;

import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Objects;
import java.util.function.Function;
import org.messagepump.balancer.Balancer;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;

/**
 * What the console may do and show. Immutable; made by {@link #builder()} or {@link #defaults()}.
 *
 * <pre>{@code
 * ConsoleConfig config = ConsoleConfig.builder()
 *     .accessToken(System.getenv("PUMP_CONSOLE_TOKEN"))
 *     .readOnly(false)
 *     .showPayloads(false)
 *     .actor(request -> request.getRemoteUser())
 *     .build();
 * }</pre>
 */
public final class ConsoleConfig {

  /** Shortest access token accepted: 16 characters. */
  public static final int MIN_TOKEN_LENGTH = 16;

  /** Default: actions are allowed (the console is not read-only). */
  public static final boolean DEFAULT_READ_ONLY = false;

  /** Default: payloads stay hidden, because they may hold personal data. */
  public static final boolean DEFAULT_SHOW_PAYLOADS = false;

  /** Default actor name when the request carries no authenticated user. */
  public static final String DEFAULT_ACTOR = "console";

  private final boolean readOnly;
  private final boolean showPayloads;
  private final String accessToken;
  private final boolean remoteWithoutToken;
  private final String actorName;
  private final Function<HttpServletRequest, String> actor;
  private final MeterRegistry meterRegistry;
  private final String title;
  private final String commandsSchema;
  private final String eventsSchema;
  private final String balancerSchema;

  private ConsoleConfig(Builder b) {
    this.readOnly = b.readOnly;
    this.showPayloads = b.showPayloads;
    this.accessToken = b.accessToken;
    this.remoteWithoutToken = b.remoteWithoutToken;
    this.actorName = b.actorName;
    this.actor = b.actor;
    this.meterRegistry = b.meterRegistry;
    this.title = b.title;
    this.commandsSchema = b.commandsSchema;
    this.eventsSchema = b.eventsSchema;
    this.balancerSchema = b.balancerSchema;
  }

  /** Defaults: actions allowed, payloads hidden, no token (so loopback only). */
  public static ConsoleConfig defaults() {
    return builder().build();
  }

  /** A builder with the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** True when the console only shows and refuses every action. */
  public boolean readOnly() {
    return readOnly;
  }

  /** True when dead letters show a preview of their payload. */
  public boolean showPayloads() {
    return showPayloads;
  }

  /** The access token, or {@code null} when none is required (loopback clients only then). */
  public String accessToken() {
    return accessToken;
  }

  /**
   * True when requests from other hosts are served without a token because the application's own
   * security guards the console's path.
   */
  public boolean remoteWithoutToken() {
    return remoteWithoutToken;
  }

  /** The title on every page. */
  public String title() {
    return title;
  }

  /** The command queue's schema. */
  public String commandsSchema() {
    return commandsSchema;
  }

  /** The event store's schema. */
  public String eventsSchema() {
    return eventsSchema;
  }

  /** The balancer's schema. */
  public String balancerSchema() {
    return balancerSchema;
  }

  /** The optional registry the pumps record into; gives handled/s per pump. May be null. */
  public MeterRegistry meterRegistry() {
    return meterRegistry;
  }

  /** Who made a request, as the audit log names them. */
  public String actorOf(HttpServletRequest request) {
    String who = actor == null ? null : actor.apply(request);
    if (who == null || who.isBlank()) {
      who = request.getRemoteUser();
    }
    return who == null || who.isBlank() ? actorName : who;
  }

  /** Builds a {@link ConsoleConfig}; setters reject bad values with IllegalArgumentException. */
  public static final class Builder {
    private boolean readOnly = DEFAULT_READ_ONLY;
    private boolean showPayloads = DEFAULT_SHOW_PAYLOADS;
    private String accessToken;
    private boolean remoteWithoutToken;
    private String actorName = DEFAULT_ACTOR;
    private Function<HttpServletRequest, String> actor;
    private MeterRegistry meterRegistry;
    private String title = "messagepump console";
    private String commandsSchema = CommandQueue.DEFAULT_SCHEMA;
    private String eventsSchema = EventStore.DEFAULT_SCHEMA;
    private String balancerSchema = Balancer.DEFAULT_SCHEMA;

    private Builder() {}

    /**
     * The schemas of the command queue, the event store and the balancer the console shows
     * (default: the drivers' own, {@value CommandQueue#DEFAULT_SCHEMA}, {@value
     * EventStore#DEFAULT_SCHEMA} and {@value Balancer#DEFAULT_SCHEMA}). Each driver checks its name
     * when the console is built ({@code ConsoleServlet}'s constructor), with an {@link
     * IllegalArgumentException} that names the rule.
     */
    public Builder schemas(String commands, String events, String balancer) {
      this.commandsSchema = Objects.requireNonNull(commands, "commands schema");
      this.eventsSchema = Objects.requireNonNull(events, "events schema");
      this.balancerSchema = Objects.requireNonNull(balancer, "balancer schema");
      return this;
    }

    /** Show only; every action is refused (403) and no action button is drawn. */
    public Builder readOnly(boolean readOnly) {
      this.readOnly = readOnly;
      return this;
    }

    /** Show a payload preview on dead letters (off by default: payloads may hold personal data). */
    public Builder showPayloads(boolean showPayloads) {
      this.showPayloads = showPayloads;
      return this;
    }

    /**
     * Require this token on every request (as {@code Authorization: Bearer}, or once as {@code
     * ?token=} which sets an HttpOnly cookie). Null or blank: no token, loopback clients only.
     */
    public Builder accessToken(String accessToken) {
      if (accessToken != null && !accessToken.isBlank()) {
        if (accessToken.length() < MIN_TOKEN_LENGTH) {
          throw new IllegalArgumentException(
              "accessToken must have at least " + MIN_TOKEN_LENGTH + " characters");
        }
        if (!accessToken.chars().allMatch(c -> c > 32 && c < 127)) {
          throw new IllegalArgumentException("accessToken must be printable ASCII without spaces");
        }
        this.accessToken = accessToken;
      } else {
        this.accessToken = null;
      }
      return this;
    }

    /**
     * Serve clients on other hosts without a token. Only for an application whose own security
     * (Spring Security, a reverse proxy with login) guards the console's path.
     */
    public Builder remoteWithoutToken(boolean remoteWithoutToken) {
      this.remoteWithoutToken = remoteWithoutToken;
      return this;
    }

    /** The name the audit log gives a request without an authenticated user. */
    public Builder actorName(String actorName) {
      if (actorName == null || actorName.isBlank() || actorName.length() > 100) {
        throw new IllegalArgumentException("actorName must have 1 to 100 characters");
      }
      this.actorName = actorName;
      return this;
    }

    /**
     * How to name who made a request (e.g. the application's principal); null or blank answers fall
     * back to {@code getRemoteUser()}, then the actor name.
     */
    public Builder actor(Function<HttpServletRequest, String> actor) {
      this.actor = Objects.requireNonNull(actor, "actor");
      return this;
    }

    /** The registry the pumps record into, for handled/s, failures and parks per pump. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meterRegistry = meterRegistry;
      return this;
    }

    /** The title on every page. */
    public Builder title(String title) {
      if (title == null || title.isBlank() || title.length() > 100) {
        throw new IllegalArgumentException("title must have 1 to 100 characters");
      }
      this.title = title;
      return this;
    }

    /** The config. */
    public ConsoleConfig build() {
      return new ConsoleConfig(this);
    }
  }
}
