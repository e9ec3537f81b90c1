package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.testkit.PostgresExtension;

/** The partitions of a group are its hottest keys, whatever their place in the rotation. */
@ExtendWith(PostgresExtension.class)
class ConsoleHotKeysIT {

  @Test
  void theHottestKeyIsShownFirstEvenWhenItJoinedTheRotationLast(DataSource ds) throws Exception {
    BalancerOperations.of(ds).migrate();
    MessageBalancer group = MessageBalancer.create(ds, "hot-keys");
    byte[] body = "m".getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < 250; i++) {
      group.storeMessage(String.format("cold-%03d", i), body);
    }
    for (int i = 0; i < 30; i++) {
      group.storeMessage("hot", body);
    }
    try (ConsoleServer console =
        ConsoleServer.start(ds, ConsoleConfig.builder().readOnly(true).build(), "127.0.0.1", 0)) {
      Http h = new Http(console.uri());
      String page = h.get("balancer?group=hot-keys").body();
      assertThat(page).contains("251 keys;");
      String partitions = page.substring(page.indexOf("<table id=\"partitions\""));
      int hot = partitions.indexOf(">hot</td><td class=\"num\">30<");
      assertThat(hot).isPositive().isLessThan(partitions.indexOf(">cold-"));

      // The next-page links walk every key once, most messages first.
      List<String> keys = new ArrayList<>();
      Pattern key = Pattern.compile("<tr><td class=\"key\">([^<]+)</td><td class=\"num\">");
      Pattern next = Pattern.compile("id=\"next-keys\" href=\"/([^\"]+)\"");
      while (true) {
        String table = page.substring(page.indexOf("<table id=\"partitions\""));
        Matcher m = key.matcher(table);
        while (m.find()) {
          keys.add(m.group(1));
        }
        Matcher n = next.matcher(page);
        if (!n.find()) {
          break;
        }
        page = h.get(n.group(1).replace("&amp;", "&")).body();
      }
      assertThat(keys).hasSize(251).doesNotHaveDuplicates().startsWith("hot", "cold-000");
      assertThat(keys.subList(1, 251)).isSorted();
    }
  }
}
