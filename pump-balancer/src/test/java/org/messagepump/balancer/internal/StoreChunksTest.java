package org.messagepump.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class StoreChunksTest {

  private static List<byte[]> contents(int n, int bytes) {
    return new ArrayList<>(Collections.nCopies(n, new byte[bytes]));
  }

  @Test
  void aChunkEndsAtTheMessageCountOrTheContentBytesWhicheverComesFirst() {
    assertThat(StoreQueries.chunkEnd(contents(2_500, 10), 0)).isEqualTo(StoreQueries.INSERT_CHUNK);
    assertThat(StoreQueries.chunkEnd(contents(2_500, 10), 2_000)).isEqualTo(2_500);
    int big = (int) (StoreQueries.INSERT_CHUNK_BYTES / 4);
    assertThat(StoreQueries.chunkEnd(contents(10, big), 0)).isEqualTo(4);
    assertThat(StoreQueries.chunkEnd(contents(10, big + 1), 0)).isEqualTo(3);
    assertThat(StoreQueries.chunkEnd(contents(10, big), 8)).isEqualTo(10);
  }

  @Test
  void aMessageLargerThanTheByteBoundIsAChunkOfItsOwn() {
    List<byte[]> contents = contents(3, 8);
    contents.set(1, new byte[(int) StoreQueries.INSERT_CHUNK_BYTES + 1]);
    assertThat(StoreQueries.chunkEnd(contents, 0)).isEqualTo(1);
    assertThat(StoreQueries.chunkEnd(contents, 1)).isEqualTo(2);
    assertThat(StoreQueries.chunkEnd(contents, 2)).isEqualTo(3);
  }
}
