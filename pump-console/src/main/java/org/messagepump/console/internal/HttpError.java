package org.messagepump.console.internal;

/** A request the console refuses: the status to answer and a message safe to show. */
public class HttpError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;

  public HttpError(int status, String message) {
    super(message);
    this.status = status;
  }

  public int status() {
    return status;
  }

  static HttpError badRequest(String message) {
    return new HttpError(400, message);
  }

  static HttpError notFound(String message) {
    return new HttpError(404, message);
  }
}
