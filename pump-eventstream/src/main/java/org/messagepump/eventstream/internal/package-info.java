/**
 * Internal implementation of the eventstream driver: its SQL, row mapping and bookkeeping.
 *
 * <p><b>Unsupported.</b> Nothing here is API: it may change or disappear in any release, it is
 * excluded from the published Javadoc, and the architecture rules (pump-architecture) forbid any
 * other module to use it. Use the public types of {@code org.messagepump.eventstream}.
 */
package org.messagepump.eventstream.internal;
