package org.messagepump.console;

import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.console.internal.Hosts;
import org.messagepump.console.internal.MeterReadings;
import org.messagepump.console.internal.MicrometerReadings;
import org.messagepump.console.internal.Settings;
import org.messagepump.eventstream.EventStore;

/**
 * What the console may do and show. Immutable; made by {@link #builder()} or {@link #defaults()}.
 *
 * <pre>{@code
 * ConsoleConfig config = ConsoleConfig.builder()
 *     .operator("alice", System.getenv("ALICE_TOKEN"))
 *     .operator("bob", System.getenv("BOB_TOKEN"))
 *     .allowedHosts("pump-console.example.com")
 *     .tlsInFront(true)
 *     .build();
 * }</pre>
 *
 * <p>Without tokens, an identity header or {@link Builder#remoteWithoutToken(boolean)} the console
 * is <em>tokenless</em>: it serves direct loopback clients only (the server listens on loopback and
 * no proxy header is present), all named {@link Builder#actorName(String) actorName}.
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

  /** Default: a login by token lasts 12 hours (the cookie's and the server's limit). */
  public static final Duration DEFAULT_LOGIN_TTL = Duration.ofHours(12);

  /** Default: audit entries are kept for 400 days. */
  public static final Duration DEFAULT_AUDIT_RETENTION = Duration.ofDays(400);

  /** Default: one sample of the figures serves every page for 1.5 s. */
  public static final Duration DEFAULT_SAMPLE_INTERVAL = Duration.ofMillis(1_500);

  /** Shortest configured secret: 32 characters. */
  public static final int MIN_SECRET_LENGTH = 32;

  private static final Pattern HEADER = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}");

  /** What the console's request handling reads; the rest of this class is what only it needs. */
  private final Settings settings;

  private final String accessToken;
  private final String secret;
  private final Duration sampleInterval;
  private final Function<HttpServletRequest, String> actor;
  private final String commandsSchema;
  private final String eventsSchema;
  private final String balancerSchema;

  private ConsoleConfig(Builder b) {
    this.accessToken = b.accessToken;
    Map<String, String> ops = new LinkedHashMap<>(b.operators);
    if (b.accessToken != null) {
      ops.putIfAbsent(b.actorName, b.accessToken);
    }
    this.secret = b.secret;
    this.sampleInterval = b.sampleInterval;
    this.actor = b.actor;
    this.commandsSchema = b.commandsSchema;
    this.eventsSchema = b.eventsSchema;
    this.balancerSchema = b.balancerSchema;
    this.settings =
        new Settings(
            b.readOnly,
            b.showPayloads,
            b.title,
            b.meterReadings,
            this::actorOf,
            b.actorName,
            Map.copyOf(ops),
            b.identityHeader,
            List.copyOf(b.trustedProxies),
            b.remoteWithoutToken,
            List.copyOf(b.allowedHosts),
            b.tlsInFront,
            b.secret == null ? null : b.secret.getBytes(StandardCharsets.UTF_8),
            b.loginTtl,
            b.auditSchema,
            b.auditRetention);
  }

  /** What the console's request handling reads. */
  Settings settings() {
    return settings;
  }

  /** Defaults: actions allowed, payloads hidden, no token (so direct loopback clients only). */
  public static ConsoleConfig defaults() {
    return builder().build();
  }

  /** A builder with the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** True when the console only shows and refuses every action. */
  public boolean readOnly() {
    return settings.readOnly();
  }

  /** True when dead letters show a preview of their payload. */
  public boolean showPayloads() {
    return settings.showPayloads();
  }

  /** The token of {@link Builder#accessToken(String)}, or {@code null}. */
  public String accessToken() {
    return accessToken;
  }

  /** Every operator's name and token (the access token under the actor name among them). */
  public Map<String, String> operators() {
    return settings.operators();
  }

  /** The header a trusted proxy names the operator in, or {@code null}. */
  public String identityHeader() {
    return settings.identityHeader();
  }

  /** The addresses or CIDR blocks the identity header is believed from. */
  public List<String> trustedProxies() {
    return settings.trustedProxies();
  }

  /** Host names (besides loopback names and addresses) requests may address the console by. */
  public List<String> allowedHosts() {
    return settings.allowedHosts();
  }

  /** True when browsers reach the console over TLS: cookies are Secure and {@code __Host-}. */
  public boolean tlsInFront() {
    return settings.tlsInFront();
  }

  /** The configured secret for CSRF tokens and login cookies, or {@code null} (random). */
  public String secret() {
    return secret;
  }

  /** How long a login by token lasts. */
  public Duration loginTtl() {
    return settings.loginTtl();
  }

  /** The schema of the audit table ({@link ConsoleAudit}). */
  public String auditSchema() {
    return settings.auditSchema();
  }

  /** How long audit entries are kept. */
  public Duration auditRetention() {
    return settings.auditRetention();
  }

  /**
   * How long one sample of the figures serves every page and API client before the next one is read
   * (see {@link Builder#sampleInterval}).
   */
  public Duration sampleInterval() {
    return sampleInterval;
  }

  /**
   * True when nobody is identified (no token, no identity header, no application security): the
   * console then serves direct loopback clients only.
   */
  public boolean tokenless() {
    return settings.operators().isEmpty()
        && settings.identityHeader() == null
        && !settings.remoteWithoutToken();
  }

  /**
   * True when requests from other hosts are served without a token because the application's own
   * security guards the console's path.
   */
  public boolean remoteWithoutToken() {
    return settings.remoteWithoutToken();
  }

  /** The title on every page. */
  public String title() {
    return settings.title();
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
    return settings.meters() == null ? null : ((MicrometerReadings) settings.meters()).registry();
  }

  /** The pumps' meters as the console reads them; null without a registry. */
  MeterReadings meterReadings() {
    return settings.meters();
  }

  /** The name of a request without an authenticated user (and of the access token's holder). */
  public String actorName() {
    return settings.actorName();
  }

  /** Who made a request, as the audit log names them. */
  public String actorOf(HttpServletRequest request) {
    String who = actor == null ? null : actor.apply(request);
    if (who == null || who.isBlank()) {
      who = request.getRemoteUser();
    }
    return who == null || who.isBlank() ? settings.actorName() : who;
  }

  /** Builds a {@link ConsoleConfig}; setters reject bad values with IllegalArgumentException. */
  public static final class Builder {
    private boolean readOnly = DEFAULT_READ_ONLY;
    private boolean showPayloads = DEFAULT_SHOW_PAYLOADS;
    private String accessToken;
    private final Map<String, String> operators = new LinkedHashMap<>();
    private String identityHeader;
    private final List<String> trustedProxies = new ArrayList<>();
    private final List<String> allowedHosts = new ArrayList<>();
    private boolean tlsInFront;
    private String secret;
    private Duration loginTtl = DEFAULT_LOGIN_TTL;
    private String auditSchema = ConsoleAudit.DEFAULT_SCHEMA;
    private Duration auditRetention = DEFAULT_AUDIT_RETENTION;
    private Duration sampleInterval = DEFAULT_SAMPLE_INTERVAL;
    private boolean remoteWithoutToken;
    private String actorName = DEFAULT_ACTOR;
    private Function<HttpServletRequest, String> actor;
    private MeterReadings meterReadings;
    private String title = "messagepump console";
    private String commandsSchema = CommandQueue.DEFAULT_SCHEMA;
    private String eventsSchema = EventStore.DEFAULT_SCHEMA;
    private String balancerSchema = BalancerOperations.DEFAULT_SCHEMA;

    private Builder() {}

    /**
     * The schemas of the command queue, the event store and the balancer the console shows
     * (default: the drivers' own, {@value CommandQueue#DEFAULT_SCHEMA}, {@value
     * EventStore#DEFAULT_SCHEMA} and {@value BalancerOperations#DEFAULT_SCHEMA}). Each driver
     * checks its name when the console is built ({@code ConsoleServlet}'s constructor), with an
     * {@link IllegalArgumentException} that names the rule.
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
     * ?token=} which sets an HttpOnly login cookie that expires after {@link #loginTtl}); its
     * holder is named {@link #actorName}. Null or blank: no such token. Several operators: {@link
     * #operator}.
     */
    public Builder accessToken(String accessToken) {
      if (accessToken != null && !accessToken.isBlank()) {
        this.accessToken = token("accessToken", accessToken);
      } else {
        this.accessToken = null;
      }
      return this;
    }

    /**
     * An operator and their own token: requests carrying it are audited under {@code name}. Names:
     * 1 to 100 characters, no control characters; tokens as {@link #accessToken}, all distinct.
     */
    public Builder operator(String name, String token) {
      if (name == null
          || name.isEmpty()
          || name.length() > 100
          || !name.equals(name.strip())
          || name.chars().anyMatch(c -> Character.isISOControl(c) || c == 0x2028 || c == 0x2029)) {
        throw new IllegalArgumentException(
            "an operator name must have 1 to 100 characters, no control characters and no"
                + " surrounding spaces");
      }
      if (operators.containsKey(name)) {
        throw new IllegalArgumentException("operator " + name + " is configured twice");
      }
      operators.put(name, token("the token of operator " + name, token));
      return this;
    }

    /**
     * Believe {@code header} (e.g. {@code X-Forwarded-User}) as the operator's name on requests
     * that come straight from one of {@code trustedProxies} (IP addresses or CIDR blocks, such as
     * {@code 10.0.0.0/8}): the proxy authenticates operators. Requests from elsewhere need a token
     * (or are refused when none is configured). The proxy must drop that header from what clients
     * send.
     */
    public Builder identityHeader(String header, String... trustedProxies) {
      if (header == null || !HEADER.matcher(header).matches()) {
        throw new IllegalArgumentException("identityHeader must be an HTTP header name");
      }
      if (trustedProxies == null || trustedProxies.length == 0) {
        throw new IllegalArgumentException(
            "identityHeader needs the addresses of the proxies that send it");
      }
      for (String p : trustedProxies) {
        if (p == null || !p.trim().matches("[0-9A-Fa-f:.]{2,45}(/\\d{1,3})?")) {
          throw new IllegalArgumentException(
              "a trusted proxy must be an IP address or a CIDR block such as 10.0.0.0/8: " + p);
        }
      }
      this.identityHeader = header;
      this.trustedProxies.clear();
      this.trustedProxies.addAll(List.of(trustedProxies));
      return this;
    }

    /**
     * Host names (or addresses) a request may address the console by, besides loopback names and
     * addresses and the address {@code ConsoleServer} listens on: the names a proxy or the
     * application is reached by. A request for any other host is answered 421, which defeats DNS
     * rebinding.
     */
    public Builder allowedHosts(String... hosts) {
      for (String h : hosts) {
        allowedHosts.add(Hosts.normalize(h));
      }
      return this;
    }

    /**
     * Browsers reach the console over TLS (a TLS-terminating proxy in front): cookies are sent
     * {@code Secure} with the {@code __Host-} prefix (bound to this host, path {@code /}). Requests
     * the container already sees as secure get them too.
     */
    public Builder tlsInFront(boolean tlsInFront) {
      this.tlsInFront = tlsInFront;
      return this;
    }

    /**
     * The secret that signs CSRF tokens and login cookies (at least {@value #MIN_SECRET_LENGTH}
     * characters): set the same one on every instance behind a load balancer. Default: random per
     * process (a restart logs everyone out).
     */
    public Builder secret(String secret) {
      if (secret != null && secret.getBytes(StandardCharsets.UTF_8).length < MIN_SECRET_LENGTH) {
        throw new IllegalArgumentException(
            "secret must have at least " + MIN_SECRET_LENGTH + " characters");
      }
      this.secret = secret;
      return this;
    }

    /** How long a login by token lasts (default 12 hours; 1 minute to 30 days). */
    public Builder loginTtl(Duration loginTtl) {
      if (loginTtl == null
          || loginTtl.compareTo(Duration.ofMinutes(1)) < 0
          || loginTtl.compareTo(Duration.ofDays(30)) > 0) {
        throw new IllegalArgumentException("loginTtl must be between 1 minute and 30 days");
      }
      this.loginTtl = loginTtl;
      return this;
    }

    /**
     * The schema of the audit table (default {@value ConsoleAudit#DEFAULT_SCHEMA}; create it with
     * {@link ConsoleAudit#migrate(javax.sql.DataSource, String)}).
     */
    public Builder auditSchema(String schema) {
      this.auditSchema = ConsoleAudit.checkSchema(schema);
      return this;
    }

    /**
     * How long audit entries are kept (default 400 days, at least one day): older ones are deleted,
     * at most once an hour, by any console on the table.
     */
    public Builder auditRetention(Duration retention) {
      if (retention == null || retention.compareTo(Duration.ofDays(1)) < 0) {
        throw new IllegalArgumentException("auditRetention must be at least one day");
      }
      this.auditRetention = retention;
      return this;
    }

    /**
     * How long one sample of the figures (queue depth, every handler's lag, every group's figures,
     * the live charts' points) serves every open page and API client before the next read of the
     * database (default 1.5 s, between 100 ms and 10 minutes). Samples are read only while someone
     * asks, one round at a time.
     */
    public Builder sampleInterval(Duration interval) {
      if (interval == null
          || interval.compareTo(Duration.ofMillis(100)) < 0
          || interval.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("sampleInterval must be between 100 ms and 10 minutes");
      }
      this.sampleInterval = interval;
      return this;
    }

    private static String token(String what, String token) {
      if (token == null || token.length() < MIN_TOKEN_LENGTH) {
        throw new IllegalArgumentException(
            what + " must have at least " + MIN_TOKEN_LENGTH + " characters");
      }
      if (!token.chars().allMatch(c -> c > 32 && c < 127)) {
        throw new IllegalArgumentException(what + " must be printable ASCII without spaces");
      }
      return token;
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
      this.meterReadings = MicrometerReadings.of(meterRegistry);
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

    /**
     * The config.
     *
     * @throws IllegalStateException when two operators share a token, or the access token's holder
     *     ({@link #actorName}) is also configured as an operator with another token
     */
    public ConsoleConfig build() {
      Map<String, String> all = new LinkedHashMap<>(operators);
      if (accessToken != null) {
        String other = all.putIfAbsent(actorName, accessToken);
        if (other != null && !other.equals(accessToken)) {
          throw new IllegalStateException(
              "operator " + actorName + " has a token and a different accessToken");
        }
      }
      if (all.values().stream().distinct().count() < all.size()) {
        throw new IllegalStateException("two operators share one token");
      }
      return new ConsoleConfig(this);
    }
  }
}
