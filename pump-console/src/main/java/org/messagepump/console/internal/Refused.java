package org.messagepump.console.internal;

/**
 * A request the guard refuses before anyone is identified (foreign host, another origin, no or a
 * wrong token, a missing or forged CSRF token): counted and logged rate-limited as {@code
 * anonymous}, never written to the audit trail.
 */
public final class Refused extends HttpError {
  private static final long serialVersionUID = 1L;

  public Refused(int status, String message) {
    super(status, message);
  }
}
