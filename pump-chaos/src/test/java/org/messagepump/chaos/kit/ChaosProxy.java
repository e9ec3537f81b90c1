package org.messagepump.chaos.kit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A small in-process TCP proxy between pumps and PostgreSQL that can {@link #resetAll() reset}
 * every connection (RST to both sides) or {@link #blackhole(Duration) blackhole} them for a while:
 * bytes stop flowing and new connections hang, as when a network path drops packets, and flow again
 * afterwards (TCP would retransmit; nothing is corrupted). Point a pool's JDBC URL at {@link
 * #port()} on localhost.
 */
public final class ChaosProxy implements AutoCloseable {

  private final String targetHost;
  private final int targetPort;
  private final ServerSocket listener;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Object gate = new Object();
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong resets = new AtomicLong();
  private volatile long blackholedUntilNanos;
  private volatile boolean closed;

  private ChaosProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.listener = new ServerSocket();
    listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread t = new Thread(this::acceptLoop, "chaos-proxy-" + listener.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  /** Starts a proxy on a free local port forwarding to {@code targetHost:targetPort}. */
  public static ChaosProxy start(String targetHost, int targetPort) {
    try {
      return new ChaosProxy(targetHost, targetPort);
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot start the proxy", e);
    }
  }

  /** The local port clients connect to. */
  public int port() {
    return listener.getLocalPort();
  }

  /** {@code jdbcUrl} with its host and port replaced by this proxy's. */
  public String rewrite(String jdbcUrl) {
    return jdbcUrl.replaceFirst("//[^/]+/", "//127.0.0.1:" + port() + "/");
  }

  /** Connections accepted so far. */
  public long accepted() {
    return accepted.get();
  }

  /** Connections reset so far. */
  public long resets() {
    return resets.get();
  }

  /** Connections open now. */
  public int openConnections() {
    return sockets.size() / 2;
  }

  /** Resets every open connection: both sides get a TCP RST. Returns how many sockets closed. */
  public int resetAll() {
    int n = 0;
    for (Socket s : sockets) {
      try {
        s.setSoLinger(true, 0);
      } catch (IOException ignored) {
        // closing anyway
      }
      closeQuietly(s);
      n++;
    }
    resets.addAndGet(n / 2);
    return n / 2;
  }

  /** Stops every byte (and new connections) for {@code duration}, then lets them flow again. */
  public void blackhole(Duration duration) {
    blackholedUntilNanos = System.nanoTime() + duration.toNanos();
  }

  /** True while blackholed. */
  public boolean isBlackholed() {
    return System.nanoTime() - blackholedUntilNanos < 0;
  }

  /** Ends a blackhole now. */
  public void heal() {
    blackholedUntilNanos = System.nanoTime();
    synchronized (gate) {
      gate.notifyAll();
    }
  }

  private void awaitFlow() throws IOException {
    while (isBlackholed()) {
      if (closed) {
        throw new IOException("proxy closed");
      }
      try {
        synchronized (gate) {
          gate.wait(Math.max(1, (blackholedUntilNanos - System.nanoTime()) / 1_000_000));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      }
    }
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        if (closed) {
          return;
        }
        continue;
      }
      accepted.incrementAndGet();
      Thread t = new Thread(() -> connect(client), "chaos-proxy-connect");
      t.setDaemon(true);
      t.start();
    }
  }

  private void connect(Socket client) {
    sockets.add(client);
    Socket upstream = new Socket();
    try {
      awaitFlow();
      upstream.setTcpNoDelay(true);
      client.setTcpNoDelay(true);
      upstream.connect(new InetSocketAddress(targetHost, targetPort), 10_000);
      sockets.add(upstream);
      if (client.isClosed()) {
        closeQuietly(upstream);
        return;
      }
      pipe(client, upstream, "up");
      pipe(upstream, client, "down");
    } catch (IOException e) {
      closeQuietly(client);
      closeQuietly(upstream);
      sockets.remove(client);
    }
  }

  private void pipe(Socket from, Socket to, String direction) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[16 * 1024];
              try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                  awaitFlow();
                  out.write(buf, 0, n);
                  out.flush();
                }
              } catch (IOException e) {
                // reset, closed or broken: close both sides below
              } finally {
                closeQuietly(from);
                closeQuietly(to);
                sockets.remove(from);
                sockets.remove(to);
              }
            },
            "chaos-proxy-" + direction);
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  /** Stops accepting and closes every connection. */
  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // already closed
    }
    heal();
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
