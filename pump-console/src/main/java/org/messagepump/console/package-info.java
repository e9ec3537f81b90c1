/**
 * The web operations console: {@link org.messagepump.console.ConsoleServlet} (mount it in any
 * Jakarta Servlet 6 container), {@link org.messagepump.console.ConsoleConfig} (read-only, payload
 * visibility, access token, actor) and {@link org.messagepump.console.ConsoleServer} (the same
 * servlet on an embedded Jetty, loopback by default). See docs/console.md.
 */
package org.messagepump.console;
