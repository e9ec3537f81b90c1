package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BalancedHandlersTest {

  @Test
  void holdsTheOneHandler() {
    BalancedHandler handler = (m, ctx) -> Result.ok();
    assertThat(BalancedHandlers.builder().on(handler).build().handler()).isSameAs(handler);
  }

  @Test
  void refusesNoHandlerASecondOneAndNull() {
    assertThatThrownBy(() -> BalancedHandlers.builder().build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no handler");
    BalancedHandler handler = (m, ctx) -> Result.ok();
    assertThatThrownBy(() -> BalancedHandlers.builder().on(handler).on(handler).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("duplicate");
    assertThatThrownBy(() -> BalancedHandlers.builder().on(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handler");
  }
}
