package org.messagepump.examples.orders;

import org.messagepump.commands.EnqueueResult;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /orders}: accepted for processing (the command is queued). */
@RestController
class OrderController {

  private final Orders orders;

  OrderController(Orders orders) {
    this.orders = orders;
  }

  @PostMapping("/orders")
  @ResponseStatus(HttpStatus.ACCEPTED)
  String place(@RequestBody PlaceOrder order) {
    EnqueueResult r = orders.place(order);
    return r.messageId().toString();
  }
}
