// The flight recorder's rings (src/recording/flight/rings.h): the last events of each thread,
// oldest overwritten; the stack of open ops a dump shows; ops whose end never came; stacks
// deeper than kept; rings handed from exited threads to new ones; the collectives' log; and
// sixteen threads writing while a dumper copies their rings, live and as a crash handler's raw
// write would (every record read is one writer's whole record, never a mix).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "recording/flight/collectives.h"
#include "recording/flight/crash.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "recording/flight/snapshot.h"
#include "trace/flight_dump.h"

namespace ptprof {
namespace {

namespace fl = detail::flight;
using fl::Record;

constexpr uint32_t kCapacity = 1024;

// Every test of the suite shares the process's rings, sized once.
class FlightRings : public ::testing::Test {
 protected:
  void SetUp() override {
    fl::RingConfig c;
    c.capacity = kCapacity;
    c.max_threads = 64;
    ASSERT_TRUE(fl::Rings::get().configure(c));
  }
  static fl::ThreadRing* ring() { return fl::Rings::get().this_thread(0); }
  static detail::FlightDumpThread snapshot(const fl::ThreadRing* r) {
    detail::FlightDumpThread t;
    r->snapshot(&t, true);
    return t;
  }
};

TEST_F(FlightRings, KeepsTheLastEventsOldestFirst) {
  fl::ThreadRing* r = ring();
  ASSERT_NE(r, nullptr);
  const auto before = snapshot(r).header.written;
  for (int i = 0; i < 3000; ++i) {
    r->push(1, fl::kNoName, i, 0, 0, 1000000 + i, 10 * i);
    r->pop(10 * i + 5);
  }
  const auto t = snapshot(r);
  EXPECT_EQ(t.header.written, before + 3000);
  ASSERT_EQ(t.records.size(), kCapacity);
  // The last kCapacity, in order, each whole with its own fields.
  for (uint32_t k = 0; k < kCapacity; ++k) {
    const Record& rec = t.records[k];
    const int64_t i = 3000 - kCapacity + k;
    EXPECT_EQ(static_cast<int64_t>(rec.w[fl::kAux]), i);
    EXPECT_EQ(rec.w[fl::kCorrelation], static_cast<uint64_t>(1000000 + i));
    EXPECT_EQ(rec.w[fl::kEnd], static_cast<uint64_t>(10 * i + 5));
  }
  EXPECT_EQ(t.header.stack_depth, 0u);
}

TEST_F(FlightRings, TheOpenStackSaysWhatTheThreadIsInside) {
  fl::ThreadRing* r = ring();
  r->push(10, fl::kNoName, -1, fl::kUserScope, 0, 1, 100);
  r->push(11, fl::kNoName, -1, fl::kUserScope, 0, 2, 200);
  r->push(12, 7, 41, 0, fl::kCollective, 3, 300);
  auto t = snapshot(r);
  ASSERT_EQ(t.open.size(), 3u);
  EXPECT_EQ(fl::name_of(t.open[0]), 10u);
  EXPECT_EQ(fl::name_of(t.open[2]), 12u);
  EXPECT_EQ(fl::group_of(t.open[2]), 7u);
  EXPECT_EQ(static_cast<int64_t>(t.open[2].w[fl::kAux]), 41);
  EXPECT_EQ(t.open[2].w[fl::kStart], 300u);
  EXPECT_EQ(fl::depth_of(t.open[2]), 2u);
  EXPECT_EQ(fl::tid_of(t.open[0]), static_cast<uint32_t>(t.header.os_tid));
  r->pop(350);
  t = snapshot(r);
  EXPECT_EQ(t.open.size(), 2u);
  EXPECT_EQ(fl::name_of(t.records.back()), 12u);
  EXPECT_EQ(t.records.back().w[fl::kEnd], 350u);
  r->pop_to(0, 400);  // leaves nothing open
  EXPECT_EQ(r->depth(), 0u);
}

TEST_F(FlightRings, OpsWhoseEndNeverCameGoToTheRingUnfinished) {
  fl::ThreadRing* r = ring();
  r->push(20, fl::kNoName, -1, 0, 0, 1, 100);
  r->push(21, fl::kNoName, -1, 0, fl::kAsync, 2, 200);  // ended on another thread
  r->push(22, fl::kNoName, -1, 0, 0, 3, 300);
  r->pop_to(0, 500);  // the outermost ends: the two above it were abandoned
  const auto t = snapshot(r);
  ASSERT_GE(t.records.size(), 3u);
  const Record* last = &t.records[t.records.size() - 3];
  EXPECT_EQ(fl::name_of(last[0]), 22u);
  EXPECT_NE(fl::flags_of(last[0]) & fl::kAbandoned, 0);
  EXPECT_EQ(fl::name_of(last[1]), 21u);
  EXPECT_NE(fl::flags_of(last[1]) & fl::kAbandoned, 0);
  EXPECT_NE(fl::flags_of(last[1]) & fl::kAsync, 0);
  EXPECT_EQ(fl::name_of(last[2]), 20u);
  EXPECT_EQ(fl::flags_of(last[2]) & fl::kAbandoned, 0);
  EXPECT_EQ(last[2].w[fl::kEnd], 500u);
}

TEST_F(FlightRings, OpsDeeperThanTheStackAreCountedNotKept) {
  fl::ThreadRing* r = ring();
  const uint32_t n = fl::ThreadRing::kStackCapacity + 2;
  for (uint32_t i = 0; i < n; ++i) r->push(30, fl::kNoName, i, 0, 0, i, i);
  auto t = snapshot(r);
  EXPECT_EQ(t.header.stack_depth, n);
  EXPECT_EQ(t.open.size(), fl::ThreadRing::kStackCapacity);
  const uint64_t written = t.header.written;
  for (uint32_t i = 0; i < n; ++i) r->pop(1000);
  t = snapshot(r);
  EXPECT_EQ(t.header.written - written, fl::ThreadRing::kStackCapacity);
  EXPECT_EQ(t.header.dropped, 2u);
}

TEST_F(FlightRings, AnExitedThreadsRingGoesToANewThreadWhenNoneIsFree) {
  // More threads than rings, one after the other: each records one op and exits.
  for (int i = 0; i < 70; ++i) {
    std::thread([i] {
      pthread_setname_np(pthread_self(), ("flight_t" + std::to_string(i)).c_str());
      fl::ThreadRing* r = fl::Rings::get().this_thread(0);
      ASSERT_NE(r, nullptr) << "thread " << i;
      r->push(40, fl::kNoName, i, 0, 0, i, i);
      r->pop(i + 1);
    }).join();
  }
  const fl::Rings& pool = fl::Rings::get();
  EXPECT_EQ(pool.count(), 64u);
  EXPECT_EQ(pool.threads_without_ring(), 0u);
  // The last thread's ring holds its one record only, not the exited owner's before it.
  bool found = false;
  for (uint32_t i = 0; i < pool.count(); ++i) {
    const auto t = snapshot(pool.at(i));
    if (t.name != "flight_t69") continue;
    found = true;
    EXPECT_NE(t.header.flags & fl::kThreadExited, 0u);
    ASSERT_EQ(t.records.size(), 1u);
    EXPECT_EQ(static_cast<int64_t>(t.records[0].w[fl::kAux]), 69);
    EXPECT_GT(t.header.first, 0u);  // a reused ring
  }
  EXPECT_TRUE(found);
}

TEST_F(FlightRings, TheCollectivesLogKeepsTheLastOnesAndWhenTheyReturned) {
  fl::CollectiveLog& log = fl::Rings::get().collectives();
  uint64_t words[fl::kWords] = {};
  uint64_t first = 0;
  for (int i = 0; i < 300; ++i) {
    words[fl::kStart] = static_cast<uint64_t>(i);
    words[fl::kAux] = static_cast<uint64_t>(i);
    const uint64_t n = log.enter(words);
    if (i == 0) first = n;
    if (i % 2 == 0) log.done(n, 1000 + i);
  }
  log.done(first, 5);  // long overwritten: nothing happens
  std::vector<Record> slots;
  log.copy(&slots);
  uint64_t torn = 0;
  const auto in_order = detail::records_in_order(slots, &torn);
  EXPECT_EQ(torn, 0u);
  ASSERT_EQ(in_order.size(), fl::CollectiveLog::kCapacity);
  EXPECT_EQ(static_cast<int64_t>(in_order.back().w[fl::kAux]), 299);
  EXPECT_EQ(in_order.back().w[fl::kEnd], 0u);
  EXPECT_EQ(in_order[in_order.size() - 2].w[fl::kEnd], 1298u);
}

TEST_F(FlightRings, ACollectiveEntersTheLogWithItsGroupAndSequenceNumber) {
  auto intern = [](std::string_view n) { return fl::FlightNames::get().append(n); };
  auto last = [] {
    std::vector<Record> slots;
    fl::Rings::get().collectives().copy(&slots);
    uint64_t torn = 0;
    return detail::records_in_order(slots, &torn).back();
  };
  // Its own group's number, where the op's arguments were read.
  CollectiveInfo info;
  info.seq = 41;
  info.pg_name = "7";
  fl::CollectiveMark m = fl::enter_collective("c10d::allreduce_", 3, &info, intern, 99, 1000, 5, 0);
  EXPECT_EQ(m.seq, 41);
  Record r = last();
  EXPECT_EQ(static_cast<int64_t>(r.w[fl::kAux]), 41);
  EXPECT_EQ(fl::FlightNames::get().ends()[fl::group_of(r)] -
                (fl::group_of(r) == 0 ? 0 : fl::FlightNames::get().ends()[fl::group_of(r) - 1]),
            1u);  // "7"
  EXPECT_EQ(r.w[fl::kEnd], 0u);
  fl::leave_collective(m, 2000);
  EXPECT_EQ(last().w[fl::kEnd], 2000u);
  // No group registered in this process: ptprof's count, said so.
  const fl::CollectiveMark a = fl::enter_collective("c10d::broadcast_", 4, nullptr, intern, 1, 0, 5, 0);
  const fl::CollectiveMark b = fl::enter_collective("c10d::allreduce_", 3, nullptr, intern, 2, 0, 5, 0);
  EXPECT_EQ(b.seq, a.seq + 1);
  EXPECT_NE(b.flags & fl::kSeqIsCount, 0);
  EXPECT_EQ(b.group, fl::kNoName);
  // A backend's own op: a collective, with no number of its own.
  EXPECT_TRUE(fl::is_flight_collective("gloo:all_reduce"));
  EXPECT_FALSE(fl::is_flight_collective("aten::add"));
  const fl::CollectiveMark g =
      fl::enter_collective("gloo:all_reduce", 6, nullptr, intern, 3, 0, 5, fl::kUserScope);
  EXPECT_EQ(g.seq, -1);
  EXPECT_EQ(fl::flags_of(last()), fl::kCollective);
}

// What each writer thread records: checkable field by field, so a record made of two
// writes shows.
void check_record(const Record& r) {
  const uint64_t seq = r.w[fl::kAux];
  const uint32_t thread = static_cast<uint32_t>(r.w[fl::kCorrelation] >> 32);
  ASSERT_EQ(r.w[fl::kCorrelation] & 0xFFFFFFFFu, seq & 0xFFFFFFFFu);
  ASSERT_EQ(r.w[fl::kStart], seq * 2);
  ASSERT_EQ(fl::name_of(r), 100 + thread);
  if (r.w[fl::kEnd] != 0) ASSERT_EQ(r.w[fl::kEnd], seq * 2 + 1);
}

TEST_F(FlightRings, SixteenThreadsWriteWhileADumperCopiesTheirRings) {
  constexpr int kWriters = 16;
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      pthread_setname_np(pthread_self(), ("flight_w" + std::to_string(w)).c_str());
      fl::ThreadRing* r = fl::Rings::get().this_thread(0);
      ASSERT_NE(r, nullptr);
      ++ready;
      for (uint64_t seq = 0; !stop.load(std::memory_order_relaxed); ++seq) {
        const uint64_t corr = (uint64_t{static_cast<uint32_t>(w)} << 32) | (seq & 0xFFFFFFFFu);
        const auto start = static_cast<int64_t>(seq * 2);
        r->push(100 + w, fl::kNoName, static_cast<int64_t>(seq), 0, 0, corr, start);
        r->push(100 + w, fl::kNoName, static_cast<int64_t>(seq), 0, 0, corr, start);
        r->pop(start + 1);
        r->pop(start + 1);
      }
    });
  }
  while (ready.load() < kWriters) std::this_thread::yield();
  // The dumper: live snapshots, and the crash handler's raw write into a file read back.
  const int fd = memfd_create("flight_raw", 0);
  ASSERT_GE(fd, 0);
  uint64_t records = 0;
  for (int round = 0; round < 3; ++round) {
    detail::FlightDump id;
    const detail::FlightDump d = fl::take_snapshot(id, /*rings=*/true);
    detail::FlightDump raw;
#if !defined(__SANITIZE_THREAD__)
    // Not under ThreadSanitizer: the kernel's copy for write(2) is no atomic read, and its
    // interceptor reports it as a plain one racing the writers.
    fl::FileHeader h{};
    ASSERT_EQ(ftruncate(fd, 0), 0);
    ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
    ASSERT_TRUE(fl::write_raw_dump(fd, &h));
    raw = detail::read_flight_dump("/proc/self/fd/" + std::to_string(fd), true);
#endif
    for (const detail::FlightDump* dump : {&d, static_cast<const detail::FlightDump*>(&raw)}) {
      for (const auto& t : dump->threads) {
        if (t.name.rfind("flight_w", 0) != 0) continue;
        for (const Record& r : t.open) check_record(r);
        for (const Record& r : t.records) check_record(r);
        // Consecutive: the ring's records are numbered without a gap but for torn ones.
        for (std::size_t k = 1; k < t.records.size(); ++k)
          ASSERT_GT(t.records[k].w[fl::kBegin], t.records[k - 1].w[fl::kBegin]);
        records += t.records.size();
      }
    }
  }
  close(fd);
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_GT(records, 0u);
}

}  // namespace
}  // namespace ptprof
