// CUDA memory snapshots from a session (issue 28 section 5), with the caching allocator's calls
// faked (recording/cuda_allocator_api.h): when the history is turned on and off, which
// snapshot is written where (beside each trace, into the options' dir, at an OOM), and what is
// said when it cannot be had. The real calls are compiled and linked into the library where
// libtorch has CUDA; scripts/gpu-check runs them on a GPU.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ptprof/error.h"
#include "ptprof/memory_snapshot.h"
#include "ptprof/session.h"
#include "ptprof/trace_handler.h"
#include "recording/cuda_memory_history.h"
#include "recording/on_demand.h"
#include "test_support.h"

namespace ptprof {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> files_ending(const test::TempDir& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const std::string& f : dir.files())
    if (ends_with(f, suffix)) out.push_back(f);
  return out;
}

// What the fake allocator was asked, and what it answers.
struct FakeAllocator {
  std::string unavailable;           // its unavailable_reason()
  std::vector<bool> history;         // record_history's `enabled`, in order
  std::size_t max_entries = 0;
  bool cpp_stacks = false;
  int snapshots = 0;
  detail::OomObserverFn observer = nullptr;
  std::string pickle;                // what snapshot_pickle() returns
};
FakeAllocator g_fake;

class FakeApi final : public detail::CudaAllocatorApi {
 public:
  std::string unavailable_reason() override { return g_fake.unavailable; }
  detail::Status record_history(bool enabled, std::size_t max_entries, bool cpp_stacks) override {
    g_fake.history.push_back(enabled);
    g_fake.max_entries = max_entries;
    g_fake.cpp_stacks = cpp_stacks;
    return detail::ok_status();
  }
  detail::StatusOr<std::string> snapshot_pickle() override {
    ++g_fake.snapshots;
    return g_fake.pickle;
  }
  detail::Status attach_oom_observer(detail::OomObserverFn fn) override {
    g_fake.observer = fn;
    return detail::ok_status();
  }
};

class CudaMemoryHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = FakeAllocator();
    // A real snapshot's bytes, so that what is written can be read back as one.
    g_fake.pickle = read_all(std::string(PTPROF_SOURCE_DIR) +
                             "/tests/core/trace/fixtures/memory_snapshot/snapshot_p4.pickle");
    detail::set_cuda_allocator_api_factory([]() -> std::unique_ptr<detail::CudaAllocatorApi> {
      return std::make_unique<FakeApi>();
    });
  }
  void TearDown() override { detail::set_cuda_allocator_api_factory(nullptr); }

  Options options(const test::TempDir& dir) {
    Options o;
    o.schedule = Schedule{/*wait=*/0, /*warmup=*/1, /*active=*/1, /*repeat=*/2};
    o.on_trace_ready = {tensorboard_trace_handler(dir.path())};
    o.write_in_background = false;
    o.log = [this](LogLevel, const std::string& m) { log.push_back(m); };
    return o;
  }
  bool logged(const std::string& text) const {
    for (const std::string& m : log)
      if (m.find(text) != std::string::npos) return true;
    return false;
  }
  std::vector<std::string> log;
};

TEST_F(CudaMemoryHistoryTest, SessionRecordsHistoryAndWritesASnapshotBesideEachTrace) {
  test::TempDir dir;
  Options o = options(dir);
  o.cuda_memory_history.enabled = true;
  o.cuda_memory_history.max_entries = 5000;
  {
    ProfileSession s(o);
    EXPECT_EQ(g_fake.history, std::vector<bool>{true});  // from the start, for the session
    for (int i = 0; i < 5; ++i) s.step();
    EXPECT_TRUE(s.stop().ok()) << s.stop().message();
  }
  EXPECT_EQ(g_fake.history, (std::vector<bool>{true, false}));  // off at stop()
  EXPECT_EQ(g_fake.max_entries, 5000u);
  EXPECT_TRUE(g_fake.cpp_stacks);
  const auto traces = files_ending(dir, ".pt.trace.json");
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(g_fake.snapshots, 2);
  for (const std::string& t : traces) {
    const std::string snap = memory_snapshot_path_for_trace(t);
    ASSERT_EQ(read_all(snap), g_fake.pickle) << snap;
    EXPECT_EQ(MemorySnapshot::load(snap).segments.size(), 3u);
  }
  EXPECT_TRUE(files_ending(dir, ".tmp").empty());  // written through a temporary, renamed
}

TEST_F(CudaMemoryHistoryTest, OnDemandWindowRecordsHistoryForItselfOnly) {
  test::TempDir dir;
  Options o = options(dir);
  o.on_trace_ready.clear();
  o.on_demand_only = true;
  o.trigger_file = dir.path() + "/trigger";
  o.trigger_check_interval_ms = 0;
  {
    std::ofstream f(o.trigger_file);
    f << "STEPS=1\nWARMUP=1\nCUDA_MEMORY=1\nOUTPUT=" << dir.path() << "/od\n";
  }
  ProfileSession s(o);
  // The request is seen at construction, and its warmup starts at step 0: history on for it.
  EXPECT_EQ(g_fake.history, std::vector<bool>{true});
  std::vector<std::size_t> calls_after_step;
  for (int i = 0; i < 5; ++i) {
    s.step();
    calls_after_step.push_back(g_fake.history.size());
  }
  s.stop();
  EXPECT_EQ(g_fake.history, (std::vector<bool>{true, false}));
  // Off when the window closed (after its one active step), not at stop().
  EXPECT_EQ(calls_after_step.front(), 1u);
  EXPECT_EQ(calls_after_step[2], 2u);
  std::vector<std::string> snaps;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/od"))
    if (ends_with(entry.path().string(), ".memory_snapshot.pickle")) snaps.push_back(entry.path());
  EXPECT_EQ(snaps.size(), 1u);
}

TEST_F(CudaMemoryHistoryTest, OomWritesASnapshotIntoTheLastTracesDirectoryAtMostMaxTimes) {
  test::TempDir dir;
  Options o = options(dir);
  o.cuda_memory_history.enabled = true;
  o.cuda_memory_history.max_oom_dumps = 2;
  ProfileSession s(o);
  ASSERT_NE(g_fake.observer, nullptr);
  for (int i = 0; i < 3; ++i) s.step();  // the first window is written
  ASSERT_EQ(files_ending(dir, ".pt.trace.json").size(), 1u);
  for (int i = 0; i < 3; ++i) g_fake.observer(0, 100 << 20, 80ull << 30, 1 << 20);
  const auto ooms = files_ending(dir, ".oom.memory_snapshot.pickle");
  ASSERT_EQ(ooms.size(), 2u);
  EXPECT_EQ(read_all(ooms[0]), g_fake.pickle);
  EXPECT_TRUE(logged("CUDA out of memory on device 0 (104857600 bytes allocated, 1048576 free): "
                     "its memory snapshot is " + ooms[0]) ||
              logged("its memory snapshot is " + ooms[1]));
  const Status st = s.stop();
  EXPECT_TRUE(st.has(StatusCode::kResourceExhausted));
  g_fake.observer(0, 1, 2, 3);  // after stop(): the session is gone, nothing is written
  EXPECT_EQ(files_ending(dir, ".oom.memory_snapshot.pickle").size(), 2u);
}

TEST_F(CudaMemoryHistoryTest, WithoutTraceFilesTheSnapshotsGoToTheOptionsDir) {
  test::TempDir dir;
  Options o = options(dir);
  o.on_trace_ready = {callback_handler([](const Trace&) {})};
  o.cuda_memory_history.enabled = true;
  o.cuda_memory_history.dir = dir.path() + "/snapshots";
  ProfileSession s(o);
  for (int i = 0; i < 3; ++i) s.step();
  s.stop();
  // One per window, named by the worker and the time.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(o.cuda_memory_history.dir),
                          std::filesystem::directory_iterator()),
            2);
}

TEST_F(CudaMemoryHistoryTest, UnavailableIsOneWarningAndTheTracesAsBefore) {
  g_fake.unavailable = "no CUDA device is visible";
  test::TempDir dir;
  Options o = options(dir);
  o.cuda_memory_history.enabled = true;
  ProfileSession s(o);
  for (int i = 0; i < 5; ++i) s.step();
  const Status st = s.stop();
  EXPECT_TRUE(st.ok());
  ASSERT_EQ(st.warnings.size(), 1u) << st.message();
  EXPECT_EQ(st.warning_codes[0], StatusCode::kUnavailable);
  EXPECT_EQ(st.warnings[0],
            "CUDA memory snapshots requested but not available: no CUDA device is visible; the "
            "traces are written without them");
  EXPECT_TRUE(g_fake.history.empty());
  EXPECT_EQ(files_ending(dir, ".pt.trace.json").size(), 2u);
  EXPECT_TRUE(files_ending(dir, ".pickle").empty());
}

TEST_F(CudaMemoryHistoryTest, TheEnvironmentTurnsItOnForAnUnconfiguredBinary) {
  test::TempDir dir;
  ::setenv("PTPROF_CUDA_MEMORY_HISTORY", "1", 1);
  {
    ProfileSession s(options(dir));
    for (int i = 0; i < 3; ++i) s.step();
    s.stop();
  }
  ::unsetenv("PTPROF_CUDA_MEMORY_HISTORY");
  EXPECT_EQ(g_fake.history, (std::vector<bool>{true, false}));
  // One snapshot per trace written.
  const auto traces = files_ending(dir, ".pt.trace.json");
  ASSERT_FALSE(traces.empty());
  EXPECT_EQ(files_ending(dir, ".memory_snapshot.pickle").size(), traces.size());
}

TEST_F(CudaMemoryHistoryTest, NotAskedNothingIsCalled) {
  test::TempDir dir;
  ProfileSession s(options(dir));
  for (int i = 0; i < 5; ++i) s.step();
  s.stop();
  EXPECT_TRUE(g_fake.history.empty());
  EXPECT_EQ(g_fake.snapshots, 0);
  EXPECT_EQ(g_fake.observer, nullptr);
}

TEST(CudaMemoryHistoryOptions, BadValuesAreErrorsNamingTheField) {
  Options o;
  o.cuda_memory_history.max_oom_dumps = -1;
  try {
    ProfileSession s(o);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_memory_history.max_oom_dumps"), std::string::npos);
  }
}

TEST(CudaMemoryHistoryTrigger, CudaMemoryKeyAsksForAWindow) {
  const auto t = detail::parse_trigger("CUDA_MEMORY=1\n");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->empty);
  EXPECT_EQ(t->cuda_memory, true);
  EXPECT_FALSE(detail::parse_trigger("CUDA_MEMORY=yes\n").ok());
}

}  // namespace
}  // namespace ptprof
