// The flight recorder's dumps while the process goes on (src/recording/flight/flight_recorder.h):
// an API dump writes the trace of the last seconds and its digest beside it, named by the
// worker; the watchdog dumps a hang once per stall and keeps watching while training goes on;
// a request from a signal handler is written by the watchdog; a trigger polled by it too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "ptprof/flight_recorder.h"
#include "ptprof/flight_report.h"
#include "recording/flight/flight_recorder.h"
#include "recording/flight/names.h"
#include "recording/flight/rings.h"
#include "test_support.h"
#include "trace/clock.h"
#include "trace/flight_dump.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

namespace fl = detail::flight;
using namespace std::chrono_literals;

std::vector<std::string> dumps_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".ptflight") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

class FlightRecorderTest : public ::testing::Test {
 protected:
  void start(double hang_seconds, std::function<bool()> asked = {}) {
    FlightRecorderOptions o;
    o.enabled = true;
    o.dir = dir_.path();
    o.events_per_thread = 4096;
    o.max_threads = 16;
    o.hang_seconds = hang_seconds;
    o.crash_dumps = false;  // a test process keeps its own handlers
    fl::Identity id;
    id.rank = 0;
    id.world_size = 1;
    id.worker = "host_9_rank0";
    EXPECT_TRUE(fl::FlightRecorder::get().start(o, id, std::move(asked)).empty());
  }
  void TearDown() override { fl::FlightRecorder::get().stop(); }
  // Waits up to 3 s for `n` dumps.
  std::vector<std::string> wait_for_dumps(std::size_t n) {
    for (int i = 0; i < 300 && dumps_in(dir_.path()).size() < n; ++i)
      std::this_thread::sleep_for(10ms);
    return dumps_in(dir_.path());
  }
  test::TempDir dir_;
};

TEST_F(FlightRecorderTest, AnApiDumpWritesTheTraceOfTheLastSecondsAndItsDigest) {
  start(0);
  fl::ThreadRing* r = fl::Rings::get().this_thread(0);
  const uint32_t step = fl::FlightNames::get().append("api_test_step");
  const uint32_t mm = fl::FlightNames::get().append("aten::mm");
  r->push(step, fl::kNoName, -1, fl::kUserScope, 0, 1, detail::now_ticks());
  for (int i = 0; i < 10; ++i) {
    r->push(mm, fl::kNoName, -1, 0, 0, 2 + i, detail::now_ticks());
    r->pop(detail::now_ticks());
  }
  const std::string trace = flight_dump("asked by the test");
  r->pop(detail::now_ticks());
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(std::filesystem::path(trace).filename().string().rfind("host_9_rank0.", 0), 0u);
  const auto dumps = dumps_in(dir_.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(detail::flight_trace_path(dumps[0]), trace);
  const FlightRank rank = flight_rank(dumps[0]);
  EXPECT_EQ(rank.reason, "api");
  EXPECT_EQ(rank.message, "asked by the test");
  EXPECT_EQ(rank.trace, trace);
  EXPECT_EQ(rank.position(), "api_test_step");
  const Trace t = detail::read_trace(trace);
  int mms = 0;
  for (const Event& e : t.events) mms += e.name == "aten::mm";
  EXPECT_EQ(mms, 10);
  EXPECT_EQ(t.metadata.count("ptprof_flight"), 1u);
}

TEST_F(FlightRecorderTest, TheWatchdogDumpsAHangOnceAndTrainingGoesOn) {
  start(0.2);
  fl::FlightRecorder::on_step(1);
  std::this_thread::sleep_for(500ms);  // a stall: one dump, not one per look
  auto dumps = wait_for_dumps(1);
  ASSERT_EQ(dumps.size(), 1u);
  const FlightRank first = flight_rank(dumps[0]);
  EXPECT_EQ(first.reason, "hang");
  EXPECT_EQ(first.last_step, 1);
  EXPECT_NE(first.message.find("no step() for 0."), std::string::npos) << first.message;
  EXPECT_NE(first.message.find("after step 1"), std::string::npos) << first.message;
  EXPECT_GE(first.since_step_ns, 200000000);
  // Training goes on: steps closer together than the threshold bring no dump...
  for (int s = 2; s < 8; ++s) {
    fl::FlightRecorder::on_step(s);
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(dumps_in(dir_.path()).size(), 1u);
  // ...and the next stall its own.
  std::this_thread::sleep_for(500ms);
  dumps = wait_for_dumps(2);
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(flight_rank(dumps[1]).last_step, 7);
}

TEST_F(FlightRecorderTest, ARequestFromASignalHandlerOrATriggerIsWrittenByTheWatchdog) {
  std::atomic<bool> asked{false};
  start(0, [&] { return asked.exchange(false); });
  fl::FlightRecorder::get().request(fl::Reason::kSignal);
  auto dumps = wait_for_dumps(1);
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(flight_rank(dumps[0]).reason, "signal");
  asked = true;
  dumps = wait_for_dumps(2);
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(flight_rank(dumps[1]).reason, "trigger_file");
}

TEST_F(FlightRecorderTest, NoDumpWithoutARecorder) {
  EXPECT_EQ(flight_dump("nobody records"), "");
}

}  // namespace
}  // namespace ptprof
