/**
 * Internal to the command queue: its tables, SQL and stored-headers format. Not supported for use
 * outside this module; any type or member here may change or disappear in any release, without
 * notice. Excluded from the published Javadoc. Use {@link org.messagepump.commands} instead.
 *
 * <p>This package never depends on {@code org.messagepump.commands}: the public package uses it,
 * not the other way round.
 */
package org.messagepump.commands.internal;
