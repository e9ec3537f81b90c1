/**
 * The values the balancer's operations return: what became of a lease operation ({@link
 * org.messagepump.balancer.model.LeaseResult}) and the figures of a key ({@link
 * org.messagepump.balancer.model.PartitionStats}) or group ({@link
 * org.messagepump.balancer.model.GroupStats}). A leaf package: it depends on nothing else of the
 * balancer.
 */
package org.messagepump.balancer.model;
