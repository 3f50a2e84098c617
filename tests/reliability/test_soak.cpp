// Soak: 10,000 steps with every step its own saved window (repeat = 0), each written by
// tensorboard_trace_handler. Memory stays flat and no window is lost or written partially.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "reliability_util.h"

namespace ptprof {
namespace {

using reliability::kMiB;
using reliability::rss_bytes;

TEST(Soak, TenThousandWindowsKeepRssFlatAndEveryFileValid) {
  // 2,000 in sanitizer builds: there the point is memory errors over many windows, and 10,000
  // would take a minute.
  constexpr int kSteps = reliability::scaled(10000);
  constexpr int kSampleEvery = kSteps / 40;
  // RSS once the first windows have warmed up allocator arenas, ptprof's spare chunks, the
  // name tables and the writer thread.
  constexpr int kWarmupSteps = kSteps / 10;
  // Allowed growth after warmup. Every window is alike, so in steady state each one reuses
  // what the last one freed. ProfilerStep#N names are not interned (each would stay in the
  // name table forever: session 1 measured +2 MiB over 9,000 windows from them), so nothing
  // grows per window; 1 MiB still catches a leak of ~110 bytes per window.
  constexpr int64_t kFlatBound = 1 * kMiB;

  test::TempDir dir;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/0};
  o.on_trace_ready = {tensorboard_trace_handler(dir.path(), "soak")};
  auto x = torch::zeros({4});
  auto one = torch::ones({4});
  std::vector<int64_t> rss;  // one sample every kSampleEvery steps
  int64_t baseline = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Status st;
  {
    ProfileSession s(o);
    for (int i = 0; i < kSteps; ++i) {
      x.add_(one);  // two tensor-tensor in-place adds: one aten::add_ event each
      x.add_(one);
      s.step();
      if ((i + 1) % kSampleEvery == 0) rss.push_back(rss_bytes());
      if (i + 1 == kWarmupSteps) baseline = rss.back();
    }
    st = s.stop();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_FLOAT_EQ(x[0].item<float>(), 2.0f * kSteps);

  // The RSS curve after warmup: its highest point above the baseline.
  int64_t max_after = baseline;
  for (std::size_t k = kWarmupSteps / kSampleEvery; k < rss.size(); ++k)
    max_after = std::max(max_after, rss[k]);
  std::printf(
      "[soak] %d steps in %.1f s; RSS at step %d: %.1f MiB, max after: %.1f MiB "
      "(+%.2f MiB), at the end: %.1f MiB\n",
      kSteps, secs, kWarmupSteps, baseline / double(kMiB), max_after / double(kMiB),
      (max_after - baseline) / double(kMiB), rss.back() / double(kMiB));
  if (!reliability::kSanitized) EXPECT_LE(max_after - baseline, kFlatBound);

  // Steps 0..kSteps-1 are windows of their own; stop() saves the window of step kSteps, which
  // holds just its ProfilerStep range.
  const auto listing = reliability::list_dir(dir.path());
  EXPECT_TRUE(listing.hidden.empty()) << listing.hidden.size() << " leftover temporaries";
  ASSERT_EQ(listing.visible.size(), static_cast<std::size_t>(kSteps + 1));
  std::set<int64_t> steps_seen;
  int bad = 0;
  for (const std::string& path : listing.visible) {
    Trace t;
    try {
      t = detail::parse_trace(detail::read_trace_file(path), path);
    } catch (const std::exception& e) {
      if (++bad < 5) ADD_FAILURE() << e.what();
      continue;
    }
    const auto steps = reliability::profiler_steps(t);
    ASSERT_EQ(steps.size(), 1u) << path;
    steps_seen.insert(steps[0]);
    const int adds = test::count_events(t, "aten::add_");
    const int want = steps[0] == kSteps ? 0 : 2;
    if (adds != want || t.events.size() != static_cast<std::size_t>(want + 1)) {
      if (++bad < 5)
        ADD_FAILURE() << path << ": " << adds << " aten::add_ of " << t.events.size()
                      << " events, want " << want << " of " << want + 1;
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(steps_seen.size(), static_cast<std::size_t>(kSteps + 1));
  EXPECT_EQ(*steps_seen.begin(), 0);
  EXPECT_EQ(*steps_seen.rbegin(), kSteps);
}

}  // namespace
}  // namespace ptprof
