package org.messagepump.console.internal;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The message an action leaves for the page it redirects to, kept on the server: the redirect
 * carries only a random id, good once and for the session that ran the action, so a link cannot
 * make the console show words of its own.
 */
public final class Flashes {

  static final int KEPT = 1_000;

  private final Map<String, String> messages =
      new LinkedHashMap<>(16, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
          return size() > KEPT;
        }
      };

  /** Keeps {@code message} for {@code session}; returns the id the redirect carries. */
  public synchronized String put(String session, String message) {
    String id = Signer.random(16);
    messages.put(session + ":" + id, message.length() > 300 ? message.substring(0, 300) : message);
    return id;
  }

  /** The message kept under {@code id} for {@code session}, once; null when none. */
  public synchronized String take(String session, String id) {
    if (id == null || !id.matches("[0-9a-f]{32}")) {
      return null;
    }
    return messages.remove(session + ":" + id);
  }
}
