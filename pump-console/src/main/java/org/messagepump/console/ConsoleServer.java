package org.messagepump.console;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.messagepump.console.internal.Hosts;
import org.messagepump.core.PumpException;

/**
 * The console on its own embedded Jetty 12, serving one {@link ConsoleServlet} at {@code /}.
 *
 * <pre>{@code
 * try (ConsoleServer server = ConsoleServer.start(dataSource, ConsoleConfig.defaults(),
 *     ConsoleServer.DEFAULT_HOST, ConsoleServer.DEFAULT_PORT)) {
 *   System.out.println("console at " + server.uri());
 *   ...
 * }
 * }</pre>
 */
public final class ConsoleServer implements AutoCloseable {

  /** Default address: loopback only. */
  public static final String DEFAULT_HOST = "127.0.0.1";

  /** Default port. */
  public static final int DEFAULT_PORT = 8089;

  /** Most threads the server uses. */
  public static final int MAX_THREADS = 16;

  private final Server server;
  private final URI uri;

  private ConsoleServer(Server server, URI uri) {
    this.server = server;
    this.uri = uri;
  }

  /**
   * Starts the console on {@code host:port} (port 0: any free port).
   *
   * @throws IllegalArgumentException if the port is out of range, or the host is not a loopback
   *     address and the config has no access token (and does not allow remote clients without one)
   */
  public static ConsoleServer start(
      DataSource dataSource, ConsoleConfig config, String host, int port) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(config, "config");
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be between 0 and 65535: " + port);
    }
    if (host == null || host.isBlank()) {
      throw new IllegalArgumentException("host must not be blank");
    }
    InetAddress address;
    try {
      address = InetAddress.getByName(host);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("unknown host to bind to: " + host, e);
    }
    if (!address.isLoopbackAddress() && config.tokenless()) {
      throw new IllegalArgumentException(
          "binding to " + host + " (not loopback) requires an access token");
    }
    // The console also answers to the address it listens on (an address cannot be rebound).
    Collection<String> listening =
        address.isAnyLocalAddress()
            ? Hosts.localAddresses()
            : List.of(Hosts.normalize(address.getHostAddress()));
    QueuedThreadPool threads = new QueuedThreadPool(MAX_THREADS, 2);
    threads.setName("pump-console");
    threads.setDaemon(true);
    Server server = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
    connector.setHost(address.getHostAddress());
    connector.setPort(port);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    context.addServlet(
        new ServletHolder("pump-console", new ConsoleServlet(dataSource, config, listening)), "/*");
    server.setHandler(context);
    server.setErrorHandler(new SecureErrors());
    server.setStopTimeout(2_000);
    try {
      server.start();
    } catch (Exception e) {
      try {
        server.stop();
      } catch (Exception suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new PumpException(
          "could not start the console on " + host + ":" + port + ": " + e.getMessage(), e);
    }
    String h =
        address.getHostAddress().contains(":")
            ? "[" + address.getHostAddress() + "]"
            : address.getHostAddress();
    if (address.isAnyLocalAddress()) {
      h = "127.0.0.1";
    } else if (address.isLoopbackAddress() && h.startsWith("[")) {
      h = "[::1]";
    }
    return new ConsoleServer(
        server, URI.create("http://" + h + ":" + connector.getLocalPort() + "/"));
  }

  /**
   * The pages Jetty writes itself, for requests it refuses before the console sees them (a URI that
   * is not percent-encoded, a header too large): with the console's security headers.
   */
  private static final class SecureErrors extends ErrorHandler {
    SecureErrors() {
      setShowStacks(false);
      setShowMessageInTitle(false);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
      ConsoleServlet.SECURITY_HEADERS.forEach(response.getHeaders()::put);
      return super.handle(request, response, callback);
    }
  }

  /** Where the console answers (for a wildcard bind, its loopback address). */
  public URI uri() {
    return uri;
  }

  /** Stops the server (open requests get two seconds). */
  @Override
  public void close() {
    try {
      server.stop();
    } catch (Exception e) {
      throw new PumpException("could not stop the console: " + e.getMessage(), e);
    }
  }
}
