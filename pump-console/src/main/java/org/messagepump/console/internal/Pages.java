package org.messagepump.console.internal;

/** Which page a GET path shows. */
public final class Pages {

  private Pages() {}

  /** Renders the page at {@code path}; throws a 404 {@link HttpError} for an unknown path. */
  public static String render(
      String path,
      Request r,
      Stores stores,
      Sampler sampler,
      Actions actions,
      Audit audit,
      Refusals refusals) {
    return switch (path) {
      case "" -> OverviewPage.render(r, sampler.current());
      case "/commands" -> CommandsPage.render(r, stores, sampler.current(), actions.retried());
      case "/events" -> EventsPage.render(r, stores, sampler.current());
      case "/balancer" -> BalancerPage.render(r, stores, sampler.current());
      case "/jobs" -> JobsPage.render(r, stores, sampler.current());
      case "/jobs/command" -> JobsPage.command(r, stores);
      case "/jobs/preview" -> JobsPage.preview(r, stores);
      case "/audit" -> AuditPage.render(r, audit, refusals);
      default -> throw HttpError.notFound("no page " + path);
    };
  }
}
