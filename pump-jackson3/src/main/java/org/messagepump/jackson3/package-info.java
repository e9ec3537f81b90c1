/**
 * The Jackson 3 codec: {@link org.messagepump.jackson3.Jackson3MessageCodec}, for applications
 * whose JSON mapper is Jackson 3 ({@code tools.jackson}). The Jackson 2 codec is pump-core's {@link
 * org.messagepump.core.JsonMessageCodec}.
 */
package org.messagepump.jackson3;
