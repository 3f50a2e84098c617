// Stress: 16 threads running ops and ranges while the main thread steps a schedule that
// turns recording on and off. Recorded windows hold no torn events, nesting stays exact per
// thread, every saved file parses, and where the threads are synchronized with the steps the
// counts are exact.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "reliability_util.h"

namespace ptprof {
namespace {

constexpr int kThreads = 16;

// std::barrier is C++20.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t gen = gen_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int waiting_ = 0;
  int64_t gen_ = 0;
};

std::string range_name(int t) {
  return "worker " + std::to_string(t);
}

// Checks one finished window in the handler (on whatever thread runs handlers) and keeps
// only the findings, so that no trace copies pile up.
struct Findings {
  std::mutex mu;
  int windows = 0;
  std::vector<std::string> problems;
  void add(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu);
    if (problems.size() < 20) problems.push_back(p);
  }
};

// Per worker thread: every recorded aten::add_ sits in that thread's range, each finished
// range holds exactly its one add, and an add without a recorded range is one whose range
// began before the window (so it comes before every range of its thread). A trace read back
// from its file no longer tells ranges still open at the window's end (`know_finished`).
void check_worker_nesting(const Trace& t, bool know_finished, Findings* f) {
  for (const std::string& p : reliability::structural_problems(t))
    f->add("window " + std::to_string(t.window_index) + ": " + p);
  std::map<int64_t, int64_t> first_range_start;  // tid -> start of its first range
  std::map<int64_t, int> children;               // event index -> add_ children
  for (const Event& e : t.events) {
    if (e.kind != EventKind::UserAnnotation || e.name.substr(0, 7) != "worker ") continue;
    auto [it, inserted] = first_range_start.emplace(e.tid, e.start_ns);
    if (!inserted) it->second = std::min(it->second, e.start_ns);
  }
  for (const Event& e : t.events) {
    if (e.name != "aten::add_") continue;
    if (e.parent < 0) {
      auto it = first_range_start.find(e.tid);
      if (it != first_range_start.end() && e.start_ns > it->second)
        f->add("an aten::add_ outside any range after the first range of its thread, at " +
               std::to_string(e.start_ns - t.window_start_ns) + " ns into a window of " +
               std::to_string(t.window_end_ns - t.window_start_ns) + " ns, lasting " +
               std::to_string(e.duration_ns) + " ns");
      continue;
    }
    const Event& p = t.events[e.parent];
    if (p.kind != EventKind::UserAnnotation || p.name.substr(0, 7) != "worker ")
      f->add("aten::add_ nested in " + std::string(p.name));
    ++children[e.parent];
  }
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind != EventKind::UserAnnotation || e.name.substr(0, 7) != "worker ") continue;
    const int n = children[static_cast<int64_t>(i)];
    // A range still open when the window closed may have lost its add to the next window.
    // (Read back, times are exact to about 1 ns: see
    // Parsers.ReaderKeepsNanosecondsWhereDoublesAreCoarse.)
    const bool open_at_end =
        !e.finished || (!know_finished && e.start_ns + e.duration_ns >= t.window_end_ns - 2);
    if (open_at_end ? n > 1 : n != 1)
      f->add(std::string(e.name) + (e.finished ? " (finished)" : " (unfinished)") + " holds " +
             std::to_string(n) + " adds, at " + std::to_string(e.start_ns - t.window_start_ns) +
             " ns into the window");
  }
}

TEST(Stress, SixteenThreadsWhileRecordingTogglesKeepEventsWhole) {
  // wait=1, warmup=1, active=2: recording goes off, on for warmup (discarded), on, saved.
  constexpr int kSteps = reliability::scaled(200) / 4 * 4;  // whole windows
  test::TempDir dir;
  Findings findings;
  Options o;
  o.schedule = Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/2, /*repeat=*/0};
  o.on_trace_ready = {tensorboard_trace_handler(dir.path(), "stress"),
                      callback_handler([&](const Trace& t) {
                        check_worker_nesting(t, /*know_finished=*/true, &findings);
                        std::lock_guard<std::mutex> lock(findings.mu);
                        ++findings.windows;
                      })};
  std::atomic<bool> done{false};
  std::vector<int64_t> ops(kThreads, 0);
  Status st;
  {
    ProfileSession s(o);
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        auto x = torch::zeros({1});
        auto one = torch::ones({1});
        const std::string name = range_name(t);
        int64_t n = 0;
        while (!done.load(std::memory_order_relaxed)) {
          // Bursts, then a pause: 16 threads on few cores still interleave at random points,
          // and the windows stay small enough to write quickly.
          for (int i = 0; i < 64; ++i) {
            Range r(name);
            x.add_(one);
            ++n;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        ops[t] = n;
        if (x.item<float>() != static_cast<float>(n)) ADD_FAILURE() << "lost adds on " << name;
      });
    }
    for (int i = 0; i < kSteps; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      s.step();
    }
    done = true;
    for (auto& w : workers) w.join();
    st = s.stop();
  }
  EXPECT_TRUE(st.ok()) << st.message();
  int64_t total = 0;
  for (int64_t n : ops) total += n;
  std::printf("[stress] %lld ops on %d threads over %d steps\n", static_cast<long long>(total),
              kThreads, kSteps);
  for (int64_t n : ops) EXPECT_GT(n, 0);
  // One window per 4 steps, the last (steps 198, 199 recording) saved at the 200th step().
  EXPECT_EQ(findings.windows, kSteps / 4);
  for (const std::string& p : findings.problems) ADD_FAILURE() << p;

  std::vector<std::string> bad;
  const auto traces = reliability::read_traces(dir.path(), &bad);
  EXPECT_TRUE(bad.empty()) << bad.front();
  EXPECT_EQ(traces.size(), static_cast<std::size_t>(kSteps / 4));
  EXPECT_TRUE(reliability::list_dir(dir.path()).hidden.empty());
  Findings from_files;
  for (const Trace& t : traces) check_worker_nesting(t, /*know_finished=*/false, &from_files);
  for (const std::string& p : from_files.problems) ADD_FAILURE() << "read back: " << p;
}

TEST(Stress, SixteenThreadsInLockstepWithTheStepsCountExactly) {
  // Every step, each thread runs kIters ranges of one add, then all meet at a barrier with
  // the main thread, which steps while nobody runs ops: each window's contents are known.
  constexpr int kSteps = 40;
  constexpr int kIters = 100;
  constexpr int kActive = 2;
  std::vector<std::shared_ptr<Trace>> traces;
  std::mutex traces_mu;
  Options o;
  o.schedule = Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/kActive, /*repeat=*/0};
  o.on_trace_ready = {callback_handler([&](const Trace& t) {
    std::lock_guard<std::mutex> lock(traces_mu);
    traces.push_back(std::make_shared<Trace>(t));
  })};
  Barrier work_done(kThreads + 1), step_done(kThreads + 1);
  Status st;
  {
    ProfileSession s(o);
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        auto x = torch::zeros({1});
        auto one = torch::ones({1});
        const std::string name = range_name(t);
        for (int step = 0; step < kSteps; ++step) {
          for (int i = 0; i < kIters; ++i) {
            Range r(name);
            x.add_(one);
          }
          work_done.arrive_and_wait();
          step_done.arrive_and_wait();
        }
      });
    }
    for (int step = 0; step < kSteps; ++step) {
      work_done.arrive_and_wait();
      s.step();
      step_done.arrive_and_wait();
    }
    for (auto& w : workers) w.join();
    st = s.stop();
  }
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(traces.size(), static_cast<std::size_t>(kSteps / 4));
  for (const auto& tp : traces) {
    const Trace& t = *tp;
    SCOPED_TRACE("window " + std::to_string(t.window_index));
    EXPECT_EQ(t.steps.size(), static_cast<std::size_t>(kActive));
    EXPECT_EQ(t.dropped_events, 0u);
    for (const std::string& p : reliability::structural_problems(t)) ADD_FAILURE() << p;
    std::map<std::string, int> ranges;
    std::map<int64_t, int> adds_per_tid;
    std::map<int64_t, std::string> range_of_tid;
    for (const Event& e : t.events) {
      EXPECT_TRUE(e.finished) << e.name;
      if (e.name == "aten::add_") {
        ++adds_per_tid[e.tid];
        ASSERT_GE(e.parent, 0);
        const Event& p = t.events[e.parent];
        EXPECT_EQ(p.kind, EventKind::UserAnnotation);
        EXPECT_EQ(p.tid, e.tid);
        EXPECT_EQ(p.name.substr(0, 7), "worker ");
      } else if (e.kind == EventKind::UserAnnotation && e.name.substr(0, 7) == "worker ") {
        ++ranges[std::string(e.name)];
        auto [it, inserted] = range_of_tid.emplace(e.tid, std::string(e.name));
        if (!inserted) EXPECT_EQ(it->second, e.name) << "two workers' ranges on one thread";
      }
    }
    ASSERT_EQ(ranges.size(), static_cast<std::size_t>(kThreads));
    for (int w = 0; w < kThreads; ++w) EXPECT_EQ(ranges[range_name(w)], kActive * kIters);
    ASSERT_EQ(adds_per_tid.size(), static_cast<std::size_t>(kThreads));
    for (auto& [tid, n] : adds_per_tid) EXPECT_EQ(n, kActive * kIters) << "tid " << tid;
    EXPECT_EQ(reliability::profiler_steps(t), t.steps);
    // Exactly the workers' ranges and adds and the window's ProfilerStep ranges.
    EXPECT_EQ(t.events.size(), static_cast<std::size_t>(2 * kThreads * kActive * kIters + kActive));
  }
}

}  // namespace
}  // namespace ptprof
