// The flight recorder as a session runs it (issue 27 §1): Options::flight_recorder keeps the
// rings written beside the session's scheduled windows, step() feeds the hang watchdog, and
// stop() ends it; PTPROF_FLIGHT_RECORDER=1 turns it on for a session left unconfigured, and
// for a process with no session at all (what ptprof's static initializer runs).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "ptprof/flight_recorder.h"
#include "ptprof/flight_report.h"
#include "recording/flight/flight_recorder.h"
#include "recording/flight_stage.h"
#include "test_util.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

using test::TempDir;
using namespace std::chrono_literals;

std::vector<std::string> dumps_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".ptflight") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, int> names_in(const Trace& t) {
  std::map<std::string, int> n;
  for (const Event& e : t.events) ++n[std::string(e.name)];
  return n;
}

// Sets environment variables for the test's life, and takes them away again.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      names_.push_back(k);
      ::setenv(k, v, 1);
    }
  }
  ~ScopedEnv() {
    for (const char* k : names_) ::unsetenv(k);
  }

 private:
  std::vector<const char*> names_;
};

Options flight_options(const std::string& dir, std::vector<std::shared_ptr<Trace>>* traces) {
  Options o;
  o.schedule = Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/2, /*repeat=*/1};
  o.on_trace_ready = {callback_handler(
      [traces](const Trace& t) { traces->push_back(std::make_shared<Trace>(t)); })};
  o.flight_recorder.enabled = true;
  o.flight_recorder.dir = dir;
  o.flight_recorder.events_per_thread = 4096;
  o.flight_recorder.crash_dumps = false;  // a test process keeps its own handlers
  o.worker_name = "flight_worker";
  return o;
}

TEST(FlightSession, TheRingsRecordBesideTheScheduledWindowAndAsAloneAfterIt) {
  TempDir dir;
  torch::manual_seed(0);
  test::Mlp model;
  std::vector<std::shared_ptr<Trace>> traces;
  std::string during, after;
  {
    ProfileSession s(flight_options(dir.path(), &traces));
    for (int i = 0; i < 6; ++i) {
      {
        RECORD_USER_SCOPE("flight_step_work");
        test::train_step(model);
      }
      if (i == 2) during = flight_dump("inside the window");
      s.step();
    }
    // Steps 4 and 5 are past the window: only the rings record them.
    {
      RECORD_USER_SCOPE("after_the_window");
      test::train_step(model);
      after = flight_dump("after the window");
    }
    EXPECT_TRUE(s.stop().ok()) << s.stop().message();
  }
  // The scheduled window is what it is without the recorder: steps 2 and 3, their ops.
  ASSERT_EQ(traces.size(), 1u);
  const auto window = names_in(*traces[0]);
  EXPECT_EQ(window.at("flight_step_work"), 2);
  EXPECT_EQ(window.at("aten::addmm"), 4);
  EXPECT_EQ(window.count("after_the_window"), 0u);

  ASSERT_FALSE(during.empty());
  ASSERT_FALSE(after.empty());
  ASSERT_EQ(dumps_in(dir.path()).size(), 2u);
  // A dump holds the last steps, inside a window or not, named by the session's worker.
  const FlightRank last = flight_rank(dumps_in(dir.path())[1]);
  EXPECT_EQ(last.worker, "flight_worker");
  EXPECT_EQ(last.reason, "api");
  EXPECT_EQ(last.message, "after the window");
  EXPECT_EQ(last.last_step, 5);
  EXPECT_EQ(last.position().rfind("after_the_window", 0), 0u) << last.position();
  const auto flown = names_in(detail::read_trace(after));
  EXPECT_EQ(flown.at("flight_step_work"), 6);
  EXPECT_EQ(flown.at("aten::addmm"), 2 * 7);
  EXPECT_EQ(flown.at("ProfilerStep#5"), 1);
  EXPECT_EQ(flown.at("after_the_window"), 1);
  const auto first = names_in(detail::read_trace(during));
  EXPECT_EQ(first.at("flight_step_work"), 3);

  // stop() ended it: nothing more is recorded or dumped.
  EXPECT_FALSE(detail::flight::FlightRecorder::get().running());
  EXPECT_EQ(flight_dump("after stop"), "");
}

TEST(FlightSession, AHangIsDumpedByTheWatchdogWhileTrainingGoesOn) {
  TempDir dir;
  torch::manual_seed(0);
  test::Mlp model;
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = flight_options(dir.path(), &traces);
  o.flight_recorder.hang_seconds = 0.3;
  {
    ProfileSession s(o);
    for (int i = 0; i < 8; ++i) {
      test::train_step(model);
      if (i == 3) {
        RECORD_USER_SCOPE("stalled_here");
        std::this_thread::sleep_for(900ms);  // three times the threshold: one dump
      }
      s.step();
    }
    EXPECT_TRUE(s.stop().ok());
  }
  const auto dumps = dumps_in(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  const FlightRank r = flight_rank(dumps[0]);
  EXPECT_EQ(r.reason, "hang");
  EXPECT_EQ(r.last_step, 2);  // step() ended step 2; step 3 stalled
  EXPECT_EQ(r.position(), "stalled_here");  // its thread's innermost open op
  EXPECT_NE(r.message.find("no step() for"), std::string::npos) << r.message;
  // Training went on: the window (steps 2 and 3) was saved, and every step after the stall ran.
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(names_in(*traces[0]).at("stalled_here"), 1);
}

TEST(FlightSession, DumpInTheTriggerFileAsksForADumpAndNoWindow) {
  TempDir dir;
  std::vector<std::shared_ptr<Trace>> traces;
  Options o = flight_options(dir.path() + "/flight", &traces);
  o.on_demand_only = true;
  o.trigger_file = dir.path() + "/trigger";
  o.trigger_check_interval_ms = 0;
  {
    ProfileSession s(o);
    for (int i = 0; i < 3; ++i) {
      torch::ones({4}).add_(1);
      s.step();
    }
    std::ofstream(o.trigger_file) << "# a dump, please\nDUMP=1\n";
    s.step();  // sees the file; the watchdog writes the dump
    for (int i = 0; i < 300 && dumps_in(dir.path() + "/flight").empty(); ++i) {
      std::this_thread::sleep_for(10ms);
      s.step();
    }
    EXPECT_TRUE(s.stop().ok()) << s.stop().message();
  }
  const auto dumps = dumps_in(dir.path() + "/flight");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(flight_rank(dumps[0]).reason, "trigger_file");
  EXPECT_TRUE(traces.empty());  // DUMP=1 alone arms no window
}

TEST(FlightSession, TheEnvironmentTurnsItOnForAnUnconfiguredSession) {
  TempDir dir;
  ScopedEnv env{{"PTPROF_FLIGHT_RECORDER", "1"},
                {"PTPROF_FLIGHT_RECORDER_HANG_S", "30"},
                {"PTPROF_LOGDIR", dir.path().c_str()}};
  {
    ProfileSession s;  // no Options: the environment's
    torch::ones({4}).add_(1);
    EXPECT_TRUE(detail::flight::FlightRecorder::get().running());
    EXPECT_EQ(detail::flight::FlightRecorder::get().dir(), dir.path() + "/flight");
    EXPECT_FALSE(flight_dump("from the environment").empty());
    s.stop();
  }
  const auto dumps = dumps_in(dir.path() + "/flight");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(flight_rank(dumps[0]).message, "from the environment");
  // The trace handler from PTPROF_LOGDIR wrote the session's trace beside the dumps' folder.
  EXPECT_FALSE(detail::flight::FlightRecorder::get().running());
}

TEST(FlightSession, ABadVariableIsAnErrorNamingIt) {
  ScopedEnv env{{"PTPROF_FLIGHT_RECORDER", "1"}, {"PTPROF_FLIGHT_RECORDER_HANG_S", "soon"}};
  try {
    ProfileSession s;
    FAIL() << "a session started with PTPROF_FLIGHT_RECORDER_HANG_S=soon";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PTPROF_FLIGHT_RECORDER_HANG_S"), std::string::npos)
        << e.what();
  }
  ScopedEnv on{{"PTPROF_FLIGHT_RECORDER", "yes"}};
  EXPECT_THROW(ProfileSession s, Error);
  EXPECT_FALSE(detail::flight::FlightRecorder::get().running());
}

TEST(FlightSession, BadOptionsAreErrorsNamingTheField) {
  Options o;
  o.flight_recorder.enabled = true;
  o.flight_recorder.dir = "unused";
  o.flight_recorder.events_per_thread = 4;
  EXPECT_THROW(ProfileSession s(o), Error);
  o.flight_recorder.events_per_thread = 4096;
  o.flight_recorder.hang_seconds = -1;
  try {
    ProfileSession s(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("flight_recorder.hang_seconds"), std::string::npos);
  }
}

// What the static initializer runs, in a forked child so this process keeps no recorder: with
// the variable it records from the start, named from the launcher's variables, and a session
// that comes later takes it over and hands it back; without it nothing runs.
TEST(FlightSession, AProcessWithNoSessionRecordsFromTheEnvironment) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer cannot start threads in a child forked from a threaded "
                  "process; the normal and ASan builds run this";
#endif
  TempDir dir;
  detail::start_flight_from_environment();  // the variable is unset here: nothing
  EXPECT_FALSE(detail::flight::FlightRecorder::get().running());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("PTPROF_FLIGHT_RECORDER", "1", 1);
    ::setenv("PTPROF_LOGDIR", dir.path().c_str(), 1);
    ::setenv("RANK", "3", 1);
    ::setenv("WORLD_SIZE", "4", 1);
    detail::start_flight_from_environment();
    int rc = detail::flight::FlightRecorder::get().running() ? 0 : 10;
    {
      RECORD_USER_SCOPE("no_session_here");
      torch::ones({4}).mul_(2);
      if (flight_dump("no session").empty()) rc = 11;
    }
    {
      Options o;
      o.worker_name = "session_worker";
      o.flight_recorder.enabled = true;
      o.flight_recorder.dir = dir.path() + "/session";
      o.flight_recorder.crash_dumps = false;
      ProfileSession s(o);
      if (detail::flight::FlightRecorder::get().dir() != dir.path() + "/session") rc = 12;
    }
    // Handed back to the environment's.
    if (detail::flight::FlightRecorder::get().dir() != dir.path() + "/flight") rc = 13;
    if (flight_dump("again").empty()) rc = 14;
    std::_Exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto dumps = dumps_in(dir.path() + "/flight");
  ASSERT_EQ(dumps.size(), 2u);
  const FlightRank r = flight_rank(dumps[0]);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_NE(r.worker.find("_rank3"), std::string::npos) << r.worker;
  EXPECT_EQ(r.position(), "no_session_here");
  EXPECT_GE(names_in(detail::read_trace(r.trace))["aten::mul_"], 1);
  EXPECT_EQ(flight_rank(dumps[1]).message, "again");
}

}  // namespace
}  // namespace ptprof
