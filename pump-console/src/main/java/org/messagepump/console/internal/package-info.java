/**
 * The console's engine: page rendering, the guards (token, CSRF, loopback, read-only), actions, the
 * audit log and the chart samples. Not API: free to change.
 */
package org.messagepump.console.internal;
