package org.messagepump.console.internal;

/** Which page a GET path shows. */
public final class Pages {

  private Pages() {}

  /** Renders the page at {@code path}; throws a 404 {@link HttpError} for an unknown path. */
  public static String render(
      String path, Request r, Stores stores, Actions actions, Audit audit, Refusals refusals) {
    return switch (path) {
      case "" -> OverviewPage.render(r, stores);
      case "/commands" -> CommandsPage.render(r, stores, actions.retried());
      case "/events" -> EventsPage.render(r, stores);
      case "/balancer" -> BalancerPage.render(r, stores);
      case "/audit" -> AuditPage.render(r, audit, refusals);
      default -> throw HttpError.notFound("no page " + path);
    };
  }
}
