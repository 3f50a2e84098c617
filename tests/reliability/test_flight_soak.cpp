// Soak of the flight recorder: four threads record what an hour of training steps would (500-op
// steps at 10 steps a second: 18 million ops, a fifth under sanitizers) with dumps along the
// way. Its memory is fixed once each ring has filled: RSS stays flat after that.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "ptprof/flight_recorder.h"
#include "recording/flight/flight_recorder.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "reliability_util.h"
#include "trace/clock.h"

namespace ptprof {
namespace {

using reliability::kMiB;
using reliability::rss_bytes;
namespace fl = detail::flight;

TEST(FlightSoak, RingMemoryIsFlatOverAnHourOfSteps) {
  constexpr int kThreads = 4;
  constexpr int kOpsPerStep = 500;
  constexpr int kSteps = reliability::scaled(36000) / kThreads;  // per thread
  test::TempDir dir;
  FlightRecorderOptions o;
  o.enabled = true;
  o.dir = dir.path();
  o.crash_dumps = false;
  fl::Identity id;
  id.worker = "soak";
  fl::FlightRecorder::get().start(o, id);
  const uint32_t capacity = fl::Rings::get().config().capacity;
  // Warm-up: every ring full twice over, one dump (its allocations reach their size).
  const int warmup_steps = static_cast<int>(2 * capacity / kOpsPerStep) + 1;
  ASSERT_LT(warmup_steps * 2, kSteps);
  const uint32_t step_name = fl::FlightNames::get().append("ProfilerStep");
  const uint32_t op_names[3] = {fl::FlightNames::get().append("aten::conv2d"),
                                fl::FlightNames::get().append("aten::relu"),
                                fl::FlightNames::get().append("aten::add_")};
  std::atomic<int> warmed{0};
  std::atomic<int> finished{0};
  std::atomic<bool> go_on{false};
  auto train = [&](int from, int to) {
    fl::ThreadRing* r = fl::Rings::get().this_thread(0);
    for (int s = from; s < to; ++s) {
      r->push(step_name, fl::kNoName, s, fl::kUserScope, 0, 0, detail::now_ticks());
      for (int i = 0; i < kOpsPerStep; ++i) {
        r->push(op_names[i % 3], fl::kNoName, -1, 0, 0, i, detail::now_ticks());
        r->pop(detail::now_ticks());
      }
      r->pop(detail::now_ticks());
      fl::FlightRecorder::on_step(s);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      train(0, warmup_steps);
      ++warmed;
      while (!go_on.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      train(warmup_steps, kSteps);
      ++finished;
    });
  }
  while (warmed.load() < kThreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_FALSE(flight_dump("soak warm-up").empty());
  const int64_t baseline = rss_bytes();
  go_on = true;
  // RSS every 25 ms while they train, and two more dumps along the way.
  std::vector<int64_t> rss;
  int dumps = 1;
  while (finished.load() < kThreads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    rss.push_back(rss_bytes());
    if ((rss.size() == 10 || rss.size() == 30) && dumps < 3) {
      EXPECT_FALSE(flight_dump("soak").empty());
      ++dumps;
    }
  }
  for (auto& th : threads) th.join();
  rss.push_back(rss_bytes());
  fl::FlightRecorder::get().stop();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t max_after = baseline;
  for (int64_t v : rss) max_after = std::max(max_after, v);
  std::printf(
      "[flight soak] %d threads x %d steps x %d ops (%.0f M ops) in %.1f s, %d dumps; RSS "
      "after warm-up %.1f MiB, max after %.1f MiB (+%.2f MiB), at the end %.1f MiB\n",
      kThreads, kSteps, kOpsPerStep, double(kThreads) * kSteps * kOpsPerStep / 1e6, secs,
      dumps, baseline / double(kMiB), max_after / double(kMiB),
      (max_after - baseline) / double(kMiB), rss.back() / double(kMiB));
  if (!reliability::kSanitized) EXPECT_LE(max_after - baseline, 1 * kMiB);
}

}  // namespace
}  // namespace ptprof
