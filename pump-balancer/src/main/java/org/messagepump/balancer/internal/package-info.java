/**
 * Internal implementation of the balancer driver: its SQL, row mapping and bookkeeping.
 *
 * <p><b>Unsupported.</b> Nothing here is API: it may change or disappear in any release, it is
 * excluded from the published Javadoc, and the architecture rules (pump-architecture) forbid any
 * other module to use it. Use the public types of {@code org.messagepump.balancer}.
 */
package org.messagepump.balancer.internal;
