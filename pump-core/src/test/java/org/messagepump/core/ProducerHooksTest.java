package org.messagepump.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProducerHooksTest {

  @Test
  void withoutAHookNothingHappensAndNothingIsAllocated() {
    assertThat(ProducerHooks.start(null, "commands", "t", 1, null)).isNull();
    assertThat(ProducerHooks.headers(null)).isSameAs(Map.of());
    ProducerHooks.sent(null, "id");
    ProducerHooks.failed(null, new RuntimeException());
  }

  @Test
  void theCallersHeadersWinOverTheInjectedOnes() {
    Map<String, String> explicit = Map.of("traceparent", "mine", "tenant", "acme");
    assertThat(ProducerHooks.merge(explicit, Map.of("traceparent", "hook", "tracestate", "s")))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("traceparent", "mine", "tenant", "acme", "tracestate", "s"));
    assertThat(ProducerHooks.merge(explicit, Map.of())).isSameAs(explicit);
    assertThatThrownBy(() -> ProducerHooks.merge(null, Map.of()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ProducerHooks.merge(Map.of(), null))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aHookIsToldTheWriteAndItsEnd() {
    List<String> calls = new ArrayList<>();
    ProducerHook hook =
        out -> {
          calls.add(out.driver() + " " + out.destination() + " " + out.messageCount());
          return new ProducerHook.Send() {
            @Override
            public Map<String, String> headers() {
              return Map.of("traceparent", "x");
            }

            @Override
            public void sent(String messageId) {
              calls.add("sent " + messageId);
            }

            @Override
            public void failed(Throwable failure) {
              calls.add("failed " + failure.getMessage());
            }
          };
        };
    ProducerHook.Send send = ProducerHooks.start(hook, "eventstream", "a.B", 2, null);
    assertThat(ProducerHooks.headers(send)).containsEntry("traceparent", "x");
    ProducerHooks.sent(send, null);
    ProducerHooks.failed(ProducerHooks.start(hook, "balancer", "g", 1, null), new Exception("no"));
    assertThat(calls)
        .containsExactly("eventstream a.B 2", "sent null", "balancer g 1", "failed no");
  }

  @Test
  void aFailingHookNeverFailsTheWrite() {
    ProducerHook throwing =
        out -> {
          throw new IllegalStateException("broken tracer");
        };
    assertThat(ProducerHooks.start(throwing, "commands", null, 3, null)).isNull();
    assertThat(ProducerHooks.start(out -> null, "commands", null, 3, null)).isNull();
    ProducerHook.Send broken =
        new ProducerHook.Send() {
          @Override
          public Map<String, String> headers() {
            throw new IllegalStateException("headers");
          }

          @Override
          public void sent(String messageId) {
            throw new IllegalStateException("sent");
          }

          @Override
          public void failed(Throwable failure) {
            throw new IllegalStateException("failed");
          }
        };
    assertThat(ProducerHooks.headers(broken)).isEmpty();
    ProducerHooks.sent(broken, "id");
    ProducerHooks.failed(broken, new RuntimeException());
  }

  @Test
  void anOutgoingWriteIsChecked() {
    assertThatThrownBy(() -> new ProducerHook.Outgoing(" ", "t", 1, null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new ProducerHook.Outgoing("commands", "t", 0, null))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theDestinationIsTheTypeAllMessagesShare() {
    assertThat(ProducerHooks.commonDestination(List.of("a", "a"))).isEqualTo("a");
    assertThat(ProducerHooks.commonDestination(List.of("a", "b"))).isNull();
  }
}
