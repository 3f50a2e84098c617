// The CUPTI buffer pool: reuse, the memory cap, refusals and overflow buffers.
#include <gtest/gtest.h>

#include <cstdint>

#include "gpu/cupti_buffers.h"

namespace ptprof::detail {
namespace {

TEST(BufferPool, ReusesCompletedBuffers) {
  BufferPool pool(4096, 3 * 4096, /*may_refuse=*/true);
  EXPECT_EQ(pool.max_buffers(), 3u);
  uint8_t* a = nullptr;
  std::size_t size = 0;
  pool.request(&a, &size);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(size, 4096u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);  // CUPTI's alignment
  EXPECT_TRUE(pool.complete(a, 100));
  auto done = pool.take_completed();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].data, a);
  EXPECT_EQ(done[0].valid_size, 100u);
  EXPECT_FALSE(done[0].overflow);
  pool.recycle(a);
  uint8_t* b = nullptr;
  pool.request(&b, &size);
  EXPECT_EQ(b, a);  // no new allocation
  EXPECT_EQ(pool.allocated_buffers(), 1u);
  // An empty completion goes straight back to the free list.
  EXPECT_TRUE(pool.complete(b, 0));
  EXPECT_TRUE(pool.take_completed().empty());
  EXPECT_EQ(pool.free_buffers(), 1u);
}

TEST(BufferPool, RefusesAtTheCap) {
  BufferPool pool(1024, 2048, /*may_refuse=*/true);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  uint8_t* c = reinterpret_cast<uint8_t*>(1);
  std::size_t size = 0;
  pool.request(&a, &size);
  pool.request(&b, &size);
  pool.request(&c, &size);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(pool.take_refused(), 1u);
  EXPECT_EQ(pool.take_refused(), 0u);  // the count resets on read
  pool.complete(a, 8);
  pool.recycle_completed();  // a window opening discards what warmup collected
  pool.request(&c, &size);
  EXPECT_EQ(c, a);
}

TEST(BufferPool, OverflowBuffersWhereRefusalIsUnsafe) {
  BufferPool pool(1024, 1024, /*may_refuse=*/false);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  std::size_t size = 0;
  pool.request(&a, &size);
  pool.request(&b, &size);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.take_refused(), 0u);
  EXPECT_EQ(pool.allocated_buffers(), 1u);  // the overflow buffer is not pooled
  pool.complete(a, 16);
  pool.complete(b, 16);
  auto done = pool.take_completed();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_FALSE(done[0].overflow);
  EXPECT_TRUE(done[1].overflow);
  for (const auto& d : done) pool.recycle(d.data);
  EXPECT_EQ(pool.free_buffers(), 1u);  // the overflow one was freed
}

TEST(BufferPool, LeavesForeignBuffersAlone) {
  BufferPool pool(1024, 4096, true);
  alignas(8) uint8_t foreign[64];
  EXPECT_FALSE(pool.complete(foreign, 10));
  EXPECT_TRUE(pool.take_completed().empty());
}

TEST(BufferPool, TrimFreesIdleBuffers) {
  BufferPool pool(1024, 4096, true);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  std::size_t size = 0;
  pool.request(&a, &size);
  pool.request(&b, &size);
  pool.complete(a, 0);
  pool.trim();
  EXPECT_EQ(pool.allocated_buffers(), 1u);  // b is still out
  EXPECT_EQ(pool.free_buffers(), 0u);
  EXPECT_TRUE(pool.complete(b, 10));
}

TEST(BufferPool, SizesAreRoundedForAlignment) {
  BufferPool pool(1030, 1 << 20, true);
  EXPECT_EQ(pool.buffer_size(), 1032u);
}

}  // namespace
}  // namespace ptprof::detail
