/** Internals of pump-resilience4j: per-key guard state. Not API. */
package org.messagepump.resilience4j.internal;
