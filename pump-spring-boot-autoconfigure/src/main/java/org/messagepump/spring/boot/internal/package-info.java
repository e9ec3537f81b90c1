/**
 * The auto-configuration's machinery: binding a delivery's transaction to Spring, the pumps'
 * lifecycle, their health indicator and the startup migrations. Not API: free to change.
 */
package org.messagepump.spring.boot.internal;
